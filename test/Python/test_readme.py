"""The README's Python example, run as written (on a Hopper GPU)."""

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
    pytest.skip("needs a CUDA device with compute capability 9.0", allow_module_level=True)

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_python_example():
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Python, on torch tensors"):]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)[:1]
    assert len(code.strip().splitlines()) == 3, "the README promises a three-line example"
    scope = {}
    exec(compile(code, "README.md", "exec"), scope)
    q, k, v, o = (scope[n] for n in "qkvo")
    torch.cuda.synchronize()
    expected = torch.nn.functional.scaled_dot_product_attention(
        q[:1, :2].double(), k[:1, :2].double(), v[:1, :2].double(), is_causal=True)
    err = ((o[:1, :2].double() - expected).norm() / expected.norm()).item()
    assert o.shape == q.shape and o.dtype == q.dtype
    assert err < 5e-3, err
