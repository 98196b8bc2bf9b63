"""fa_t.attention with score / mask modifications under torch.compile (CPU).

A call with score_mod / mask_mod / block_mask compiles into one
``fa_t::attention_mods_fwd`` node with no graph break; the tensors its
functions read (slopes, document ids, a bias table, the block mask's ranges)
are graph inputs of that node, never constants, so new values reach the
compiled graph, and another function or closure value is another trace.
Results are compared with eager fa_t.attention and the float64 reference.
The op's CUDA implementation is the eager cached path (test_gpu_mods.py).
Needs torch.
"""

import shutil

import pytest

torch = pytest.importorskip("torch")

import torch._dynamo.testing  # noqa: E402

import fa_t  # noqa: E402
from fa_t import torch_ops  # noqa: E402
from fa_t.reference import attention_reference  # noqa: E402

#: dynamo before torch 2.15 cannot read the closure of a function made inside
#: the compiled frame, nor pin a closure float that changed between calls
#: (measured on 2.11, the GPU machine's torch); those calls fall back to
#: eager without fullgraph.
OLD_DYNAMO = pytest.mark.skipif(
    tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]) < (2, 15),
    reason="dynamo < 2.15 cannot read closures made in the compiled frame")

OP = torch.ops.fa_t.attention_mods_fwd.default
B, H, S, D = 2, 4, 70, 16


def inputs(seed=0, s=S):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(B, H, s, D, generator=g, dtype=torch.float64) for _ in range(3))


def documents(seed):
    g = torch.Generator().manual_seed(seed)
    return torch.sort(torch.randint(0, 5, (S,), generator=g)).values.int()


SLOPES = torch.tensor([2.0 ** (-8 * (h + 1) / H) for h in range(H)])
#: A global table a module-level score_mod reads (a graph input too).
BIAS = torch.linspace(-1.0, 1.0, 2 * S)
#: A global number one reads (in its regions text: dynamo guards on it).
CAP = 2.0


def relative_bias(score, b, h, q_idx, kv_idx):
    return score + BIAS[q_idx - kv_idx + S]


def global_cap(score, b, h, q_idx, kv_idx):
    return torch.tanh(score / CAP) * CAP


def user_mask(b, h, q_idx, kv_idx):
    return (kv_idx % 3 != 1) | (h == 0)


class Recorder:
    """A backend that keeps dynamo's graphs and runs them through AOT autograd."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return torch._dynamo.backends.common.aot_autograd(
            fw_compiler=lambda g, _: g)(gm, example_inputs)

    def op_nodes(self):
        return [n for gm in self.graphs for n in gm.graph.nodes
                if n.op == "call_function" and n.target in (OP, torch.ops.fa_t.attention_mods_fwd)]


def sources(node):
    """The graph nodes without inputs ``node`` is computed from."""
    inputs = node.all_input_nodes
    return {node} if not inputs else set().union(*map(sources, inputs))


def case(name, causal, docs=None):
    """fa_t.attention keyword arguments of a case (its doc-id tensor ``docs``)."""
    if name == "softcap":
        return dict(score_mod=fa_t.softcap(2.0))
    if name == "alibi":
        return dict(score_mod=fa_t.alibi(SLOPES))
    if name == "blocks":  # a block mask of causal ranges alone, no mask_mod
        return dict(score_mod=global_cap,
                    block_mask=fa_t.block_mask(None, B, None, S, S, causal=causal,
                                               device="cpu"))
    if name == "document-blocks":
        mask = fa_t.document_mask(docs)
        return dict(score_mod=relative_bias, mask_mod=mask,
                    block_mask=fa_t.block_mask(mask, None, None, S, S, causal=causal,
                                               device="cpu"))
    return dict(score_mod=lambda s, b, h, q, k: torch.where(q >= k, s * (b + 1), s - 1.0),
                mask_mod=user_mask)


def check(compiled_out, eager_out, ref_out):
    torch.testing.assert_close(compiled_out, eager_out, rtol=0, atol=1e-12)
    torch.testing.assert_close(compiled_out, ref_out, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("name", ["softcap", "alibi", "blocks", "document-blocks", "user"])
def test_compiled_mods_match_eager_and_reference(name, causal):
    torch._dynamo.reset()
    kwargs = case(name, causal, documents(1))
    q, k, v = inputs()
    recorder = Recorder()

    def f(q, k, v):
        return fa_t.attention(q, k, v, causal=causal, **kwargs) * 2

    with torch.no_grad():
        explanation = torch._dynamo.explain(f)(q, k, v)
        assert explanation.graph_break_count == 0, explanation.break_reasons
        assert explanation.graph_count == 1
        got = torch.compile(f, fullgraph=True, backend=recorder)(q, k, v)
        ref, _ = attention_reference(q, k, v, causal=causal, **kwargs)
        check(got, f(q, k, v), 2 * ref)
    # One opaque node; the tensors its functions read are graph inputs.
    (node,) = recorder.op_nodes()
    captures = node.args[3]
    assert all(n.op == "placeholder" for c in captures for n in sources(c))
    assert len(captures) == {"softcap": 0, "alibi": 1, "blocks": 1, "document-blocks": 3,
                             "user": 0}[name]
    assert not any(n.op == "get_attr" for n in recorder.graphs[0].graph.nodes)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_new_values_of_captured_tensors_reach_the_graph(backend):
    torch._dynamo.reset()
    docs, slopes = documents(2), SLOPES.clone()
    mask = fa_t.document_mask(docs)     # holds docs itself (already int32, contiguous)
    bm = fa_t.block_mask(mask, None, None, S, S, causal=True, device="cpu")
    kwargs = dict(score_mod=fa_t.alibi(slopes), mask_mod=mask, block_mask=bm, causal=True)
    q, k, v = inputs(3)
    counter = torch._dynamo.testing.CompileCounterWithBackend(backend)

    def f(q, k, v):
        return fa_t.attention(q, k, v, **kwargs)

    compiled = torch.compile(f, fullgraph=True, backend=counter)
    with torch.no_grad():
        before = compiled(q, k, v)
        check(before, f(q, k, v), attention_reference(q, k, v, **kwargs)[0])
        # New documents, their block ranges and slopes, written in place.
        docs.copy_(documents(4))
        bm.ranges.copy_(fa_t.block_mask(mask, None, None, S, S, causal=True,
                                        device="cpu").ranges)
        slopes.mul_(3.0)
        after = compiled(q, k, v)
        check(after, f(q, k, v), attention_reference(q, k, v, **kwargs)[0])
    assert not torch.allclose(after, before)
    assert counter.frame_count == 1


def test_globals_the_functions_read():
    # A global tensor is a graph input; a global number is guarded on.
    global CAP
    torch._dynamo.reset()
    q, k, v = inputs(4)
    recorder = Recorder()

    @torch.compile(fullgraph=True, backend=recorder)
    def f(q, k, v, score_mod):
        return fa_t.attention(q, k, v, score_mod=score_mod)

    with torch.no_grad():
        before = f(q, k, v, relative_bias)
        BIAS.mul_(-1.0)
        try:
            after = f(q, k, v, relative_bias)
            check(after, fa_t.attention(q, k, v, score_mod=relative_bias),
                  attention_reference(q, k, v, score_mod=relative_bias)[0])
        finally:
            BIAS.mul_(-1.0)
        assert not torch.allclose(after, before)
        (node,) = recorder.op_nodes()
        assert [c.op for c in node.args[3]] == ["placeholder"]
        before = f(q, k, v, global_cap)
        CAP = 0.5
        try:
            after = f(q, k, v, global_cap)
            check(after, fa_t.attention(q, k, v, score_mod=global_cap),
                  attention_reference(q, k, v, score_mod=global_cap)[0])
        finally:
            CAP = 2.0
    assert not torch.allclose(after, before)


def test_eager_calls_do_not_take_the_op(monkeypatch):
    def refuse(*args):
        raise AssertionError("eager call through fa_t::attention_mods_fwd")
    monkeypatch.setattr(torch_ops, "attention_mods_fwd", refuse)
    q, k, v = inputs(17)
    kwargs = case("document-blocks", True, documents(18))
    torch.testing.assert_close(fa_t.attention(q, k, v, causal=True, **kwargs),
                               attention_reference(q, k, v, causal=True, **kwargs)[0])


@OLD_DYNAMO
def test_functions_are_told_apart():
    # The function is an argument: another one (code or closure value) is a
    # new trace with its own registration, the same one reuses its graph.
    torch._dynamo.reset()
    q, k, v = inputs(5)
    counter = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")

    @torch.compile(fullgraph=True, backend=counter)
    def f(q, k, v, score_mod):
        return fa_t.attention(q, k, v, score_mod=score_mod)

    score_mods = [fa_t.softcap(2.0), fa_t.softcap(5.0), fa_t.alibi(SLOPES), relative_bias,
                  fa_t.softcap(0.5)]
    outs = []
    with torch.no_grad():
        for score_mod in score_mods:
            outs.append(f(q, k, v, score_mod))
            check(outs[-1], fa_t.attention(q, k, v, score_mod=score_mod),
                  attention_reference(q, k, v, score_mod=score_mod)[0])
        compiles = counter.frame_count
        assert torch.equal(f(q, k, v, fa_t.softcap(2.0)), outs[0])
    assert counter.frame_count == compiles
    for i in range(len(score_mods)):
        for j in range(i):
            assert not torch.allclose(outs[i], outs[j]), (i, j)


@OLD_DYNAMO
def test_functions_made_inside_the_compiled_code():
    # Closures the compiled function creates itself hold graph values.
    torch._dynamo.reset()
    q, k, v = inputs(6)
    recorder = Recorder()

    @torch.compile(fullgraph=True, backend=recorder)
    def f(q, k, v, slopes, docs, cap):
        o = fa_t.attention(q, k, v, score_mod=fa_t.alibi(slopes * 2),
                           mask_mod=fa_t.document_mask(docs))
        return o + fa_t.attention(q, k, v, causal=True, score_mod=fa_t.softcap(cap))

    def eager(slopes, docs, cap):
        return (fa_t.attention(q, k, v, score_mod=fa_t.alibi(slopes * 2),
                               mask_mod=fa_t.document_mask(docs))
                + fa_t.attention(q, k, v, causal=True, score_mod=fa_t.softcap(cap)))

    with torch.no_grad():
        for seed, cap in ((7, 2.0), (8, 3.0)):
            slopes, docs = torch.rand(H), documents(seed).long()
            torch.testing.assert_close(f(q, k, v, slopes, docs, cap), eager(slopes, docs, cap),
                                       rtol=0, atol=1e-12)
    assert len(recorder.op_nodes()) >= 2


@pytest.mark.parametrize("causal", [False, True])
def test_compiled_lse(causal):
    torch._dynamo.reset()
    docs = documents(9)
    kwargs = case("document-blocks", causal, docs)
    q, k, v = inputs(10)

    @torch.compile(fullgraph=True, backend="aot_eager")
    def f(q, k, v):
        return fa_t.attention(q, k, v, causal=causal, return_lse=True, **kwargs)

    with torch.no_grad():
        o, lse = f(q, k, v)
        eager_o, eager_lse = fa_t.attention(q, k, v, causal=causal, return_lse=True, **kwargs)
        ref_o, ref_lse = attention_reference(q, k, v, causal=causal, **kwargs)
    assert lse.dtype == torch.float32 and lse.shape == (B, H, S)
    check(o, eager_o, ref_o)
    assert torch.equal(lse, eager_lse)
    finite = torch.isfinite(ref_lse)
    assert torch.equal(finite, torch.isfinite(lse))
    torch.testing.assert_close(lse[finite].double(), ref_lse[finite], rtol=1e-6, atol=1e-6)


@OLD_DYNAMO
def test_dynamic_shapes():
    torch._dynamo.reset()

    @torch.compile(fullgraph=True, backend="aot_eager", dynamic=True)
    def f(q, k, v):
        return fa_t.attention(q, k, v, causal=True, score_mod=fa_t.alibi(SLOPES),
                              mask_mod=user_mask)

    with torch.no_grad():
        for s in (33, 70):
            q, k, v = inputs(11, s)
            check(f(q, k, v), fa_t.attention(q, k, v, causal=True, score_mod=fa_t.alibi(SLOPES),
                                             mask_mod=user_mask),
                  attention_reference(q, k, v, causal=True, score_mod=fa_t.alibi(SLOPES),
                                      mask_mod=user_mask)[0])


def test_unsupported_functions_are_refused_while_compiling():
    torch._dynamo.reset()
    q, k, v = inputs()

    def f(q, k, v):
        return fa_t.attention(q, k, v, mask_mod=lambda b, h, qi, ki: torch.sin(qi + ki) > 0)

    with pytest.raises(NotImplementedError, match="mask_mod: sin is not supported"):
        f(q, k, v)
    # fullgraph: dynamo reports the exception the call raises, message included ...
    with pytest.raises(torch._dynamo.exc.Unsupported) as compiled:
        torch.compile(f, fullgraph=True, backend="eager")(q, k, v)
    assert "NotImplementedError" in str(compiled.value)
    assert "mask_mod: sin is not supported" in str(compiled.value)
    # ... without it, the frame falls back to eager, which raises it.
    with pytest.raises(NotImplementedError, match="mask_mod: sin is not supported"):
        torch.compile(f, backend="eager")(q, k, v)
    with pytest.raises(torch._dynamo.exc.Unsupported, match=r"expected score_mod to be callable"):
        torch.compile(lambda q: fa_t.attention(q, q, q, score_mod=3), fullgraph=True,
                      backend="eager")(q)
    # A closure over what is neither a tensor, a number, a string nor a function.
    options = {"cap": 2.0}

    def scaled(s, b, h, qi, ki):
        return s * options["cap"]
    with pytest.raises(torch._dynamo.exc.Unsupported,
                       match="may read tensors, numbers, strings and functions"):
        torch.compile(lambda q: fa_t.attention(q, q, q, score_mod=scaled), fullgraph=True,
                      backend="eager")(q)


def test_document_runs_under_compile():
    # runs=True made inside the compiled code: no look at the ids (the
    # promise is taken), the bounds computed in the graph.
    torch._dynamo.reset()
    q, k, v = inputs(21)
    docs = documents(22)

    def f(q, k, v, docs):
        return fa_t.attention(q, k, v, causal=True,
                              mask_mod=fa_t.document_mask(docs, runs=True))

    with torch.no_grad():
        got = torch.compile(f, fullgraph=True, backend="aot_eager")(q, k, v, docs)
        ref, _ = attention_reference(q, k, v, causal=True, mask_mod=fa_t.document_mask(docs))
        check(got, f(q, k, v, docs), ref)


def test_opcheck():
    q, k, v = (t.float() for t in inputs(12))
    docs = documents(13)
    mask = fa_t.document_mask(docs)
    bm = fa_t.block_mask(mask, B, None, S, S, causal=True, device="cpu")
    # mods_captures runs eagerly too: the op's key and captures.
    key, captures = torch_ops.mods_captures(fa_t.alibi(SLOPES), mask, bm.ranges)
    assert [c.dtype for c in captures] == [torch.float32, torch.int32, torch.int32]
    assert captures[-1] is bm.ranges
    for return_lse in (True, False):
        torch.library.opcheck(OP, (q, k, v, captures, key, True, 0.3, -1, -1, 0, return_lse))
    with pytest.raises(RuntimeError, match="no modifications are registered under 'nope'"):
        OP(q, k, v, captures, "nope", True, 0.3, -1, -1, 0, False)


@OLD_DYNAMO
@pytest.mark.skipif(not (shutil.which("g++") or shutil.which("clang++")),
                    reason="inductor needs a C++ compiler on the CPU")
def test_inductor():
    torch._dynamo.reset()
    docs = documents(14)
    kwargs = case("document-blocks", True, docs)
    q, k, v = (t.float() for t in inputs(15))

    def f(q, k, v):
        o = fa_t.attention(q * 1.0, k, v, causal=True, **kwargs)
        return o + fa_t.attention(q, k, v, score_mod=fa_t.softcap(2.0))

    compiled = torch.compile(f, fullgraph=True, backend="inductor")
    with torch.no_grad():
        torch.testing.assert_close(compiled(q, k, v), f(q, k, v), rtol=1e-5, atol=1e-5)
        docs.copy_(documents(16))
        kwargs["block_mask"].ranges.copy_(case("document-blocks", True, docs)["block_mask"].ranges)
        torch.testing.assert_close(compiled(q, k, v), f(q, k, v), rtol=1e-5, atol=1e-5)


def test_hand_built_full_ranges_need_an_eager_check():
    # Under compile the table's data is not readable, so full ranges fa-t did
    # not compute are refused until one eager call has checked them.
    torch._dynamo.reset()
    docs = documents(19)
    mask = fa_t.document_mask(docs)
    built = fa_t.block_mask(mask, None, None, S, S, causal=True, device="cpu")
    hand = fa_t.mods.BlockMask(built.ranges.clone(), None, None, S, S, True, mask)
    q, k, v = inputs(20)

    def f(q, k, v):
        return fa_t.attention(q, k, v, causal=True, mask_mod=mask, block_mask=hand)

    compiled = torch.compile(f, backend="aot_eager")
    with torch.no_grad():
        with pytest.raises(Exception, match="must be built by fa_t.block_mask"):
            torch.compile(f, fullgraph=True, backend="aot_eager")(q, k, v)
        eager = f(q, k, v)  # checks the table against mask
        torch._dynamo.reset()
        torch.testing.assert_close(compiled(q, k, v), eager, rtol=0, atol=1e-12)
