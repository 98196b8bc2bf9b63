"""``import fa_t`` must work without torch and without a GPU."""

import subprocess
import sys
from pathlib import Path

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"


def test_import_does_not_load_torch():
    code = ("import sys; import fa_t; "
            "assert 'torch' not in sys.modules, 'fa_t imported torch'; "
            "assert callable(fa_t.attention) and callable(fa_t.scaled_dot_product_attention); "
            "print(fa_t.__version__)")
    done = subprocess.run([sys.executable, "-c", code], cwd=PYTHON_DIR, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0.1.0"


def test_sdpa_rejections_need_no_torch():
    # Unsupported arguments are refused before anything imports torch.
    import pytest
    import fa_t
    with pytest.raises(NotImplementedError, match=r"does not support attn_mask"):
        fa_t.scaled_dot_product_attention(None, None, None, attn_mask=object())
    with pytest.raises(NotImplementedError, match=r"does not support dropout_p=0.1"):
        fa_t.scaled_dot_product_attention(None, None, None, dropout_p=0.1)
