"""bench/feature_ablation.py: the toggles' configs and the table it prints
from a run's JSON (synthetic rows; no GPU, no compiler)."""

import importlib.util
import json
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
    fa.main(["table", str(tmp_path)])
    out = capsys.readouterr().out
    assert "| rowsum=vector | 64 | — | 0.800 / 0.900 | 0.849 | 2.00e-03 / 2.20e-03 |" in out
