import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import posviz


@pytest.mark.parametrize("causal", [False, True])
def test_matches_scaled_dot_product_attention(causal, device):
    q, k, v = (torch.randn(2, 4, 16, 8, dtype=torch.float64, device=device) for _ in range(3))
    out, w = posviz.attention(q, k, v, causal=causal)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    torch.testing.assert_close(out, ref)
    assert w.shape == (2, 4, 16, 16) and w.device.type == device.type


def test_bias_and_scale_match_sdpa():
    h, n, d = 4, 12, 8
    q, k, v = (torch.randn(h, n, d, dtype=torch.float64) for _ in range(3))
    bias = posviz.alibi_bias(h, n, device="cpu", dtype=torch.float64)
    out, _ = posviz.attention(q, k, v, bias=bias, scale=1.0)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=1.0)
    torch.testing.assert_close(out, ref)


def test_rectangular_causal_is_top_left_aligned():
    q, k = torch.randn(3, 4), torch.randn(5, 4)
    _, w = posviz.attention(q, k, causal=True)
    assert torch.all(w[0, 1:] == 0) and torch.all(w[2, 3:] == 0) and torch.all(w[2, :3] > 0)


@settings(max_examples=30, deadline=None)
@given(lq=st.integers(1, 20), lk=st.integers(1, 20), d=st.integers(1, 16), causal=st.booleans(), seed=st.integers(0, 9))
def test_rows_sum_to_one_and_causal_zeros(lq, lk, d, causal, seed):
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(lq, d, generator=g), torch.randn(lk, d, generator=g)
    out, w = posviz.attention(q, k, causal=causal)
    assert out is None
    torch.testing.assert_close(w.sum(-1), torch.ones(lq))
    if causal:
        assert torch.all(w.triu(1) == 0)


def test_without_position_attention_is_permutation_equivariant():
    n, d = 10, 16
    x = torch.randn(n, d)
    wq, wk, wv = (torch.randn(d, d) for _ in range(3))
    perm = torch.randperm(n)
    out, _ = posviz.attention(x @ wq, x @ wk, x @ wv)
    out_p, _ = posviz.attention(x[perm] @ wq, x[perm] @ wk, x[perm] @ wv)
    torch.testing.assert_close(out_p, out[perm], rtol=1e-5, atol=1e-5)
    pe = posviz.sinusoidal_encoding(n, d, device="cpu")
    xp, xpp = x + pe, x[perm] + pe
    out, _ = posviz.attention(xp @ wq, xp @ wk, xp @ wv)
    out_p, _ = posviz.attention(xpp @ wq, xpp @ wk, xpp @ wv)
    assert not torch.allclose(out_p, out[perm], atol=1e-3)


def test_causal_mask():
    assert posviz.causal_mask(2, 3).tolist() == [[False, True, True], [False, False, True]]


@pytest.mark.parametrize(
    ("call", "err", "msg"),
    [
        (lambda: posviz.attention(torch.randn(3, 4), torch.randn(3, 5)), ValueError, "same last dim"),
        (lambda: posviz.attention(torch.randn(3, 4), torch.randn(3, 4), torch.randn(2, 4)), ValueError, "as many rows"),
        (lambda: posviz.attention(torch.randn(2, 3, 4), torch.randn(5, 3, 4)), ValueError, "do not broadcast"),
        (lambda: posviz.attention(torch.randn(3, 4), torch.randn(3, 4), bias=torch.randn(2, 2)), ValueError,
         "do not broadcast"),
        (lambda: posviz.attention(torch.randn(4), torch.randn(4)), ValueError, r"shape \[..., seq, dim\]"),
        (lambda: posviz.attention(torch.ones(3, 4, dtype=torch.long), torch.randn(3, 4)), TypeError, "floating"),
        (lambda: posviz.attention("q", torch.randn(3, 4)), TypeError, "q must be a torch.Tensor"),
        (lambda: posviz.attention(torch.randn(3, 4), torch.randn(3, 4), bias=[1.0]), TypeError, "bias must be"),
        (lambda: posviz.attention(torch.randn(1, 4).expand(10**6, 4), torch.randn(1, 4).expand(10**6, 4)),
         ValueError, r"attention map of shape \[1000000, 1000000\].* needs .* TiB"),
    ],
)
def test_bad_input(call, err, msg):
    with pytest.raises(err, match=msg):
        call()
