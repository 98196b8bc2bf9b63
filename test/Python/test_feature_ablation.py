"""bench/feature_ablation.py: the toggles' configs and the table it prints
from a run's JSON (synthetic rows; no GPU, no compiler)."""

import importlib.util
import json
import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load():
    spec = importlib.util.spec_from_file_location(
        "feature_ablation", ROOT / "bench" / "feature_ablation.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_toggles_force_one_option_at_their_head_dims():
    fa = load()
    for toggle, (options, head_dims) in fa.FEATURE_TOGGLES.items():
        entries = fa.toggle_configs(toggle)
        assert entries, toggle
        assert {c.head_dim for c, _ in entries} == set(head_dims)
        assert all(c.dtype == "bf16" and options.items() <= t.items() for c, t in entries)


def test_table_gives_toggled_over_default_per_length(tmp_path, capsys):
    fa = load()
    rows = [{"D": 64, "causal": False, "S": s, "tflops": {"fa-t": 500.0, "base": b},
             "rel_err": {"fa-t": 2.0e-3, "base": e}}
            for s, b, e in ((1024, 450.0, 2.1e-3), (512, 400.0, 2.2e-3))]
    (tmp_path / "rowsum-vector.json").write_text(json.dumps({"meta": {}, "rows": rows}))
    (row,) = list(fa.table_rows(tmp_path))
    assert row["toggle"] == "rowsum=vector"
    assert row["ratios"] == [0.8, 0.9]  # S ascending
    assert abs(row["geomean"] - (0.8 * 0.9) ** 0.5) < 1e-12
    assert row["err_toggled"] == 2.2e-3 and row["same"] == [False, False]
    assert row["tensor_idle"] is None  # no `ncu` run in this folder
    fa.main(["table", str(tmp_path)])
    out = capsys.readouterr().out
    assert "| rowsum=vector | 64 | — | 0.800 / 0.900 | 0.849 | 2.00e-03 / 2.20e-03 | — |" in out

    # With `ncu`'s file: the idle share (100 − active) of the default's and
    # the toggled kernel's tensor pipe at the profiled point of that D and mask.
    (tmp_path / fa.TENSOR_FILE).write_text(json.dumps(
        {"default": {"64:0:4096": 66.0, "64:1:4096": 60.0},
         "rowsum=vector": {"64:0:4096": 58.5, "64:1:4096": 55.0}}))
    (row,) = list(fa.table_rows(tmp_path))
    assert row["tensor_idle"] == (34.0, 41.5)
    fa.main(["table", str(tmp_path)])
    assert "| 2.00e-03 / 2.20e-03 | 34.0 / 41.5 |" in capsys.readouterr().out


def test_ncu_report_parses_kernels_in_launch_order(tmp_path):
    """bench/ncu_profile.py's parser: one fa-t kernel starts each point, the
    peer's kernels follow it; metric values keep ncu's thousands separators."""
    spec = importlib.util.spec_from_file_location("ncu_profile", ROOT / "bench" / "ncu_profile.py")
    ncu = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ncu)
    header = '"ID","Kernel Name","Metric Name","Metric Value"'
    lines = ["==PROF== noise", header]
    for kid, name, value in ((0, "fat_attention_fwd_a", "61.5"), (1, "cudnn_x", "48.0"),
                             (2, "fat_attention_fwd_b", "70.25"), (3, "cudnn_y", "1,234")):
        lines.append(f'"{kid}","{name}","{ncu.TENSOR_ACTIVE}","{value}"')
    path = tmp_path / "ncu.csv"
    path.write_text("\n".join(lines) + "\n")
    rows = ncu.parse_report(path, [(64, False, 4096), (64, True, 4096)])
    assert [(p, who) for p, who, _, _ in rows] == [
        ((64, False, 4096), "fa-t"), ((64, False, 4096), "peer"),
        ((64, True, 4096), "fa-t"), ((64, True, 4096), "peer")]
    assert ncu.metric(rows[2][3], "sm__pipe_tensor_op_hmma_type") == 70.25
    assert ncu.metric(rows[3][3], ncu.TENSOR_ACTIVE) == 1234.0


def test_ncu_step_writes_one_json_of_tensor_activity(tmp_path, monkeypatch):
    """`feature_ablation.py ncu` end to end with a stand-in `ncu` on PATH: one
    profiling run for the defaults (all head dims) and one per toggle (its own
    head dims), both masks at --seq keys; fa-t's activity per point, cuDNN's
    (its longest kernel) beside the defaults; no CSV left behind."""
    fa = load()
    fake = tmp_path / "bin"
    fake.mkdir()
    # Echoes a CSV for the points it was asked to profile: per point one
    # fat_ kernel (activity 10·D + causal) and two peer kernels, the longer
    # one with activity 5.
    (fake / "ncu").write_text("""#!/usr/bin/env python3
import sys
points = sys.argv[sys.argv.index("--points") + 1].split(",")
print("==PROF== Connected")
print('"ID","Kernel Name","Metric Name","Metric Value"')
kid = 0
for p in points:
    d, c, s = (int(x) for x in p.split(":"))
    for name, time, active in (("fat_attention_fwd", 100, 10 * d + c), ("cudnn_a", 50, 1),
                               ("cudnn_b", 200, 5)):
        print(f'"{kid}","{name}","gpu__time_duration.sum","{time}"')
        print(f'"{kid}","{name}","sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active'
              f'.avg.pct_of_peak_sustained_active","{active}"')
        kid += 1
""")
    (fake / "ncu").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "out"
    assert fa.main(["ncu", "--kernels", str(tmp_path / "k"), "--out", str(out),
                    "--seq", "2048"]) == 0
    active = json.loads((out / fa.TENSOR_FILE).read_text())
    assert active["default"] == {f"{d}:{c}:2048": 10.0 * d + c
                                 for d in (64, 128, 256) for c in (0, 1)}
    assert active["cudnn"] == {f"{d}:{c}:2048": 5.0 for d in (64, 128, 256) for c in (0, 1)}
    assert set(active["rowsum=vector"]) == {"64:0:2048", "64:1:2048"}
    assert set(active) == {"default", "cudnn", *fa.FEATURE_TOGGLES}
    assert not list(out.glob("*.csv"))
