"""Manifest parsing and validation (docs/kernel-abi.md). CPU only."""

import json

import pytest

from fa_t import KernelConfig, ManifestError, load_manifest, parse_manifest


def test_example_manifest_parses(manifest_dict):
    m = parse_manifest(manifest_dict)
    assert m.entry == "fat_attention_fwd"
    assert m.block == (384, 1, 1)
    assert [(g.symbol, g.ceildiv) for g in m.grid] == [("Sq", 128), ("Hq", 1), ("B", 1)]
    assert m.config == KernelConfig("bf16", 128, 128, 16, 4, "bhsd", True, (-1, -1), True)
    assert m.tuning == {"block_m": 128, "block_n": 128, "stages": 2}
    assert m.tensor_maps["q"].axes == (3, 2, 1, 0)
    assert m.tensor_maps["v"].dims == ("Dv", "Skv", "Hkv", "B")
    assert [p.kind for p in m.params][:4] == ["tensor_map"] * 3 + ["ptr"]
    assert m.params[4].dim == 0


def test_load_manifest_resolves_ptx(tmp_path, manifest_dict):
    (tmp_path / "k.json").write_text(json.dumps(manifest_dict))
    with pytest.raises(ManifestError, match=r"ptx: the file .*fat_attention_fwd_1a2b3c.ptx "
                                            r"does not exist"):
        load_manifest(tmp_path / "k.json")
    (tmp_path / manifest_dict["ptx"]).write_text("// ptx")
    m = load_manifest(tmp_path / "k.json")
    assert m.ptx_path == (tmp_path / manifest_dict["ptx"]).resolve()


def test_load_manifest_bad_json(tmp_path):
    (tmp_path / "k.json").write_text("{not json")
    with pytest.raises(ManifestError, match=r"k.json: not valid JSON"):
        load_manifest(tmp_path / "k.json")
    with pytest.raises(ManifestError, match=r"cannot read manifest .*missing.json"):
        load_manifest(tmp_path / "missing.json")


def _break(d, path, value):
    """Sets d[path...] = value; value DELETE removes the key."""
    *head, last = path
    for key in head:
        d = d[key]
    if value is DELETE:
        del d[last]
    else:
        d[last] = value


DELETE = object()

# (path into the manifest, new value, expected message fragment)
BROKEN = [
    (["format"], "other", r"format: expected 'fa-t-kernel', got 'other'"),
    (["version"], 2, r"version: this fa_t reads manifest version 1, got 2"),
    (["version"], "1", r"version: expected int, got '1'"),
    (["entry"], DELETE, r"entry: missing"),
    (["entry"], "", r"entry: is empty"),
    (["ptx"], "../x.ptx", r"ptx: expected a file name in the manifest's directory"),
    (["config", "dtype"], "f32", r"config.dtype: expected one of bf16, f16, got 'f32'"),
    (["config", "head_dim"], True, r"config.head_dim: expected int, got True"),
    (["config", "num_heads_kv"], 6, r"expected num_heads_q \(16\) to be a multiple of "
                                    r"num_heads_kv \(6\)"),
    (["config", "window"], [-2, 0], r"config.window: expected \[left, right\]"),
    (["config", "layout"], "sbhd", r"config.layout: expected one of bhsd, bshd"),
    (["config", "colour"], 1, r"config: unknown key\(s\) colour"),
    (["config", "block_m"], 0, r"config.block_m: expected a positive integer, got 0"),
    (["config", "o_store"], "tma", r"config.o_store: expected one of staged, direct, got 'tma'"),
    (["config", "pv_wait"], "soon", r"config.pv_wait: expected one of late, early, got 'soon'"),
    (["block"], [384, 1], r"block: expected 3 entries, got 2"),
    (["block"], [2048, 1, 1], r"block: \[2048, 1, 1\] is 2048 threads, above the CUDA limit"),
    (["block", 1], 0, r"block\[1\]: expected an integer in >= 1, got 0"),
    (["grid"], [], r"grid: expected 1 to 3 entries, got 0"),
    (["grid", 0, "symbol"], "Sk", r"grid\[0\].symbol: expected one of B, Hq, .*got 'Sk'"),
    (["grid", 0, "ceildiv"], 0, r"grid\[0\].ceildiv: expected a positive integer, got 0"),
    (["grid", 0, "times"], ["Hq", "tiles"], r"grid\[0\].times\[1\]: expected one of B, .*got 'tiles'"),
    (["grid", 0, "times"], "Hq", r"grid\[0\].times: expected list, got 'Hq'"),
    (["grid", 0, "max"], 0, r"grid\[0\].max: expected a positive integer, got 0"),
    (["schedule"], {"forced": "yes"}, r"schedule.forced: expected bool, got 'yes'"),
    (["schedule"], {"linear_bias": 1}, r"schedule.linear_bias: expected str, got 1"),
    (["schedule"], {"linear_bias": "weights"},
     r"schedule.linear_bias_max_factor: missing \(a kernel of linear_bias \"weights\" is "
     r"exact only up to a bound on \|G\|"),
    (["schedule"], {"linear_bias": "weights", "linear_bias_max_factor": -1.1},
     r"schedule.linear_bias_max_factor: expected a positive finite number, got -1.1"),
    (["schedule"], {"linear_bias": "weights", "linear_bias_max_factor": 0},
     r"schedule.linear_bias_max_factor: expected a positive finite number, got 0"),
    (["schedule"], {"linear_bias": "weights", "linear_bias_max_factor": float("nan")},
     r"schedule.linear_bias_max_factor: expected a positive finite number, got nan"),
    (["schedule"], {"linear_bias": "weights", "linear_bias_max_factor": float("inf")},
     r"schedule.linear_bias_max_factor: expected a positive finite number, got inf"),
    (["schedule"], {"linear_bias": "weights", "linear_bias_max_factor": True},
     r"schedule.linear_bias_max_factor: expected a positive finite number, got True"),
    (["schedule"], {"linear_bias": "weights", "linear_bias_max_factor": "1.1"},
     r"schedule.linear_bias_max_factor: expected a positive finite number, got '1.1'"),
    (["dynamic_smem_bytes"], -1, r"dynamic_smem_bytes: expected >= 0, got -1"),
    (["tensor_maps", 0, "tensor"], "x", r"tensor_maps\[0\].tensor: expected one of q, k, v"),
    (["tensor_maps", 1, "tensor"], "q", r"tensor_maps\[1\].tensor: a second map for tensor 'q'"),
    (["tensor_maps", 0, "dims"], ["D", "Sq", "Hq"],
     r"tensor_maps\[0\].dims: expected 4 entries \(one per dimension of q\), got 3"),
    (["tensor_maps", 0, "dims", 1], "D", r"tensor_maps\[0\].dims\[1\]: 'D' names a dimension "
                                         r"already listed"),
    (["tensor_maps", 0, "dims", 0], "E", r"tensor_maps\[0\].dims\[0\]: expected one of B, Hq"),
    (["tensor_maps", 0, "box", 1], 257, r"tensor_maps\[0\].box\[1\]: expected an integer in "
                                        r"1..256, got 257"),
    (["tensor_maps", 0, "box"], [64, 128], r"tensor_maps\[0\].box: expected 4 entries, got 2"),
    (["tensor_maps", 0, "swizzle"], "256B", r"tensor_maps\[0\].swizzle: expected one of none, "
                                            r"32B, 64B, 128B, got '256B'"),
    (["tensor_maps", 0, "oob_fill"], "one", r"tensor_maps\[0\].oob_fill: expected one of zero, nan"),
    (["tensor_maps", 0, "interleave"], "16B", r"tensor_maps\[0\].interleave: expected one of none"),
    (["params", 0, "kind"], "tensor", r"params\[0\].kind: expected one of tensor_map, ptr"),
    (["params", 4, "dim"], 4, r"params\[4\].dim: expected 0..3 \(a logical dimension of o\), "
                              r"got 4"),
    (["params", 6, "symbol"], "scale", r"params\[6\].symbol: expected one of B, Hq, .*"
                                       r"got 'scale'"),
    (["params", 9, "symbol"], "Sq", r"params\[9\].symbol: expected one of scale, scale_log2e"),
    (["params", 8], {"kind": "i32", "symbol": "Sq"},
     r"params: the config has a mask but no parameter passes 'diag'"),
    (["params", 9], {"kind": "i32", "symbol": "B"},
     r"params: no parameter passes the softmax scale"),
    (["params", 5], {"kind": "i32", "symbol": "B"},
     r"params: config.lse is true but no parameter passes tensor 'lse'"),
    (["params", 3], {"kind": "ptr", "tensor": "lse"}, r"params: no parameter passes tensor 'o'"),
    (["params", 0], {"kind": "ptr", "tensor": "q"},
     r"tensor_maps: tensor 'q' has a map but no tensor_map parameter"),
]


def test_linear_bias_schedule(manifest_dict):
    # The weights form's bound on |G| (its own check of the slopes is the
    # launcher's: fa_t.api._LinearBiasGuard); other forms carry none.
    assert parse_manifest(manifest_dict).linear_bias is None
    manifest_dict["schedule"] = {"linear_bias": "weights", "linear_bias_max_factor": 1.11}
    m = parse_manifest(manifest_dict)
    assert (m.linear_bias, m.linear_bias_max_factor) == ("weights", 1.11)
    manifest_dict["schedule"] = {"linear_bias": "weights", "linear_bias_max_factor": 2}
    assert parse_manifest(manifest_dict).linear_bias_max_factor == 2.0
    manifest_dict["schedule"] = {"linear_bias": "mma"}
    m = parse_manifest(manifest_dict)
    assert (m.linear_bias, m.linear_bias_max_factor) == ("mma", None)
    # A NaN bound as JSON writes it (Python's json reads NaN) is refused too.
    text = json.dumps({**manifest_dict, "schedule": {"linear_bias": "weights",
                                                     "linear_bias_max_factor": float("nan")}})
    assert "NaN" in text
    with pytest.raises(ManifestError, match=r"linear_bias_max_factor: expected a positive "
                                            r"finite number, got nan"):
        parse_manifest(json.loads(text))


@pytest.mark.parametrize("path, value, message", BROKEN,
                         ids=[".".join(map(str, b[0])) + f"={b[1]!r}"[:20] for b in BROKEN])
def test_broken_manifest(manifest_dict, path, value, message):
    _break(manifest_dict, path, value)
    with pytest.raises(ManifestError, match=message):
        parse_manifest(manifest_dict, "kernel.json")


def test_error_names_the_source(manifest_dict):
    manifest_dict["version"] = 7
    with pytest.raises(ManifestError, match=r"^kernel.json: version"):
        parse_manifest(manifest_dict, "kernel.json")


def test_lse_param_without_lse_config(manifest_dict):
    manifest_dict["config"]["lse"] = False
    with pytest.raises(ManifestError, match=r"passes tensor 'lse' but config.lse is false"):
        parse_manifest(manifest_dict)


def test_tensor_map_param_needs_a_map(manifest_dict):
    del manifest_dict["tensor_maps"][0]
    with pytest.raises(ManifestError, match=r"params\[0\].tensor: no tensor_maps entry "
                                            r"describes tensor 'q'"):
        parse_manifest(manifest_dict)


def test_unmasked_kernel_needs_no_diag(manifest_dict):
    manifest_dict["config"]["causal"] = False
    manifest_dict["params"] = [p for p in manifest_dict["params"] if p.get("symbol") != "diag"]
    assert not parse_manifest(manifest_dict).config.masked


def test_kv_maps_may_use_query_spellings(manifest_dict):
    # The ABI lets K and V name their dims with Q's symbols; extents come from the tensor.
    manifest_dict["tensor_maps"][1]["dims"] = ["D", "Sq", "Hq", "B"]
    assert parse_manifest(manifest_dict).tensor_maps["k"].axes == (3, 2, 1, 0)


def test_lse_tensor_map(manifest_dict):
    manifest_dict["tensor_maps"].append(
        {"tensor": "lse", "dims": ["Sq", "Hq", "B"], "box": [128, 1, 1], "swizzle": "none"})
    manifest_dict["params"][5] = {"kind": "tensor_map", "tensor": "lse"}
    m = parse_manifest(manifest_dict)
    assert m.tensor_maps["lse"].axes == (2, 1, 0)
    assert m.tensor_maps["lse"].l2_promotion == "none"  # the default
    manifest_dict["tensor_maps"][-1]["dims"] = ["D", "Sq", "B"]
    with pytest.raises(ManifestError, match=r"dims\[0\]: expected one of B, Hq, Hkv, Sq, Skv "
                                            r"for tensor lse, got 'D'"):
        parse_manifest(manifest_dict)


def test_captured_tensor_params(manifest_dict):
    # A kernel of modifications takes the tensors they read last, by pointer,
    # in capture order.
    manifest_dict["params"] += [{"kind": "ptr", "tensor": "capture0"},
                                {"kind": "ptr", "tensor": "capture1"}]
    m = parse_manifest(manifest_dict)
    assert [(p.kind, p.tensor) for p in m.params[-2:]] == [("ptr", "capture0"),
                                                          ("ptr", "capture1")]


@pytest.mark.parametrize("params, message", [
    ([{"kind": "stride", "tensor": "capture0", "dim": 0}],
     r"params\[10\].tensor: expected one of q, k, v, o, lse, got 'capture0' \(a captured "
     r"tensor is passed as a 'ptr' only, not a 'stride'\)"),
    ([{"kind": "tensor_map", "tensor": "capture0"}],
     r"params\[10\].tensor: .*got 'capture0' \(a captured tensor is passed as a 'ptr' only"),
    ([{"kind": "ptr", "tensor": "capture"}],
     r"params\[10\].tensor: expected one of q, k, v, o, lse, capture<N>, tile_counter, "
     r"got 'capture'$"),
    ([{"kind": "ptr", "tensor": "capture01"}], r"got 'capture01'"),
    ([{"kind": "ptr", "tensor": "capture1"}],
     r"params: expected the captured tensors' pointers in capture order \(capture0, capture1, "
     r"…\), got capture1"),
    ([{"kind": "ptr", "tensor": "capture0"}] * 2, r"got capture0, capture0"),
    ([{"kind": "ptr", "tensor": "tile_counter"}] * 2,
     r"params: passes 'tile_counter' more than once"),
    ([{"kind": "stride", "tensor": "tile_counter", "dim": 0}],
     r"params\[10\].tensor: expected one of q, k, v, o, lse, got 'tile_counter'"),
])
def test_bad_captured_tensor_params(manifest_dict, params, message):
    manifest_dict["params"] += params
    with pytest.raises(ManifestError, match=message):
        parse_manifest(manifest_dict)


def test_config_round_trip():
    c = KernelConfig("f16", 64, 64, 8, 8, causal=False, window=(128, 0), lse=True)
    assert KernelConfig.from_dict(c.to_dict()) == c
    assert c.masked
    assert not KernelConfig("f16", 64, 64, 8, 8).masked
