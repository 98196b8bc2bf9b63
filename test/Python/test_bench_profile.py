"""bench/ncu_profile.py's summary of an Nsight Compute CSV (no GPU, no ncu):
kernels are grouped into points by launch order — a fat_* kernel starts
the next point, whatever follows is the peer's — and each line carries
that kernel's time, tensor-pipe activity and top stall reasons."""

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load_profile():
    spec = importlib.util.spec_from_file_location("ncu_profile", ROOT / "bench" / "ncu_profile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
          '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
          '"Metric Value"')


def row(kid, name, metric, value):
    return (f'"{kid}","1","python3","host","{name}","1","7","(384, 1, 1)","(132, 1, 1)","0",'
            f'"9.0","","{metric}","","{value}"')


def test_report_groups_kernels_by_point(tmp_path, capsys):
    prof = load_profile()
    kernels = [(0, "fat_attention_fwd_bf16_d64", 60.5), (1, "cudnn_sdpa_kernel", 47.25),
               (2, "fat_attention_fwd_bf16_d128", 80.0), (3, "cudnn_sdpa_kernel", 76.0)]
    lines = ["==PROF== Connected to process 1", "profiled D=64 causal=False S=1024", HEADER]
    for kid, name, tensor in kernels:
        lines += [row(kid, name, "gpu__time_duration.sum", "1,234,000"),
                  row(kid, name, "sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active"
                      ".avg.pct_of_peak_sustained_active", tensor),
                  row(kid, name, "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
                      "2.5"),
                  row(kid, name, "smsp__average_warps_issue_stalled_barrier_per_issue_active"
                      ".ratio", "0.5"),
                  row(kid, name, "smsp__average_warps_issue_stalled_not_selected_per_issue"
                      "_active.ratio", "9.0")]
    csv_path = tmp_path / "ncu.csv"
    csv_path.write_text("\n".join(lines) + "\n")
    prof.report(csv_path, [(64, False, 1024), (128, True, 4096)])
    out = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("D")]
    assert [ln.split("  ")[0].strip() for ln in out] == [
        "D64 S1024 fa-t", "D64 S1024 peer", "D128 causal S4096 fa-t", "D128 causal S4096 peer"]
    first = out[0].split()
    # 1,234,000 ns = 1234.0 µs; the tensor pipe's share; stalls sorted, and
    # not_selected (a warp that could have issued) is not a stall.
    assert first[3:5] == ["1234.0", "60.5"]
    assert out[0].endswith("wait 2.50, barrier 0.50") and "selected" not in out[0]
    assert "47.2" in out[1]


def test_report_pairs_a_modification_with_the_plain_kernel(tmp_path, capsys):
    """A modification's point (NAME:D:S) launches two fa-t kernels, its own
    and then the plain one of the same shape and mask: the second is its
    peer ("plain"), not the next point; a plain point after it pairs with
    cuDNN as before."""
    prof = load_profile()
    points = [prof.parse_point(p) for p in ("relative-bias:128:4096", "64:1:2048")]
    assert points == [(128, None, 4096, "relative-bias"), (64, True, 2048)]
    kernels = [(0, "fat_attention_fwd_bf16_d128_h16_16_bhsd_mod4571ea72", 41.0),
               (1, "fat_attention_fwd_bf16_d128_h16_16_bhsd_m128n128", 63.0),
               (2, "fat_attention_fwd_bf16_d64_h16_16_bhsd_causal", 55.0),
               (3, "cudnn_sdpa_kernel", 50.0)]
    lines = [HEADER]
    for kid, name, tensor in kernels:
        lines += [row(kid, name, "gpu__time_duration.sum", "2,000"),
                  row(kid, name, "sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active"
                      ".avg.pct_of_peak_sustained_active", tensor)]
    csv_path = tmp_path / "ncu.csv"
    csv_path.write_text("\n".join(lines) + "\n")
    prof.report(csv_path, points)
    out = [ln for ln in capsys.readouterr().out.splitlines()
           if ln.startswith(("relative-bias", "D64"))]
    assert [ln.split("  ")[0].strip() for ln in out] == [
        "relative-bias D128 S4096 fa-t", "relative-bias D128 S4096 plain",
        "D64 causal S2048 fa-t", "D64 causal S2048 peer"]
    assert [ln.split()[5] for ln in out[:2]] == ["41.0", "63.0"]
