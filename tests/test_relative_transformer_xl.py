"""Transformer-XL's relative scores (Dai et al., 2019, §3.3): the four terms by hand, their sum
against the implementation's two products, the global terms, translation invariance, and the
absolute-position terms they replace; bad input. (tests/test_relative.py: the relative positions,
T5's buckets and Shaw's tables.)"""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import posviz


def _sinusoid_by_hand(r: int, dim: int, base: float = 10000.0) -> torch.Tensor:
    """PE(r): sin(r θ_i) in column 2i, cos(r θ_i) in column 2i+1, θ_i = base^(-2i/d); any sign of r."""
    out = torch.empty(dim, dtype=torch.float64)
    for i in range(dim // 2):
        theta = base ** (-2 * i / dim)
        out[2 * i] = math.sin(r * theta)
        out[2 * i + 1] = math.cos(r * theta)
    return out


def _xl_inputs(lq=5, lk=7, d_model=6, d_head=4, d_r=8, batch=()):
    g = torch.Generator().manual_seed(1)

    def rnd(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    return {
        "e_q": rnd(*batch, lq, d_model),
        "e_k": rnd(*batch, lk, d_model),
        "w_q": rnd(d_head, d_model),
        "w_k_e": rnd(d_head, d_model),
        "w_k_r": rnd(d_head, d_r),
        "u": rnd(d_head),
        "v": rnd(d_head),
    }


def test_transformer_xl_terms_by_hand():
    x = _xl_inputs()
    terms = posviz.relative.transformer_xl_scores(**x, base=100.0)
    lq, lk = x["e_q"].shape[0], x["e_k"].shape[0]
    for m in range(lq):
        for n in range(lk):
            e_m, e_n = x["e_q"][m], x["e_k"][n]
            r_mn = _sinusoid_by_hand(m - n, 8, base=100.0)
            q = x["w_q"] @ e_m
            expected = (
                q @ (x["w_k_e"] @ e_n),  # (a)
                q @ (x["w_k_r"] @ r_mn),  # (b)
                x["u"] @ (x["w_k_e"] @ e_n),  # (c)
                x["v"] @ (x["w_k_r"] @ r_mn),  # (d)
            )
            for term, value in zip(terms, expected):
                torch.testing.assert_close(term[m, n], value)


def test_transformer_xl_terms_sum_to_the_implementations_two_products():
    """The official code computes (q + u)·k_E + (q + v)·k_R ("AC + BD"): the same total."""
    x = _xl_inputs(batch=(2, 3))
    terms = posviz.relative.transformer_xl_scores(**x)
    q = x["e_q"] @ x["w_q"].T
    k = x["e_k"] @ x["w_k_e"].T
    lq, lk = q.shape[-2], k.shape[-2]
    k_r = torch.stack(
        [torch.stack([x["w_k_r"] @ _sinusoid_by_hand(m - n, 8) for n in range(lk)]) for m in range(lq)]
    )  # [Lq, Lk, d_head]
    ac = (q + x["u"]) @ k.transpose(-2, -1)
    bd = torch.einsum("...md,mnd->...mn", q + x["v"], k_r)
    assert terms.total.shape == (2, 3, lq, lk)
    torch.testing.assert_close(terms.total, ac + bd)


def test_transformer_xl_global_terms():
    x = _xl_inputs(lq=9, lk=9)
    terms = posviz.relative.transformer_xl_scores(**x)
    # (c) is the same for every query; (d) depends on m - n alone (constant along diagonals)
    assert torch.allclose(terms.c, terms.c[:1].expand_as(terms.c))
    for offset in range(-8, 9):
        diag = torch.diagonal(terms.d, offset)
        assert torch.allclose(diag, diag[:1].expand_as(diag))
    # u = v = 0 removes the global terms; W_{k,R} = 0 removes every position term
    zero = posviz.relative.transformer_xl_scores(
        **{**x, "u": torch.zeros(4, dtype=torch.float64), "v": torch.zeros(4, dtype=torch.float64)}
    )
    assert torch.count_nonzero(zero.c) == 0 and torch.count_nonzero(zero.d) == 0
    torch.testing.assert_close(zero.a, terms.a)
    torch.testing.assert_close(zero.b, terms.b)
    no_pos = posviz.relative.transformer_xl_scores(**{**x, "w_k_r": torch.zeros(4, 8, dtype=torch.float64)})
    assert torch.count_nonzero(no_pos.b) == 0 and torch.count_nonzero(no_pos.d) == 0


@settings(max_examples=20, deadline=None)
@given(shift=st.integers(0, 50), length=st.integers(1, 8))
def test_transformer_xl_is_translation_invariant(shift, length):
    """The same tokens placed at positions shift..shift+L-1 of a longer input get the same scores."""
    x = _xl_inputs(lq=shift + length, lk=shift + length)
    long = posviz.relative.transformer_xl_scores(**x)
    short = posviz.relative.transformer_xl_scores(**{**x, "e_q": x["e_q"][shift:], "e_k": x["e_k"][shift:]})
    for a, b in zip(long, short):
        torch.testing.assert_close(a[shift:, shift:], b)


def test_absolute_terms_by_hand_and_their_sum():
    g = torch.Generator().manual_seed(2)
    e_q, e_k = torch.randn(2, 4, 6, generator=g), torch.randn(2, 5, 6, generator=g)
    p_q, p_k = torch.randn(4, 6, generator=g), torch.randn(5, 6, generator=g)
    w_q, w_k = torch.randn(3, 6, generator=g), torch.randn(3, 6, generator=g)
    terms = posviz.relative.absolute_score_terms(e_q, e_k, p_q, p_k, w_q, w_k)
    full = ((e_q + p_q) @ w_q.T) @ ((e_k + p_k) @ w_k.T).transpose(-2, -1)  # q_m . k_n
    torch.testing.assert_close(terms.total, full)
    m, n = 3, 1
    torch.testing.assert_close(terms.b[1, m, n], e_q[1, m] @ w_q.T @ w_k @ p_k[n])
    torch.testing.assert_close(terms.c[1, m, n], p_q[m] @ w_q.T @ w_k @ e_k[1, n])
    torch.testing.assert_close(terms.d[0, m, n], p_q[m] @ w_q.T @ w_k @ p_k[n])
    # absolute encodings are not translation invariant: shifting the positions changes (d)
    pe = posviz.sinusoidal_encoding(12, 6, device="cpu")
    d0 = posviz.relative.absolute_score_terms(e_q, e_q, pe[:4], pe[:4], w_q, w_k).d
    d5 = posviz.relative.absolute_score_terms(e_q, e_q, pe[5:9], pe[5:9], w_q, w_k).d
    assert not torch.allclose(d0, d5)


@pytest.mark.parametrize(
    ("change", "err", "msg"),
    [
        ({"w_k_r": torch.randn(4, 7, dtype=torch.float64)}, ValueError, "w_k_r.shape.*even"),
        ({"u": torch.randn(5, dtype=torch.float64)}, ValueError, r"u.shape\[-1\] must equal"),
        ({"v": torch.randn(2, 4, dtype=torch.float64)}, ValueError, "v must have 1 dimension"),
        ({"e_k": torch.randn(7, 5, dtype=torch.float64)}, ValueError, r"e_k.shape\[-1\] must equal"),
        ({"w_k_e": torch.randn(3, 6, dtype=torch.float64)}, ValueError, "w_k_e and w_k_r must have d_head"),
        ({"e_q": torch.arange(30).reshape(5, 6)}, TypeError, "e_q must be a floating-point tensor"),
        ({"u": [1.0, 2.0, 3.0, 4.0]}, TypeError, "u must be a torch.Tensor"),
        ({"e_q": torch.randn(6, dtype=torch.float64)}, ValueError, "e_q must have shape"),
        (
            {"e_q": torch.randn(4, 5, 6, dtype=torch.float64), "e_k": torch.randn(3, 7, 6, dtype=torch.float64)},
            ValueError,
            "do not broadcast",
        ),
    ],
)
def test_transformer_xl_bad_input(change, err, msg):
    with pytest.raises(err, match=msg):
        posviz.relative.transformer_xl_scores(**{**_xl_inputs(), **change})
    with pytest.raises(ValueError, match="base must be a finite number > 0"):
        posviz.relative.transformer_xl_scores(**_xl_inputs(), base=0.0)


def test_absolute_terms_bad_input():
    e, w = torch.randn(4, 6), torch.randn(3, 6)
    with pytest.raises(ValueError, match="p_q must have one row per query"):
        posviz.relative.absolute_score_terms(e, e, torch.randn(3, 6), e, w, w)
    with pytest.raises(ValueError, match="w_q and w_k must have the same number of rows"):
        posviz.relative.absolute_score_terms(e, e, e, e, w, torch.randn(2, 6))
    with pytest.raises(ValueError, match=r"w_k.shape\[-1\] must equal"):
        posviz.relative.absolute_score_terms(e, e, e, e, w, torch.randn(3, 5))
