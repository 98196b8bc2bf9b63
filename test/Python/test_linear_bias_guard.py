"""The weights form's bound on a linear bias' factor, without a GPU.

A kernel of ``linear_bias`` "weights" is exact only while |G(b, h)| stays
within its manifest's ``linear_bias_max_factor`` (past it the kernel writes
zeros), and G comes from captured tensors (ALiBi's slopes) the compiler never
saw. The launcher (fa_t.api._LinearBiasGuard) evaluates G from the score_mod
once per state of the captures and launches a kernel of another form past
the bound. Checked here with the plan cache's fakes (test_plan_cache.py): G
of fa_t.alibi and of a score_mod reading b and h, eager and compiled; the
check's decision and its stamp cache (once for repeated calls, again after
an in-place write); the other form from a kernel folder or the JIT
(tuning linear_bias=vector), and the error when there is none.
"""

import copy
import ctypes
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import fa_t  # noqa: E402
from conftest import EXAMPLE_MANIFEST  # noqa: E402
from fa_t import (KernelConfig, KernelNotFoundError, api, jit, mods, registry,  # noqa: E402
                  torch_ops)
from fa_t.errors import CompileError  # noqa: E402
from fakes import BF16, F32, FakeTensor  # noqa: E402
from fake_runtime import fake_gpu  # noqa: E402

# The example manifest's config: bf16, D = 128, 16 query heads over 4 KV
# heads, causal, with LSE.
B, HQ, HKV, SQ, SKV, D = 2, 16, 4, 300, 500, 128
CONFIG = KernelConfig("bf16", D, D, HQ, HKV, causal=True, lse=True)
BOUND = 1.0
#: The slopes the plans start from: all within the bound.
SLOPES = [0.5 * BOUND * (i + 1) / HQ for i in range(HQ)]


def manifest(form, bound=BOUND):
    """The example manifest with one capture (the slopes) and ``form``'s
    schedule (None: no linear_bias key, as the vector form's)."""
    m = copy.deepcopy(EXAMPLE_MANIFEST)
    m["params"].append({"kind": "ptr", "tensor": "capture0"})
    if form is not None:
        m["schedule"] = {"linear_bias": form}
        if form == "weights":
            m["schedule"]["linear_bias_max_factor"] = bound
    return m


def write_kernel(directory, name, m):
    (directory / f"{name}.json").write_text(json.dumps({**m, "ptx": f"{name}.ptx"}))
    (directory / f"{name}.ptx").write_text("// not loaded")


class Slopes(FakeTensor):
    """A captured tensor on the fake device, standing for ``values`` (a real
    CPU tensor): its version counter is theirs, so in-place writes show."""

    def __init__(self, values, ptr=0x70000):
        super().__init__(tuple(values.shape), F32, ptr=ptr)
        self.values = values

    @property
    def _version(self):
        return self.values._version


@pytest.fixture
def rt(tmp_path, monkeypatch):
    """A fake runtime and device; $FA_T_KERNEL_DIR a folder of a weights
    kernel (a_weights, found first) and a vector one (b_vector)."""
    write_kernel(tmp_path, "a_weights", manifest("weights"))
    write_kernel(tmp_path, "b_vector", manifest(None))
    return fake_gpu(monkeypatch, tmp_path)


def qkv():
    return (FakeTensor((B, HQ, SQ, D), BF16, ptr=0x10000),
            FakeTensor((B, HKV, SKV, D), BF16, ptr=0x20000),
            FakeTensor((B, HKV, SKV, D), BF16, ptr=0x30000))


def call(slopes, factor, **kw):
    out = FakeTensor((B, HQ, SQ, D), BF16, ptr=0x40000)
    lse = FakeTensor((B, HQ, SQ), F32, ptr=0x50000)
    return api._forward(*qkv(), causal=True, window=(-1, -1), diag=None, scale=None,
                        want_lse=True, out=out, lse_out=lse, captures=(slopes,),
                        linear_bias_factor=factor, **kw)


def alibi_factor(values, log):
    """``linear_bias_factor`` of fa_t.alibi(values), evaluated on the CPU
    (the fake device holds no data), each evaluation logged."""
    score_mod = fa_t.alibi(values)

    def factor(b, h, device):
        log.append((b, h))
        return mods.linear_bias_factor(score_mod, b, h, "cpu")
    return factor


def plan():
    (only,) = api._plans.values()
    return only


def launched(rt):
    """The kernel (its manifest's file name) of each launch, by its packed
    parameter block."""
    guard = plan().guard
    kernels = [k for k in (guard.weights, guard.other) if k is not None]
    by_block = {ctypes.addressof(k.patched.params.contents): k.manifest.path.stem
                for k in kernels}
    return [by_block[launch["params"]] for launch in rt.launches]


# ---- G from the score_mod ----------------------------------------------------------

def test_factor_of_alibi():
    slopes = torch.tensor([0.5, 1.5, 0.25, 3.0])
    g = mods.linear_bias_factor(fa_t.alibi(slopes), 2, 4, "cpu")
    assert g.dtype == torch.float32 and g.shape == (2, 4)
    assert torch.equal(g, slopes.expand(2, 4))


def test_factor_of_a_score_mod_of_batch_and_head():
    # s + T[b, h]·(j − i) + c(b, h): the constant terms drop out.
    table = torch.tensor([[0.25, -2.0, 1.0], [4.0, 0.5, -0.75]])

    def score_mod(score, b, h, q_idx, kv_idx):
        return score + table[b, h] * (kv_idx - q_idx) + (b + 1) * 0.5 + h
    assert torch.equal(mods.linear_bias_factor(score_mod, 2, 3, "cpu"), table)

    # One that ignores b broadcasts over the batch.
    def by_head(score, b, h, q_idx, kv_idx):
        return score - torch.exp((h + 1) * -0.6931) * (q_idx - kv_idx)
    g = mods.linear_bias_factor(by_head, 3, 4, "cpu")
    assert g.shape == (3, 4)
    assert torch.allclose(g[0], torch.exp(torch.arange(1, 5) * -0.6931))
    assert torch.equal(g[0], g[2])


def test_factor_of_compiled_modifications():
    # Under torch.compile the op's CUDA implementation has the traced graph
    # and this call's captures, not the user's function: its factor binds them.
    table = torch.tensor([[0.25, -2.0, 1.0], [4.0, 0.5, -0.75]])

    def score_mod(score, b, h, q_idx, kv_idx):
        return score + table[b, h] * (kv_idx - q_idx)
    key, captures = torch_ops.mods_captures(score_mod, None, None)
    factor = torch_ops.registered(key).linear_bias_factor(tuple(captures))
    assert torch.equal(factor(2, 3, "cpu"), table)
    assert torch.equal(torch_ops.registered(key).linear_bias_factor([table * 2])(2, 3, "cpu"),
                       table * 2), "the call's captures, not the traced ones"
    key, _ = torch_ops.mods_captures(None, fa_t.prefix_lm(4), None)
    assert torch_ops.registered(key).linear_bias_factor([]) is None, "no score_mod"


def test_eager_and_compiled_calls_pass_the_factor(monkeypatch):
    # Both CUDA paths give _forward the factor of their score_mod.
    seen = []

    def forward(*args, **kw):
        seen.append(kw)
        return None, None
    monkeypatch.setattr(api, "_forward", forward)
    slopes = torch.tensor(SLOPES)
    fa_t.attention(*qkv(), causal=True, score_mod=fa_t.alibi(slopes))
    key, captures = torch_ops.mods_captures(fa_t.alibi(slopes), None, None)
    torch_ops.attention_forward(*qkv(), causal=True, scale=0.1, diag=SKV - SQ,
                                modifications=torch_ops.registered(key), captures=captures)
    fa_t.attention(*qkv(), causal=True, mask_mod=fa_t.prefix_lm(4))
    eager, compiled, no_score = (kw["linear_bias_factor"] for kw in seen)
    for factor in (eager, compiled):
        assert torch.equal(factor(B, HQ, "cpu"), slopes.expand(B, HQ))
    assert no_score is None


# ---- the check and its stamp cache ---------------------------------------------------

def test_within_the_bound_the_weights_kernel_runs_checked_once(rt):
    values, log = torch.tensor(SLOPES), []
    slopes = Slopes(values)
    for _ in range(3):
        call(slopes, alibi_factor(values, log))
    assert log == [(B, HQ)], "evaluated once for one state of the captures"
    assert launched(rt) == ["a_weights"] * 3
    assert plan().guard.other is None, "no other kernel resolved"
    # Written in place: evaluated again, and past the bound the vector form
    # runs (resolved once), until the next write.
    values.mul_(4)
    for _ in range(2):
        call(slopes, alibi_factor(values, log))
    assert len(log) == 2 and launched(rt)[3:] == ["b_vector"] * 2
    assert rt.loads == 2
    values.div_(4)
    call(slopes, alibi_factor(values, log))
    assert len(log) == 3 and launched(rt)[-1] == "a_weights"
    # Another tensor of the same shape (the same plan): checked anew.
    other = torch.tensor(SLOPES)
    call(Slopes(other, 0x71000), alibi_factor(other, log))
    assert len(log) == 4 and launched(rt)[-1] == "a_weights"
    assert rt.launches[-1]["patched"][-1] == (10, 1, 0x71000)
    assert len(api._plans) == 1


@pytest.mark.parametrize("worst, kernel", [
    (BOUND * (1 - 2.0 ** -19), "a_weights"),
    (BOUND, "b_vector"),          # at the bound: the f32 guard's rounding margin
    (-1.5 * BOUND, "b_vector"),   # |G| counts, not G
    (float("nan"), "b_vector"),
    (float("inf"), "b_vector"),
])
def test_the_bound_is_checked_with_a_margin(rt, worst, kernel):
    values, log = torch.tensor(SLOPES), []
    values[7] = worst
    call(Slopes(values), alibi_factor(values, log))
    assert launched(rt) == [kernel]


def test_no_factor_runs_the_other_form_unchecked(rt):
    # A caller that passes regions and no factor (a raw regions text): the
    # weights kernel is never launched unchecked.
    values = torch.tensor(SLOPES)
    call(Slopes(values), None)
    call(Slopes(values), None)
    assert launched(rt) == ["b_vector"] * 2
    assert plan().guard.evaluations == 0


def test_a_change_under_graph_capture_is_refused(rt, monkeypatch):
    values, log = torch.tensor(SLOPES), []
    slopes = Slopes(values)
    call(slopes, alibi_factor(values, log))
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    call(slopes, alibi_factor(values, log))  # unchanged: no sync needed
    values.mul_(2)
    with pytest.raises(RuntimeError, match=r"exact only for a linear bias factor \|G\| <= 1.0, "
                                           r"checked when the captured tensors change.*call "
                                           r"it once before CUDA graph capture"):
        call(slopes, alibi_factor(values, log))
    assert len(rt.launches) == 2 and len(log) == 1


def test_a_plan_of_another_form_has_no_guard(rt, tmp_path):
    (tmp_path / "a_weights.json").unlink()
    values, log = torch.tensor(SLOPES) * 10, []
    call(Slopes(values), alibi_factor(values, log))
    assert plan().guard is None and log == [], "nothing to check"


# ---- the other form: kernel folders and the JIT --------------------------------------

def test_find_kernel_skips_weights_kernels(tmp_path):
    write_kernel(tmp_path, "a_weights", manifest("weights"))
    write_kernel(tmp_path, "c_mma", manifest("mma"))
    assert registry.find_kernel(CONFIG, tmp_path, allow_jit=False).path.stem == "a_weights"
    found = registry.find_kernel(CONFIG, tmp_path, allow_jit=False, allow_weights=False)
    assert found.path.stem == "c_mma"
    (tmp_path / "c_mma.json").unlink()
    with pytest.raises(KernelNotFoundError, match=r"in kernel directories: .* \(1 kernel\(s\) "
                                                  r"of linear_bias \"weights\" skipped"):
        registry.find_kernel(CONFIG, tmp_path, allow_jit=False, allow_weights=False)


def test_only_weights_kernels_and_no_compiler(rt, tmp_path, monkeypatch):
    (tmp_path / "b_vector.json").unlink()
    monkeypatch.setattr(jit, "find_fat_opt", lambda: None)
    values, log = torch.tensor(SLOPES), []
    values[5] = -3.0
    with pytest.raises(KernelNotFoundError) as e:
        call(Slopes(values), alibi_factor(values, log))
    message = str(e.value)
    assert "|G(b, h)| <= 1" in message and "|G| = 3 at (b=0, h=5)" in message
    assert "linear_bias=vector" in message and "FA_T_OPT" in message
    assert "1 kernel(s) of linear_bias \"weights\" skipped" in message
    assert rt.launches == []
    # Back within the bound the weights kernel serves the same plan.
    values[5] = 0.5
    call(Slopes(values), alibi_factor(values, log))
    assert launched(rt) == ["a_weights"]


def test_only_weights_kernels_compile_the_vector_form(rt, tmp_path, monkeypatch):
    # The JIT compiles the other form with tuning linear_bias=vector (on top
    # of the default tuning: a cache entry of its own).
    (tmp_path / "b_vector.json").unlink()
    vector = tmp_path / "jit"
    vector.mkdir()
    write_kernel(vector, "v", manifest("vector"))
    asked = []

    def compile_kernel(config, fat_opt=None, seq_len=None, regions="", tuning=None):
        asked.append((config, seq_len, regions, tuning))
        return registry.load_manifest(vector / "v.json")
    monkeypatch.setattr(jit, "find_fat_opt", lambda: "fa-t-opt")
    monkeypatch.setattr(jit, "compile_kernel", compile_kernel)
    values, log = torch.tensor(SLOPES), []
    values[0] = 2.0
    call(Slopes(values), alibi_factor(values, log))
    assert asked == [(CONFIG, SKV, "", {"linear_bias": "vector"})]
    assert plan().guard.other.manifest.path.stem == "v"
    # A compiler that ignores the option is never trusted with the launch.
    write_kernel(vector, "v", manifest("weights"))
    with pytest.raises(CompileError, match=r"fa-t-opt compiled linear_bias \"weights\" with "
                                           r"tuning \{'linear_bias': 'vector'\}"):
        registry.find_kernel(CONFIG, tmp_path, seq_len=SKV, allow_weights=False)


def test_vector_tuning_is_its_own_jit_kernel(tmp_path, monkeypatch):
    # compile_kernel's tuning reaches the command line (linear-bias=vector)
    # and the cache key.
    commands = []

    def run(command, **kw):
        commands.append(command)
        write_kernel(Path(command[-1].split("output-dir=")[1]), "k", manifest("vector"))
        return type("Done", (), {"returncode": 0, "stderr": ""})()
    monkeypatch.setattr(jit.subprocess, "run", run)
    monkeypatch.setattr(jit, "compiler_version", lambda fat_opt: "fa-t test")
    monkeypatch.setenv("FA_T_CACHE_DIR", str(tmp_path / "cache"))
    m = jit.compile_kernel(CONFIG, "fa-t-opt", 500, "", {"linear_bias": "vector"})
    assert "linear-bias=vector" in commands[0][-1] and "seq-len=512" in commands[0][-1]
    key = jit.cache_key(CONFIG, {"seq_len": 512, "linear_bias": "vector"}, "fa-t test")
    assert m.path.parent.name == key
    assert key != jit.cache_key(CONFIG, {"seq_len": 512}, "fa-t test")
