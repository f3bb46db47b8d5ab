"""posviz.xpos: xPos (Sun et al. 2022), RoPE times the paper's decay; against rotary-embedding-torch."""

from __future__ import annotations

import pytest
import torch

import posviz
from posviz.xpos import apply_xpos, xpos_scale, xpos_zeta


def _qk(T: int = 10, d: int = 8, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(2, 3, T, d, dtype=torch.float64, generator=g),
        torch.randn(2, 3, T, d, dtype=torch.float64, generator=g),
    )


def test_zeta_is_the_papers_ladder():
    zeta = xpos_zeta(8, dtype=torch.float64)
    assert torch.allclose(zeta, torch.tensor([(i / 4 + 0.4) / 1.4 for i in range(4)], dtype=torch.float64))
    assert float(zeta[0]) == pytest.approx(0.4 / 1.4) and bool((zeta < 1).all() and (zeta > 0).all())


def _pair_only(x: torch.Tensor, pair: int) -> torch.Tensor:
    out = torch.zeros_like(x)
    out[..., 2 * pair : 2 * pair + 2] = x[..., 2 * pair : 2 * pair + 2]
    return out


def test_score_is_ropes_times_the_decay_pair_by_pair():
    r"""q~_m . k~_n = sum_i zeta_i^{(m-n)/gamma} s_i(m, n), s_i pair i's RoPE score."""
    T, d, gamma = 12, 8, 16.0  # a short scale base makes the decay large enough to see
    q, k = _qk(T, d)
    zeta = xpos_zeta(d, dtype=torch.float64)
    m = torch.arange(T, dtype=torch.float64)
    total = torch.zeros(2, 3, T, T, dtype=torch.float64)
    for i in range(d // 2):
        qi, ki = _pair_only(q, i), _pair_only(k, i)
        rope = posviz.apply_rope(qi) @ posviz.apply_rope(ki).transpose(-1, -2)  # s_i(m, n)
        xq, xk = apply_xpos(qi, ki, scale_base=gamma)
        decay = zeta[i] ** ((m[:, None] - m[None, :]) / gamma)  # zeta_i^{(m-n)/gamma}
        assert torch.allclose(xq @ xk.transpose(-1, -2), rope * decay, rtol=1e-12, atol=1e-12)
        total += rope * decay
    xq, xk = apply_xpos(q, k, scale_base=gamma)
    assert torch.allclose(xq @ xk.transpose(-1, -2), total, rtol=1e-12, atol=1e-12)


def test_distant_keys_get_smaller_scores_in_a_causal_decoder():
    """For n <= m the factor zeta^{(m-n)/gamma} is <= 1 and falls with the distance m - n."""
    T, d = 40, 4
    x = torch.zeros(1, T, d, dtype=torch.float64)
    x[..., 0] = 1.0  # pair 0 only, the same vector everywhere
    xq, xk = apply_xpos(x, x, scale_base=8.0)
    rq, rk = posviz.apply_rope(x), posviz.apply_rope(x)
    ratio = (xq @ xk.transpose(-1, -2)) / (rq @ rk.transpose(-1, -2))  # zeta_0^{(m-n)/gamma} where defined
    row = torch.stack([ratio[0, T - 1, T - 1 - r] for r in range(0, 12)])  # query T-1, keys further back
    assert float(row[0]) == pytest.approx(1.0)
    assert bool((row[1:] < row[:-1]).all()) and float(row[-1]) < 0.5


def test_the_centring_cancels_in_the_score():
    """Scales centred at floor(T/2) differ with T; scores on shared positions do not."""
    q, k = _qk(13)
    a = apply_xpos(q, k)
    b = apply_xpos(q[..., :8, :], k[..., :8, :])
    s_a = (a[0] @ a[1].transpose(-1, -2))[..., :8, :8]
    s_b = b[0] @ b[1].transpose(-1, -2)
    assert torch.allclose(s_a, s_b, rtol=1e-12, atol=1e-12)
    assert not torch.allclose(a[0][..., :8, :], b[0])  # the vectors themselves differ


def test_matches_rotary_embedding_torch_use_xpos():
    """rotary-embedding-torch's RotaryEmbedding(use_xpos=True): interleaved pairs, scale
    zeta^{(t - T//2)/512} on q and its inverse on k. With its frequencies and zetas in float64 the
    two agree to rounding; with its own float32 tables, to float32 precision."""
    rotary = pytest.importorskip("rotary_embedding_torch")
    q, k = _qk(17, 16)
    exact = rotary.RotaryEmbedding(16, use_xpos=True, cache_if_possible=False).double()
    with torch.no_grad():
        exact.freqs.copy_(posviz.rope_frequencies(16, dtype=torch.float64))
    exact.scale = xpos_zeta(16, dtype=torch.float64)
    rq, rk = exact.rotate_queries_and_keys(q, k)
    xq, xk = apply_xpos(q, k)
    assert torch.allclose(rq, xq, rtol=0, atol=1e-13) and torch.allclose(rk, xk, rtol=0, atol=1e-13)
    own = rotary.RotaryEmbedding(16, use_xpos=True, cache_if_possible=False)
    fq, fk = own.rotate_queries_and_keys(q.float(), k.float())
    yq, yk = apply_xpos(q.float(), k.float())
    assert torch.allclose(fq, yq, rtol=1e-5, atol=1e-5) and torch.allclose(fk, yk, rtol=1e-5, atol=1e-5)


def test_matches_x_transformers_rotary_xpos():
    """x-transformers' RotaryEmbedding(use_xpos=True), applied as its Attention does (scale on q,
    scale ** -1 on k), with its tables replaced by float64 ones: equal to rounding."""
    xt = pytest.importorskip("x_transformers.x_transformers")
    q, k = _qk(11, 8)
    rotary = xt.RotaryEmbedding(8, use_xpos=True, scale_base=512)
    rotary.inv_freq = posviz.rope_frequencies(8, dtype=torch.float64)
    rotary.scale = xpos_zeta(8, dtype=torch.float64)
    freqs, scale = rotary(torch.arange(11))
    rq = xt.apply_rotary_pos_emb(q, freqs, scale)
    rk = xt.apply_rotary_pos_emb(k, freqs, scale**-1.0)
    xq, xk = apply_xpos(q, k)
    assert torch.allclose(rq, xq, rtol=0, atol=1e-13) and torch.allclose(rk, xk, rtol=0, atol=1e-13)


def test_scale_table_and_dtype():
    s = xpos_scale(6, 4, scale_base=2.0, dtype=torch.float64)
    zeta = xpos_zeta(4, dtype=torch.float64)
    for m in range(6):
        expected = zeta ** ((m - 3) / 2.0)
        assert torch.allclose(s[m], expected.repeat_interleave(2))
    q, k = _qk(5)
    out = apply_xpos(q.float(), k.float())
    assert out[0].dtype == torch.float32 and out[1].shape == (2, 3, 5, 8)


def test_gradients_flow_through_xpos():
    q, k = _qk(6)
    q.requires_grad_(True)
    k.requires_grad_(True)
    xq, xk = apply_xpos(q, k)
    (xq @ xk.transpose(-1, -2)).sum().backward()
    assert q.grad is not None and k.grad is not None and float(q.grad.abs().sum()) > 0


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: apply_xpos(torch.zeros(4, 6), torch.zeros(5, 6)), ValueError, "same length T"),
        (lambda: apply_xpos(torch.zeros(4, 6), torch.zeros(4, 6, dtype=torch.float64)), TypeError, "same dtype"),
        (lambda: apply_xpos(torch.zeros(4, 6), torch.zeros(4, 6), scale_base=0.0), ValueError, "scale_base"),
        (lambda: apply_xpos(torch.zeros(4, 5), torch.zeros(4, 5)), ValueError, "dim must be even"),
        (lambda: xpos_zeta(8, zeta_gamma=-1.0), ValueError, "zeta_gamma must be > 0"),
        (lambda: xpos_scale(0, 8), ValueError, "length must be >= 1"),
        (lambda: apply_xpos([1.0], torch.zeros(4, 6)), TypeError, "q must be a torch.Tensor"),
    ],
)
def test_bad_input_names_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()
