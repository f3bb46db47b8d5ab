"""posviz.apply_rope against the RoFormer formula and reference code: rotation matrices, layouts,
positions, dtypes, the table cache, partial rotary, explicit frequencies and bad input.

The RoPE chapter's functions (rope_angles, rope_complex_view, rope_relative_score, rope_scores)
are tested in ``test_rope_chapter.py``, which imports ``formula`` from here.
"""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import posviz


def formula(x: torch.Tensor, base: float, layout: str) -> torch.Tensor:
    """RoFormer eq. (13)-(15) written out pair by pair, positions 0..seq-1."""
    seq, dim = x.shape[-2:]
    out = torch.empty_like(x, dtype=torch.float64)
    for m in range(seq):
        for i in range(dim // 2):
            theta = base ** (-2 * i / dim)
            a, b = (2 * i, 2 * i + 1) if layout == "interleaved" else (i, i + dim // 2)
            c, s = math.cos(m * theta), math.sin(m * theta)
            out[..., m, a] = x[..., m, a] * c - x[..., m, b] * s
            out[..., m, b] = x[..., m, a] * s + x[..., m, b] * c
    return out


@pytest.mark.parametrize("layout", ["interleaved", "half"])
@pytest.mark.parametrize("base", [10000.0, 10.0])
def test_apply_rope_matches_formula(layout, base, device):
    x = torch.randn(2, 3, 9, 8, dtype=torch.float64)
    got = posviz.apply_rope(x.to(device), base=base, layout=layout)
    assert got.shape == x.shape and got.dtype == torch.float64 and got.device.type == device.type
    torch.testing.assert_close(got.cpu(), formula(x, base, layout), rtol=0, atol=1e-12)


def test_interleaved_matches_rotary_embedding_torch():
    RotaryEmbedding = pytest.importorskip(
        "rotary_embedding_torch", reason="the reference test needs the test extra (rotary-embedding-torch)"
    ).RotaryEmbedding

    q = torch.randn(2, 4, 64, 32)
    ref = RotaryEmbedding(dim=32).rotate_queries_or_keys(q)  # interleaved pairs, theta 10000
    torch.testing.assert_close(posviz.apply_rope(q), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("base", [10000.0, 500000.0])
def test_half_matches_transformers_llama(base):
    pytest.importorskip("transformers", reason="the reference test needs the test extra (transformers)")
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

    b, h, n, d = 2, 4, 128, 64
    config = LlamaConfig(hidden_size=h * d, num_attention_heads=h, head_dim=d, rope_theta=base)
    q, k = torch.randn(b, h, n, d), torch.randn(b, h, n, d)
    pos = torch.arange(n)[None].expand(b, n)
    cos, sin = LlamaRotaryEmbedding(config)(q, pos)
    q_ref, k_ref = apply_rotary_pos_emb(q, k, cos, sin)
    torch.testing.assert_close(posviz.apply_rope(q, base=base, layout="half"), q_ref, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(posviz.apply_rope(k, base=base, layout="half"), k_ref, rtol=1e-4, atol=1e-4)


def test_rotation_matrix_acts_like_apply_rope(device):
    x = torch.randn(3, 7, 10, dtype=torch.float64, device=device)
    y = posviz.apply_rope(x)
    for p in range(7):
        r = posviz.rope_rotation_matrix(p, 10, device=device, dtype=torch.float64)
        torch.testing.assert_close(y[:, p], x[:, p] @ r.T, rtol=0, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(m=st.integers(-4000, 4000), n=st.integers(-4000, 4000), half=st.integers(1, 32))
def test_rotation_matrix_orthogonal_and_relative(m, n, half):
    dim = 2 * half
    rm = posviz.rope_rotation_matrix(m, dim, device="cpu", dtype=torch.float64)
    rn = posviz.rope_rotation_matrix(n, dim, device="cpu", dtype=torch.float64)
    eye = torch.eye(dim, dtype=torch.float64)
    torch.testing.assert_close(rm.T @ rm, eye, rtol=0, atol=1e-12)
    r_diff = posviz.rope_rotation_matrix(n - m, dim, device="cpu", dtype=torch.float64)
    torch.testing.assert_close(rm.T @ rn, r_diff, rtol=0, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(shift=st.integers(0, 10_000), layout=st.sampled_from(["interleaved", "half"]), seed=st.integers(0, 99))
def test_scores_depend_only_on_offset(shift, layout, seed):
    """q_m . k_n is unchanged when both positions move by the same amount."""
    g = torch.Generator().manual_seed(seed)
    n, d = 12, 16
    q, k = torch.randn(n, d, generator=g, dtype=torch.float64), torch.randn(n, d, generator=g, dtype=torch.float64)
    pos = torch.arange(n)
    s0 = posviz.apply_rope(q, pos, layout=layout) @ posviz.apply_rope(k, pos, layout=layout).T
    s1 = posviz.apply_rope(q, pos + shift, layout=layout) @ posviz.apply_rope(k, pos + shift, layout=layout).T
    torch.testing.assert_close(s0, s1, rtol=0, atol=1e-9)


def test_same_vector_everywhere_gives_a_toeplitz_score_matrix():
    d, n = 32, 20
    q = torch.randn(d, dtype=torch.float64).expand(n, d)
    k = torch.randn(d, dtype=torch.float64).expand(n, d)
    s = posviz.apply_rope(q) @ posviz.apply_rope(k).T
    for off in range(-n + 1, n):
        diag = torch.diagonal(s, offset=off)
        torch.testing.assert_close(diag, diag[:1].expand_as(diag), rtol=0, atol=1e-10)


def test_layouts_differ_only_by_a_permutation():
    d = 16
    x = torch.randn(3, 10, d, dtype=torch.float64)
    p = posviz.rope_layout_permutation(d, device="cpu")
    assert p.tolist() == [0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15]
    inter = posviz.apply_rope(x, layout="interleaved")
    half = posviz.apply_rope(x[..., p], layout="half")
    torch.testing.assert_close(half, inter[..., p], rtol=0, atol=1e-12)
    torch.testing.assert_close(half[..., torch.argsort(p)], inter, rtol=0, atol=1e-12)
    # scores are unchanged when q and k are permuted alike
    q, k = torch.randn(10, d, dtype=torch.float64), torch.randn(10, d, dtype=torch.float64)
    s_inter = posviz.apply_rope(q) @ posviz.apply_rope(k).T
    s_half = posviz.apply_rope(q[:, p], layout="half") @ posviz.apply_rope(k[:, p], layout="half").T
    torch.testing.assert_close(s_inter, s_half, rtol=0, atol=1e-10)
    # ... but applying the wrong convention to unpermuted weights changes them
    s_wrong = posviz.apply_rope(q, layout="half") @ posviz.apply_rope(k, layout="half").T
    assert not torch.allclose(s_inter, s_wrong, atol=1e-3)


def test_explicit_positions_and_broadcasting():
    x = torch.randn(2, 6, 8)
    torch.testing.assert_close(posviz.apply_rope(x, torch.arange(6)), posviz.apply_rope(x))
    pos = torch.stack([torch.arange(6), torch.arange(6) + 3])  # per-batch positions
    got = posviz.apply_rope(x, pos, layout="half")
    torch.testing.assert_close(got[1], posviz.apply_rope(x[1], torch.arange(6) + 3, layout="half"))
    frac = posviz.apply_rope(x, torch.arange(6) * 0.5)  # position interpolation uses real positions
    assert frac.shape == x.shape


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_keeps_dtype(dtype):
    x = torch.randn(4, 16, 8)
    for layout in ("interleaved", "half"):
        got = posviz.apply_rope(x.to(dtype), layout=layout)
        assert got.dtype == dtype
        torch.testing.assert_close(got.float(), posviz.apply_rope(x, layout=layout), rtol=2e-2, atol=2e-2)


def test_non_contiguous_input():
    x = torch.randn(8, 5, 16).transpose(0, 1)  # [5, 8, 16], not contiguous
    torch.testing.assert_close(posviz.apply_rope(x), posviz.apply_rope(x.contiguous()))
    torch.testing.assert_close(posviz.apply_rope(x, layout="half"), posviz.apply_rope(x.contiguous(), layout="half"))


def test_cache_is_reused_and_can_be_cleared():
    posviz.clear_rope_cache()
    x = torch.randn(4, 32, 16)
    a = posviz.apply_rope(x)
    info = posviz.rope_cache_info()
    assert (info.hits, info.misses, info.entries) == (0, 1, 1) and info.bytes == 32 * 8 * 8  # complex64 [32, 8]
    b = posviz.apply_rope(x)
    assert posviz.rope_cache_info().hits == 1  # the second call used the cached table
    torch.testing.assert_close(a, b)
    posviz.apply_rope(x, layout="half")
    assert posviz.rope_cache_info().entries == 2
    posviz.clear_rope_cache()
    assert posviz.rope_cache_info() == (0, 0, 0, 0, posviz.rope.ROPE_CACHE_MAX_BYTES)
    torch.testing.assert_close(posviz.apply_rope(x), a)


def test_cache_is_bounded_by_bytes(monkeypatch):
    posviz.clear_rope_cache()
    monkeypatch.setattr(posviz.rope, "ROPE_CACHE_MAX_BYTES", 3 * 64 * 8 * 8)  # three [64, 8] complex64 tables
    x = torch.randn(64, 16)
    for base in (10.0, 100.0, 1000.0, 10000.0):
        posviz.apply_rope(x, base=base)
    info = posviz.rope_cache_info()
    assert info.entries == 3 and info.bytes <= info.max_bytes  # the least recently used was dropped
    posviz.apply_rope(x, base=10.0)
    assert posviz.rope_cache_info().misses == 5  # base 10 was the one dropped
    posviz.apply_rope(torch.randn(4096, 16))  # larger than the whole budget: computed, not kept
    assert posviz.rope_cache_info().entries == 3
    posviz.clear_rope_cache()


def test_decay_bound_starts_at_its_maximum_and_decays():
    d = 128
    r = torch.arange(0, 2000, dtype=torch.float64)
    bound = posviz.rope_mean_partial_sum(r, d)
    assert bound[0].item() == pytest.approx((d / 2 + 1) / 2)  # |S_j| = j at r = 0
    assert bound.argmax().item() == 0
    assert bound[1000:].mean() < 0.25 * bound[0]


@pytest.mark.parametrize(
    ("call", "err", "msg"),
    [
        (lambda: posviz.apply_rope(torch.randn(4, 7)), ValueError, "dim .* must be a positive even integer"),
        (lambda: posviz.apply_rope(torch.randn(7)), ValueError, r"shape \[..., seq, dim\]"),
        (lambda: posviz.apply_rope(torch.ones(4, 8, dtype=torch.long)), TypeError, "floating-point"),
        (lambda: posviz.apply_rope([1.0, 2.0]), TypeError, "x must be a torch.Tensor"),
        (lambda: posviz.apply_rope(torch.randn(4, 8), layout="neox"), ValueError, "layout must be one of"),
        (lambda: posviz.apply_rope(torch.randn(4, 8), torch.arange(5)), ValueError, "positions must have shape"),
        (lambda: posviz.apply_rope(torch.randn(4, 8), base=0.0), ValueError, "base must be a finite number > 0"),
        (lambda: posviz.rope_rotation_matrix(1, 5), ValueError, "dim must be a positive even integer"),
        (lambda: posviz.rope_rotation_matrix(float("nan"), 4), ValueError, "position must be a finite number"),
        (lambda: posviz.rope_rotation_matrix("3", 4), TypeError, "position must be a real number"),
        (lambda: posviz.rope_layout_permutation(3), ValueError, "dim must be a positive even integer"),
        (lambda: posviz.rope_mean_partial_sum(torch.arange(3), 9), ValueError, "dim must be a positive even integer"),
    ],
)
def test_bad_input(call, err, msg):
    with pytest.raises(err, match=msg):
        call()


# --- Partial rotary, explicit frequencies, the cache key, positions (issues 21 and 22) -------------


def partial_formula(x: torch.Tensor, base: float, layout: str, rotary_dim: int, factor: float = 1.0) -> torch.Tensor:
    """Rotate the first ``rotary_dim`` coordinates pair by pair (d = rotary_dim), pass the rest."""
    out = x.to(torch.float64).clone()
    out[..., :rotary_dim] = formula(x[..., :rotary_dim].to(torch.float64), base, layout) * factor
    return out


@pytest.mark.parametrize("layout", ["interleaved", "half"])
@pytest.mark.parametrize(("dim", "rotary_dim"), [(12, 4), (10, 6), (9, 8), (8, 8), (16, 2)])
def test_partial_rotary_matches_formula(layout, dim, rotary_dim, device):
    x = torch.randn(2, 7, dim, dtype=torch.float64)
    got = posviz.apply_rope(x.to(device), base=100.0, layout=layout, rotary_dim=rotary_dim)
    torch.testing.assert_close(got.cpu(), partial_formula(x, 100.0, layout, rotary_dim), rtol=0, atol=1e-12)
    assert torch.equal(got[..., rotary_dim:].cpu(), x[..., rotary_dim:])  # the tail is passed through untouched
    pos = torch.arange(7) + 5
    scaled = posviz.apply_rope(x, pos, 100.0, layout=layout, rotary_dim=rotary_dim, attention_factor=0.5)
    shifted = posviz.apply_rope(x, pos, 100.0, layout=layout, rotary_dim=rotary_dim)
    torch.testing.assert_close(scaled[..., :rotary_dim], 0.5 * shifted[..., :rotary_dim], rtol=0, atol=1e-12)
    torch.testing.assert_close(scaled[..., rotary_dim:], x[..., rotary_dim:], rtol=0, atol=0)


def test_explicit_frequencies_equal_the_base_they_came_from():
    x = torch.randn(3, 11, 16, dtype=torch.float64)
    theta = posviz.rope_frequencies(12, 500.0, dtype=torch.float64)
    got = posviz.apply_rope(x, frequencies=theta, rotary_dim=12, layout="half")
    torch.testing.assert_close(got, posviz.apply_rope(x, None, 500.0, rotary_dim=12, layout="half"), rtol=0, atol=0)
    pos = torch.arange(11) * 3
    torch.testing.assert_close(
        posviz.apply_rope(x, pos, frequencies=theta, rotary_dim=12),
        posviz.apply_rope(x, pos, 500.0, rotary_dim=12),
        rtol=0,
        atol=0,
    )


def test_cache_key_holds_dtype_frequencies_rotary_dim_and_factor():
    """A float32 table must not serve float64 (off by ~1e-7), nor one rotary_dim, ladder or factor another."""
    posviz.clear_rope_cache()
    x = torch.randn(2, 40, 12, dtype=torch.float64)
    posviz.apply_rope(x.float())  # fills the cache with float32 tables
    torch.testing.assert_close(posviz.apply_rope(x), formula(x, 10000.0, "interleaved"), rtol=0, atol=1e-12)
    posviz.apply_rope(x, rotary_dim=4)
    torch.testing.assert_close(
        posviz.apply_rope(x, rotary_dim=8), partial_formula(x, 10000.0, "interleaved", 8), rtol=0, atol=1e-12
    )
    theta = posviz.rope_frequencies(12, 10.0, dtype=torch.float64)
    first = posviz.apply_rope(x, frequencies=theta)
    torch.testing.assert_close(first, formula(x, 10.0, "interleaved"), rtol=0, atol=1e-12)
    theta.copy_(posviz.rope_frequencies(12, 1000.0, dtype=torch.float64))  # the same tensor, new values
    torch.testing.assert_close(
        posviz.apply_rope(x, frequencies=theta), formula(x, 1000.0, "interleaved"), rtol=0, atol=1e-12
    )
    posviz.apply_rope(x, layout="half", attention_factor=2.0)
    torch.testing.assert_close(
        posviz.apply_rope(x, layout="half", attention_factor=3.0),
        partial_formula(x, 10000.0, "half", 12, 3.0),
        rtol=0,
        atol=1e-12,
    )
    posviz.clear_rope_cache()


@pytest.mark.parametrize(
    ("call", "err", "msg"),
    [
        (lambda: posviz.apply_rope(torch.randn(4, 8), torch.ones(4, dtype=torch.bool)), TypeError, "real numbers"),
        (lambda: posviz.apply_rope(torch.randn(4, 8), torch.arange(4) * (1 + 1j)), TypeError, "real numbers"),
        (
            lambda: posviz.apply_rope(torch.randn(4, 8), torch.tensor([0.0, 1.0, float("nan"), 3.0])),
            ValueError,
            "positions must be finite",
        ),
        (
            lambda: posviz.apply_rope(torch.randn(4, 8), torch.tensor([0.0, 1.0, float("inf"), 3.0])),
            ValueError,
            "positions must be finite",
        ),
        (
            lambda: posviz.apply_rope(torch.randn(2, 3, 4, 8), torch.arange(4).expand(5, 4)),
            ValueError,
            "batch dims must broadcast",
        ),
        (lambda: posviz.apply_rope(torch.randn(4, 8), [0, 1, 2, 3]), TypeError, "positions must be a torch.Tensor"),
        (lambda: posviz.apply_rope(torch.randn(4, 8), base=10**400), ValueError, "base must be a finite number"),
        (lambda: posviz.apply_rope(torch.randn(4, 8), rotary_dim=3), ValueError, "rotary_dim must be a positive even"),
        (lambda: posviz.apply_rope(torch.randn(4, 8), rotary_dim=10), ValueError, "rotary_dim must be .* <= dim"),
        (lambda: posviz.apply_rope(torch.randn(4, 8), rotary_dim=0), ValueError, "rotary_dim must be >= 1"),
        (lambda: posviz.apply_rope(torch.randn(4, 8), rotary_dim=2.0), TypeError, "rotary_dim must be an integer"),
        (lambda: posviz.apply_rope(torch.randn(4, 9)), ValueError, r"dim \(x.shape\[-1\]\) must be a positive even"),
        (
            lambda: posviz.apply_rope(torch.randn(4, 8), frequencies=torch.ones(3)),
            ValueError,
            "frequencies must hold one value per rotated pair",
        ),
        (
            lambda: posviz.apply_rope(torch.randn(4, 8), frequencies=torch.ones(2, 2)),
            ValueError,
            "frequencies must have",
        ),
        (
            lambda: posviz.apply_rope(torch.randn(4, 8), frequencies=torch.ones(4, dtype=torch.long)),
            TypeError,
            "frequencies must be a floating-point",
        ),
        (
            lambda: posviz.apply_rope(torch.randn(4, 8), frequencies=torch.tensor([1.0, float("nan"), 1.0, 1.0])),
            ValueError,
            "frequencies must be finite",
        ),
        (
            lambda: posviz.apply_rope(torch.randn(4, 8), None, 500.0, frequencies=torch.ones(4)),
            ValueError,
            "either base or frequencies",
        ),
        (lambda: posviz.apply_rope(torch.randn(4, 8), attention_factor=0.0), ValueError, "attention_factor must be"),
    ],
)
def test_bad_positions_and_partial_arguments(call, err, msg):
    with pytest.raises(err, match=msg):
        call()


def test_odd_head_with_even_rotary_dim():
    x = torch.randn(5, 9, dtype=torch.float64)
    torch.testing.assert_close(
        posviz.apply_rope(x, rotary_dim=8), partial_formula(x, 10000.0, "interleaved", 8), rtol=0, atol=1e-12
    )


@pytest.mark.parametrize("layout", ["interleaved", "half"])
@pytest.mark.parametrize("rotary_dim", [None, 4])
def test_apply_rope_is_differentiable(layout, rotary_dim):
    """Gradients flow through both layouts (the half layout's fused out= path is for no-grad inputs
    only) and equal those of the explicit rotation matrix."""
    x = torch.randn(2, 5, 8, dtype=torch.float64, requires_grad=True)
    y = posviz.apply_rope(x, layout=layout, rotary_dim=rotary_dim)
    torch.testing.assert_close(y.detach(), posviz.apply_rope(x.detach(), layout=layout, rotary_dim=rotary_dim))
    assert torch.autograd.gradcheck(lambda t: posviz.apply_rope(t, layout=layout, rotary_dim=rotary_dim), (x,))
