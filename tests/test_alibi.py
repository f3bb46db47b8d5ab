import math

import pytest
import torch

import posviz

TRANSFORMERS = "transformers is a test extra (the reference implementation): pip install -e '.[test]'"


def test_power_of_two_slopes_are_the_papers():
    torch.testing.assert_close(
        posviz.alibi_slopes(8, device="cpu", dtype=torch.float64),
        torch.tensor([2.0**-k for k in range(1, 9)], dtype=torch.float64),
    )
    # geometric: start 2^(-8/n), ratio 2^(-8/n)
    s = posviz.alibi_slopes(16, device="cpu", dtype=torch.float64)
    torch.testing.assert_close(s[0], torch.tensor(2 ** (-8 / 16), dtype=torch.float64))
    torch.testing.assert_close(s[1:] / s[:-1], torch.full((15,), 2 ** (-8 / 16), dtype=torch.float64))


def test_non_power_of_two_follows_the_authors_rule_and_is_not_monotone():
    six = posviz.alibi_slopes(6, device="cpu", dtype=torch.float64)
    torch.testing.assert_close(six, torch.tensor([1 / 4, 1 / 16, 1 / 64, 1 / 256, 1 / 2, 1 / 8], dtype=torch.float64))
    twelve = posviz.alibi_slopes(12, device="cpu", dtype=torch.float64)
    assert not torch.all(twelve[1:] < twelve[:-1])


@pytest.mark.parametrize("heads", [1, 2, 3, 5, 6, 8, 12, 16, 20, 32, 40])
def test_slopes_match_transformers_bloom(heads):
    pytest.importorskip("transformers", reason=TRANSFORMERS)
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    mask = torch.ones(1, 2)
    ref = build_alibi_tensor(mask, heads, torch.float32)[:, 0, 1]  # slope * position 1
    torch.testing.assert_close(posviz.alibi_slopes(heads, device="cpu"), ref)


def test_bias_formula(device):
    h, q, k = 4, 5, 7
    slopes = posviz.alibi_slopes(h, device=device)
    bias = posviz.alibi_bias(h, q, k, device=device)
    assert bias.shape == (h, q, k) and bias.device.type == device.type
    for hh in range(h):
        for i in range(q):
            for j in range(k):
                assert bias[hh, i, j].item() == pytest.approx(-slopes[hh].item() * abs(i - j))


def test_bias_with_custom_slopes_and_default_key_len():
    bias = posviz.alibi_bias(2, 3, slopes=torch.tensor([1.0, 0.5]), device="cpu")
    assert bias.shape == (2, 3, 3)
    assert bias[1, 2, 0].item() == -1.0


def test_bias_gives_same_attention_as_bloom_style_m_times_j():
    """Softmax ignores a per-row constant: -m(i-j) and +m*j give the same causal attention."""
    pytest.importorskip("transformers", reason=TRANSFORMERS)
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    h, n, d = 8, 12, 16
    q, k = torch.randn(h, n, d), torch.randn(h, n, d)
    ours = posviz.attention_weights(q, k, bias=posviz.alibi_bias(h, n, device="cpu"), causal=True)
    bloom_bias = build_alibi_tensor(torch.ones(1, n), h, torch.float32)  # [h, 1, n]: m_h * j
    theirs = posviz.attention_weights(q, k, bias=bloom_bias, causal=True)
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("args", "kwargs", "err", "msg"),
    [
        ((0, 4), {}, ValueError, "num_heads must be >= 1"),
        ((2, -1), {}, ValueError, "query_len must be >= 0"),
        ((2, 3, -4), {}, ValueError, "key_len must be >= 0"),
        ((2, 3), {"slopes": torch.ones(3)}, ValueError, r"slopes must have shape \[2\] \(one per head\)"),
        ((2, 3), {"slopes": torch.tensor([0.5, -0.1])}, ValueError, "slopes must be finite and >= 0"),
        ((2, 3), {"slopes": torch.tensor([0.5, float("nan")])}, ValueError, "slopes must be finite and >= 0"),
        ((2, 3), {"slopes": torch.tensor([0.5, float("inf")])}, ValueError, "slopes must be finite and >= 0"),
        ((2, 3), {"slopes": torch.tensor([True, False])}, TypeError, "slopes must be a real tensor"),
        ((2, 3), {"slopes": [1.0, 2.0]}, TypeError, "slopes must be a torch.Tensor"),
        ((64, 10**6), {}, ValueError, "ALiBi bias .* needs"),
    ],
)
def test_bias_bad_input(args, kwargs, err, msg):
    with pytest.raises(err, match=msg):
        posviz.alibi_bias(*args, **kwargs, device="cpu")


def test_slopes_bad_input():
    with pytest.raises(ValueError, match="num_heads must be >= 1"):
        posviz.alibi_slopes(0)
    with pytest.raises(TypeError, match="num_heads must be an integer"):
        posviz.alibi_slopes(2.0)


# --- the attention that the bias alone produces (equal q.k): weights, mass and window by distance ---


def _bias_only_last_row(slopes: torch.Tensor, length: int) -> torch.Tensor:
    """Weights of the last causal row from posviz.attention with zero q and k, by distance d = i - j."""
    h = slopes.shape[0]
    zeros = torch.zeros(h, length, 4, dtype=torch.float64)
    bias = posviz.alibi_bias(h, length, slopes=slopes, device="cpu", dtype=torch.float64)
    weights = posviz.attention_weights(zeros, zeros, bias=bias, causal=True)
    return weights[:, -1, :].flip(-1)  # key j = L - 1 - d


@pytest.mark.parametrize("length", [1, 2, 7, 64])
def test_distance_weights_are_the_bias_only_attention_row(length):
    slopes = torch.cat([posviz.alibi_slopes(8, device="cpu", dtype=torch.float64), torch.tensor([0.0, 3.0])])
    got = posviz.alibi.alibi_distance_weights(slopes, length)
    assert got.shape == (10, length) and got.dtype == torch.float64
    torch.testing.assert_close(got, _bias_only_last_row(slopes, length))
    # the closed form, written independently: e^{-m d} (1 - e^{-m}) / (1 - e^{-mL}); 1/L when m = 0
    d = torch.arange(length, dtype=torch.float64)
    for m, row in zip(slopes.tolist(), got):
        if m == 0:
            expected = torch.full((length,), 1 / length, dtype=torch.float64)
        else:
            expected = torch.exp(-m * d) * (1 - math.exp(-m)) / (1 - math.exp(-m * length))
        torch.testing.assert_close(row, expected)


def test_distance_weights_keep_dtype_and_accept_a_number():
    w = posviz.alibi.alibi_distance_weights(posviz.alibi_slopes(4, device="cpu"), 5)
    assert w.dtype == torch.float32 and w.shape == (4, 5)
    torch.testing.assert_close(w.sum(-1), torch.ones(4))
    one = posviz.alibi.alibi_distance_weights(0.5, 3)
    assert one.shape == (3,) and one[0] > one[1] > one[2]


@pytest.mark.parametrize("length", [1, 5, 100, None])
def test_window_mass_is_the_cumulative_attention(length):
    slopes = torch.tensor([0.0, 1 / 256, 1 / 16, 0.5, 4.0], dtype=torch.float64)
    windows = torch.arange(0, 120)
    got = posviz.alibi.alibi_window_mass(slopes[:, None], windows[None, :], length)
    if length is None:
        # an unbounded row: 1 - e^{-m(w+1)}, compared with a very long row's cumulative weights
        expected = 1 - torch.exp(-slopes[:, None] * (windows[None, :] + 1))
        torch.testing.assert_close(got, expected)
        very_long = posviz.alibi.alibi_window_mass(slopes[1:, None], windows[None, :], 10**6)
        torch.testing.assert_close(got[1:], very_long)  # the limit L -> infinity
        assert torch.all(got[0] == 0)
    else:
        cum = _bias_only_last_row(slopes, length).cumsum(-1)
        expected = cum[:, windows.clamp(max=length - 1)]
        torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("mass", [0.5, 0.9, 0.99, 1.0])
@pytest.mark.parametrize("length", [1, 3, 50, 300])
def test_effective_window_is_the_smallest_distance_holding_the_mass(mass, length):
    slopes = torch.tensor([0.0, 1e-6, 1 / 256, 0.01, 1 / 16, 0.5, 2.0, 50.0], dtype=torch.float64)
    w = posviz.alibi.alibi_effective_window(slopes, mass, length)
    cum = _bias_only_last_row(slopes, length).cumsum(-1)
    for h in range(len(slopes)):
        k = int(w[h])
        assert w[h] == k and 0 <= k <= length - 1
        assert cum[h, k] >= mass - 1e-12  # holds the mass ...
        if mass == 1.0:
            assert k == length - 1  # every key carries some weight (the sum may round to 1 earlier)
        elif k > 0:
            assert cum[h, k - 1] < mass  # ... and one step shorter does not


def test_effective_window_unbounded_row_and_the_ln10_rule():
    slopes = posviz.alibi_slopes(8, device="cpu", dtype=torch.float64)
    w = posviz.alibi.alibi_effective_window(slopes)  # mass 0.9, unbounded
    torch.testing.assert_close(w, torch.ceil(math.log(10) / slopes) - 1)
    assert w.tolist() == [4, 9, 18, 36, 73, 147, 294, 589]
    assert torch.all((w - math.log(10) / slopes).abs() <= 1)  # ~ ln(10) / m
    assert posviz.alibi.alibi_effective_window(0.0).item() == math.inf
    assert posviz.alibi.alibi_effective_window(0.1, 1.0).item() == math.inf
    # a finite row shrinks the gentle heads' windows (their mass is shared by fewer keys)
    capped = posviz.alibi.alibi_effective_window(slopes, 0.9, 512)
    assert capped.tolist() == [4, 9, 18, 36, 73, 147, 275, 385]


def test_effective_window_keeps_shape_device_and_dtype(device):
    slopes = posviz.alibi_slopes(12, device=device).reshape(3, 4)
    w = posviz.alibi.alibi_effective_window(slopes, length=100)
    assert w.shape == (3, 4) and w.dtype == torch.float32 and w.device.type == device.type


@pytest.mark.parametrize(
    ("call", "err", "msg"),
    [
        (lambda a: a.alibi_effective_window(torch.tensor([0.5, -0.1])), ValueError, "slopes must be finite and >= 0"),
        (lambda a: a.alibi_effective_window(float("nan")), ValueError, "slopes must be finite and >= 0"),
        (lambda a: a.alibi_effective_window([0.5]), TypeError, "slopes must be a torch.Tensor or a real number"),
        (lambda a: a.alibi_effective_window(0.5, 0.0), ValueError, r"mass must be in \(0, 1\]"),
        (lambda a: a.alibi_effective_window(0.5, 1.5), ValueError, r"mass must be in \(0, 1\]"),
        (lambda a: a.alibi_effective_window(0.5, "0.9"), TypeError, "mass must be a real number"),
        (lambda a: a.alibi_effective_window(0.5, 0.9, 0), ValueError, "length must be >= 1"),
        (lambda a: a.alibi_effective_window(0.5, 0.9, 2.5), TypeError, "length must be an integer"),
        (lambda a: a.alibi_window_mass(0.5, -1), ValueError, "window must be an integer >= 0"),
        (lambda a: a.alibi_window_mass(0.5, torch.tensor([1.5])), ValueError, "window must be an integer >= 0"),
        (lambda a: a.alibi_window_mass(0.5, 1.0), TypeError, "window must be an integer or a torch.Tensor"),
        (lambda a: a.alibi_window_mass(0.5, 3, -2), ValueError, "length must be >= 1"),
        (lambda a: a.alibi_distance_weights(0.5, 0), ValueError, "length must be >= 1"),
        (lambda a: a.alibi_distance_weights(-1.0, 4), ValueError, "slopes must be finite and >= 0"),
        (lambda a: a.alibi_distance_weights(torch.ones(64), 10**12), ValueError, "ALiBi distance weights .* needs"),
    ],
)
def test_window_functions_bad_input(call, err, msg):
    with pytest.raises(err, match=msg):
        call(posviz.alibi)


# --- exactness: slopes, layout, autograd, the window's boundary --------------------------------


def _exact_slopes(heads: int) -> list:
    """The authors' rule in exact arithmetic (60 digits): with P = 2^floor(log2 H), the P slopes
    2^(-8h/P), then the odd-numbered slopes 2^(-8h/2P) of the next power of two."""
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 60
        p = 2 ** (heads.bit_length() - 1)
        exact = [Decimal(2) ** (Decimal(-8 * h) / p) for h in range(1, p + 1)]
        exact += [Decimal(2) ** (Decimal(-8 * h) / (2 * p)) for h in range(1, 2 * p, 2)][: heads - p]
        return exact


@pytest.mark.parametrize("heads", [3, 5, 6, 7, 12, 16, 20, 24, 40, 48, 64])
def test_slopes_are_float64_accurate(heads):
    """Non-power-of-two head counts (and 16, 64: slopes that are not powers of two) within a few
    float64 units of the exact values: float32 anywhere on the way is 1e7 times further off."""
    from decimal import Decimal

    got = posviz.alibi_slopes(heads, device="cpu", dtype=torch.float64).tolist()
    for h, (a, b) in enumerate(zip(got, _exact_slopes(heads))):
        assert abs(Decimal(a) - b) / b < Decimal("4e-15"), (heads, h, a)


@pytest.mark.parametrize(("q", "k"), [(7, 5), (5, 7), (1, 9), (9, 1), (6, 6), (1, 1), (0, 4), (4, 0)])
def test_bias_layout_every_shape_is_the_formula(q, k):
    slopes = torch.tensor([0.3, 1 / 3, 2.0**-0.5], dtype=torch.float64)
    bias = posviz.alibi_bias(3, q, k, slopes=slopes, device="cpu", dtype=torch.float64)
    i, j = torch.arange(q)[:, None], torch.arange(k)[None, :]
    assert bias.shape == (3, q, k) and bias.is_contiguous()
    torch.testing.assert_close(bias, -slopes[:, None, None] * (i - j).abs().double(), rtol=0, atol=0)


@pytest.mark.parametrize(("dtype", "slope", "rounded"), [
    (torch.bfloat16, 1 + 2**-8 + 2**-30, 1 + 2**-7),  # just past a bfloat16 tie: float32 lands on it
    (torch.float16, 1 + 2**-11 + 2**-40, 1 + 2**-10),
    (torch.bfloat16, 1 + 2**-8 - 2**-30, 1.0),
])
def test_bias_is_rounded_once_not_through_float32(dtype, slope, rounded):
    """torch's float64 -> 16-bit cast rounds to float32 first, and rounding twice can be wrong."""
    bias = posviz.alibi_bias(1, 2, slopes=torch.tensor([slope], dtype=torch.float64), device="cpu", dtype=dtype)
    assert bias[0, 1, 0].item() == -rounded and bias[0, 0, 1].item() == -rounded


@pytest.mark.parametrize(("q", "k"), [(4, 3), (3, 4)])
def test_bias_keeps_the_slopes_autograd(q, k):
    """Given slopes are not detached: a learned-slope model gets their gradient, dB/dm_h = -|i - j|."""
    slopes = torch.tensor([0.5, 0.25], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda m: posviz.alibi_bias(2, q, k, slopes=m, device="cpu",
                                                                 dtype=torch.float64), (slopes,))
    bias = posviz.alibi_bias(2, q, k, slopes=slopes, device="cpu", dtype=torch.float32)
    bias.sum().backward()
    i, j = torch.arange(q)[:, None], torch.arange(k)[None, :]
    torch.testing.assert_close(slopes.grad, -(i - j).abs().sum().double().expand(2))
    m = torch.tensor([0.5, 0.1], requires_grad=True)
    posviz.alibi_distance_weights(m, 5)[:, 0].sum().backward()
    assert torch.all(m.grad > 0)  # a steeper slope puts more weight on distance 0


def test_window_helpers_and_the_bias_share_one_slope_check(monkeypatch):
    calls = []
    check = posviz.alibi.check_slopes
    monkeypatch.setattr(posviz.alibi, "check_slopes", lambda *a, **kw: calls.append(1) or check(*a, **kw))
    posviz.alibi_bias(2, 3, slopes=torch.tensor([0.5, 0.1]))
    posviz.alibi_distance_weights(0.5, 3)
    posviz.alibi_window_mass(0.5, 3)
    posviz.alibi_effective_window(0.5)
    assert len(calls) == 4
    for bad in (torch.tensor([0.5, -0.1]), torch.tensor([0.5, float("nan")])):
        with pytest.raises(ValueError, match="slopes must be finite and >= 0"):
            posviz.alibi_bias(2, 3, slopes=bad)
        with pytest.raises(ValueError, match="slopes must be finite and >= 0"):
            posviz.alibi_window_mass(bad, 3)
    ints = posviz.alibi_bias(2, 3, slopes=torch.tensor([1, 0]), device="cpu")
    assert ints.dtype == torch.float32 and ints[0, 2, 0].item() == -2 and torch.all(ints[1] == 0)


def test_effective_window_at_an_exact_decimal_boundary():
    """0.07 x 100 = 7.000000000000001 in floating point: a uniform row of 100 keys holds 7 % within
    distance 6 (7 keys), so the window is 6, not 7; likewise for every p = 0.01 .. 0.99."""
    from fractions import Fraction

    assert 0.07 * 100 == 7.000000000000001
    assert posviz.alibi_effective_window(0.0, 0.07, 100).item() == 6
    for length in (100, 1000):
        for cent in range(1, 100):
            p = cent / 100
            expected = math.ceil(Fraction(cent, 100) * length) - 1
            w = int(posviz.alibi_effective_window(torch.tensor(0.0, dtype=torch.float64), p, length))
            assert w == expected, (p, length)
            mass = posviz.alibi_window_mass(torch.tensor(0.0, dtype=torch.float64), w, length)
            assert mass >= p and (w == 0 or posviz.alibi_window_mass(0.0, w - 1, length) < p)
    # a slope whose boundary is exact: 1 - e^{-m (w+1)} = 0.75 at w + 1 = 2 for m = ln 2
    assert posviz.alibi_effective_window(math.log(2), 0.75).item() == 1
