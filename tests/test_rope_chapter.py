"""posviz.rope's chapter functions: rope_angles, rope_complex_view, rope_relative_score and rope_scores.

They are checked against the pair-by-pair RoFormer ``formula`` of ``test_rope.py``, which holds
the tests of apply_rope itself (the formula, the references, the cache, partial rotary).
"""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_rope import formula

import posviz


def test_rope_angles_match_formula():
    d, base = 10, 500.0
    pos = torch.tensor([[0.0, 1.0], [7.0, 1e5]], dtype=torch.float64)
    got = posviz.rope.rope_angles(pos, d, base)
    assert got.shape == (2, 2, d // 2) and got.dtype == torch.float64
    for idx in [(0, 0), (0, 1), (1, 0), (1, 1)]:
        m = pos[idx].item()
        for i in range(d // 2):
            assert got[idx][i].item() == pytest.approx(m * base ** (-2 * i / d), rel=1e-12, abs=0)
    ints = posviz.rope.rope_angles(torch.arange(4), 8)
    assert ints.dtype == torch.float32 and ints.shape == (4, 4)
    assert posviz.rope.rope_angles(3, 4).tolist() == pytest.approx([3.0, 0.03])


@settings(max_examples=30, deadline=None)
@given(m=st.integers(-5000, 5000), n=st.integers(-5000, 5000), half=st.integers(1, 16))
def test_rope_angles_add_up(m, n, half):
    """The angles are linear in the position: phi(m + n) = phi(m) + phi(n) (rotations compose)."""
    a = posviz.rope.rope_angles(torch.tensor([m, n, m + n], dtype=torch.float64), 2 * half)
    torch.testing.assert_close(a[2], a[0] + a[1], rtol=0, atol=1e-9)


@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_complex_view_pairs_and_rotation(layout, device):
    d = 8
    x = torch.arange(2 * d, dtype=torch.float64, device=device).reshape(2, d)
    z = posviz.rope.rope_complex_view(x, layout=layout)
    assert z.shape == (2, d // 2) and z.dtype == torch.complex128 and z.device.type == device.type
    for i in range(d // 2):
        a, b = (2 * i, 2 * i + 1) if layout == "interleaved" else (i, i + d // 2)
        assert z[1, i].item() == complex(x[1, a].item(), x[1, b].item())
    # defining property: in this view RoPE multiplies pair i by e^{i m theta_i}
    y = torch.randn(5, d, dtype=torch.float64, device=device)
    rotated = posviz.apply_rope(y, layout=layout)
    angle = posviz.rope.rope_angles(torch.arange(5, device=device, dtype=torch.float64), d)
    expected = posviz.rope.rope_complex_view(y, layout=layout) * torch.polar(torch.ones_like(angle), angle)
    torch.testing.assert_close(posviz.rope.rope_complex_view(rotated, layout=layout), expected, rtol=0, atol=1e-12)
    assert posviz.rope.rope_complex_view(y.float()).dtype == torch.complex64


@pytest.mark.parametrize("layout", ["interleaved", "half"])
@pytest.mark.parametrize("base", [10000.0, 7.0])
def test_relative_score_equals_rotated_dot_product(layout, base):
    """Re[sum q~ conj(k~) e^{i(m-n)theta}] against the pair-by-pair rotation of the test's `formula`."""
    d = 12
    q, k = torch.randn(d, dtype=torch.float64), torch.randn(d, dtype=torch.float64)
    seq = 9
    rq = formula(q.expand(seq, d).clone(), base, layout)  # row m: q rotated to position m
    rk = formula(k.expand(seq, d).clone(), base, layout)
    offsets = torch.arange(-seq + 1, seq)
    rel = posviz.rope.rope_relative_score(q, k, offsets, base, layout=layout)
    assert rel.shape == (2 * seq - 1,) and rel.dtype == torch.float64
    for m in range(seq):
        for n in range(seq):
            assert rel[m - n + seq - 1].item() == pytest.approx((rq[m] @ rk[n]).item(), abs=1e-12)
    assert rel[seq - 1].item() == pytest.approx((q @ k).item(), abs=1e-12)  # r = 0: no rotation


def test_relative_score_broadcasts_and_takes_real_offsets():
    q, k = torch.randn(3, 1, 8), torch.randn(4, 8)
    rel = posviz.rope.rope_relative_score(q, k, torch.tensor([0.5, 2.0, -3.0]))
    assert rel.shape == (3, 4, 3) and rel.dtype == torch.float32
    one = posviz.rope.rope_relative_score(q[1, 0], k[2], torch.tensor(2.0))
    assert one.shape == () and one.item() == pytest.approx(rel[1, 2, 1].item(), abs=1e-5)


@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_rope_scores_match_formula_and_are_toeplitz(layout, device):
    d, lq, lk, base = 8, 6, 7, 100.0
    q, k = torch.randn(lq, d, dtype=torch.float64), torch.randn(lk, d, dtype=torch.float64)
    got = posviz.rope.rope_scores(q.to(device), k.to(device), base=base, layout=layout, scale=0.5)
    expected = 0.5 * formula(q, base, layout) @ formula(k, base, layout).T
    assert got.shape == (lq, lk) and got.device.type == device.type
    torch.testing.assert_close(got.cpu(), expected, rtol=0, atol=1e-12)
    same = posviz.rope.rope_scores(q[0].expand(lq, d), k[0].expand(lk, d), base=base, layout=layout)
    rel = posviz.rope.rope_relative_score(q[0], k[0], torch.arange(-lk + 1, lq), base, layout=layout)
    for m in range(lq):
        for n in range(lk):
            assert same[m, n].item() == pytest.approx(rel[m - n + lk - 1].item(), abs=1e-12)


def test_rope_scores_shifted_positions_give_the_same_scores():
    q, k = torch.randn(2, 5, 16, dtype=torch.float64), torch.randn(2, 4, 16, dtype=torch.float64)
    s0 = posviz.rope.rope_scores(q, k)
    s1 = posviz.rope.rope_scores(q, k, torch.arange(5) + 1000, torch.arange(4) + 1000)
    torch.testing.assert_close(s0, s1, rtol=0, atol=1e-9)


@pytest.mark.parametrize(
    ("call", "err", "msg"),
    [
        (lambda: posviz.rope.rope_angles("3", 4), TypeError, "positions must be a torch.Tensor or a real number"),
        (lambda: posviz.rope.rope_angles(True, 4), TypeError, "positions must be"),
        (lambda: posviz.rope.rope_angles(float("inf"), 4), ValueError, "positions must be a finite number"),
        (lambda: posviz.rope.rope_angles(torch.ones(2, dtype=torch.bool), 4), TypeError, "real numbers"),
        (lambda: posviz.rope.rope_angles(1.0, 5), ValueError, "dim must be a positive even integer"),
        (lambda: posviz.rope.rope_angles(1.0, 4, base=-1.0), ValueError, "base must be a finite number > 0"),
        (lambda: posviz.rope.rope_complex_view(torch.randn(3, 5)), ValueError, r"dim \(x.shape\[-1\]\)"),
        (lambda: posviz.rope.rope_complex_view(torch.ones(4, dtype=torch.long)), TypeError, "floating-point"),
        (lambda: posviz.rope.rope_complex_view(torch.randn(4), layout="neox"), ValueError, "layout must be one of"),
        (lambda: posviz.rope.rope_complex_view([1.0, 2.0]), TypeError, "x must be a torch.Tensor"),
        (
            lambda: posviz.rope.rope_relative_score(torch.randn(4), torch.randn(6), torch.arange(3)),
            ValueError,
            "same last dim",
        ),
        (
            lambda: posviz.rope.rope_relative_score(torch.randn(4), torch.randn(4), [0, 1]),
            TypeError,
            "offsets must be a torch.Tensor",
        ),
        (
            lambda: posviz.rope.rope_relative_score(torch.randn(4), torch.randn(4), torch.zeros(2, 2)),
            ValueError,
            "offsets must be a 0-D or 1-D",
        ),
        (
            lambda: posviz.rope.rope_relative_score(torch.randn(2, 4), torch.randn(3, 4), torch.arange(2)),
            ValueError,
            "q and k must broadcast",
        ),
        (
            lambda: posviz.rope.rope_relative_score(torch.randn(4), torch.randn(4), torch.arange(2), 0.0),
            ValueError,
            "base must be",
        ),
        (lambda: posviz.rope.rope_scores(torch.randn(3, 4), torch.randn(3, 6)), ValueError, "same last dim"),
        (lambda: posviz.rope.rope_scores(torch.randn(3, 4), "k"), TypeError, "k must be a torch.Tensor"),
        (
            lambda: posviz.rope.rope_scores(torch.randn(3, 4), torch.randn(3, 4), scale=float("nan")),
            ValueError,
            "scale must be a finite number",
        ),
        (
            lambda: posviz.rope.rope_scores(torch.randn(3, 4), torch.randn(3, 4), layout="neox"),
            ValueError,
            "layout must be one of",
        ),
    ],
)
def test_chapter_functions_bad_input(call, err, msg):
    with pytest.raises(err, match=msg):
        call()
