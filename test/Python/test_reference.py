"""The float64 reference against torch's own SDPA (math, on CPU). Needs torch."""

import math

import pytest

torch = pytest.importorskip("torch")

from fa_t.reference import attention_reference  # noqa: E402


def rand(*shape):
    return torch.randn(*shape, dtype=torch.float64)


@pytest.mark.parametrize("sq, skv", [(17, 17), (5, 33), (33, 5)])
@pytest.mark.parametrize("causal", [False, True])
def test_matches_torch_sdpa_top_left(sq, skv, causal):
    q, k, v = rand(2, 4, sq, 16), rand(2, 2, skv, 16), rand(2, 2, skv, 8)
    o, _ = attention_reference(q, k, v, causal=causal, diag=0)
    expected = torch.nn.functional.scaled_dot_product_attention(
        q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), is_causal=causal)
    torch.testing.assert_close(o, expected)


def test_bottom_right_causal_and_empty_rows():
    q, k, v = rand(1, 1, 6, 8), rand(1, 1, 4, 8), rand(1, 1, 4, 8)
    o, lse = attention_reference(q, k, v, causal=True)  # diag = 4 - 6 = -2
    assert torch.all(o[0, 0, :2] == 0) and torch.all(torch.isneginf(lse[0, 0, :2]))
    # Row 2 sees only key 0: O is V[0], LSE the single score.
    torch.testing.assert_close(o[0, 0, 2], v[0, 0, 0])
    torch.testing.assert_close(lse[0, 0, 2], (q[0, 0, 2] @ k[0, 0, 0]) / math.sqrt(8))


def test_window_and_lse():
    q, k, v = rand(1, 2, 9, 8), rand(1, 2, 9, 8), rand(1, 2, 9, 8)
    o, lse = attention_reference(q, k, v, window=(2, 1), scale=0.3)
    i, j = torch.arange(9)[:, None], torch.arange(9)[None, :]
    mask = (j >= i - 2) & (j <= i + 1)
    s = (q @ k.transpose(-1, -2) * 0.3).masked_fill(~mask, float("-inf"))
    torch.testing.assert_close(lse, torch.logsumexp(s, -1))
    torch.testing.assert_close(o, torch.softmax(s, -1) @ v)
