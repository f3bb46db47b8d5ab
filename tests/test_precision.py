"""Low precision: every function that builds a tensor computes in float64 (positions in int64) and
rounds once, so its bfloat16 / float16 result equals the float64 result cast once, at any length.

Models train in bfloat16; positions past 256 (bfloat16) and 2,048 (float16) are where computing
in the requested dtype goes wrong (e.g. ``arange`` in bfloat16 gives neighbouring positions the
same value).
"""

import numpy as np
import pytest
import torch

import posviz

LOW = [torch.bfloat16, torch.float16]
LENGTHS = [300, 2100]  # past bfloat16's and float16's last exactly representable neighbours


def correctly_rounded(exact: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """float64 values rounded once, to nearest with ties to even, to bfloat16 or float16, written
    independently of torch (whose float64 -> 16-bit cast goes through float32 and can round twice):
    numpy's float64 -> float16 conversion, and for bfloat16 (8 significant bits) x = f 2^e with
    0.5 <= |f| < 1, rint(256 f) 2^(e - 8), exact in float64. Returned in float64."""
    x = exact.detach().cpu().numpy()
    if dtype in (torch.float16, torch.float32):
        out = x.astype(np.float16 if dtype == torch.float16 else np.float32).astype(np.float64)
    else:
        assert dtype == torch.bfloat16
        f, e = np.frexp(x)
        normal = np.ldexp(np.rint(f * 256.0), e - 8)
        subnormal = np.ldexp(np.rint(np.ldexp(x, 133)), -133)  # below 2^-126: steps of 2^-133
        out = np.where(np.abs(x) < 2.0**-126, subnormal, normal)
    return torch.from_numpy(out)


def _once(fn, dtype):
    """``fn(dtype)`` against ``fn(float64)`` correctly rounded to ``dtype``: identical values."""
    got, exact = fn(dtype), fn(torch.float64)
    assert got.dtype == dtype
    torch.testing.assert_close(got.cpu().double(), correctly_rounded(exact, dtype), rtol=0, atol=0, equal_nan=True)


def _cast(fn, dtype):
    """``fn(dtype)`` against torch's cast of ``fn(float64)`` (which may round twice, through float32)."""
    got, exact = fn(dtype), fn(torch.float64)
    assert got.dtype == dtype
    torch.testing.assert_close(got, exact.to(dtype), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("heads", [8, 6, 12])
def test_alibi_bias(dtype, length, heads):
    # every distance 0 .. length - 1 occurs in a [length, 17] and a [17, length] bias (the two ways
    # the bias is laid out: more queries than keys, and fewer); the square one at the shorter length
    for q, k in ((length, 17), (17, length), (300, 300)):
        _once(lambda dt, q=q, k=k: posviz.alibi_bias(heads, q, k, dtype=dt), dtype)
    bias = posviz.alibi_bias(heads, length, dtype=dtype)
    # neighbours stay apart: distance 1 is never rounded to 0 (it was in 53% of pairs at 1,100)
    assert torch.all(bias[:, 1:, :-1].diagonal(dim1=-2, dim2=-1) != 0)


@pytest.mark.parametrize("dtype", [*LOW, torch.float32])
@pytest.mark.parametrize("length", LENGTHS)
def test_alibi_bias_with_given_slopes(dtype, length):
    """Slopes that are not powers of two: float32 (distance x slope in float32) would be off too."""
    slopes = torch.tensor([0.3, 1 / 3, 0.07], dtype=torch.float64)
    for q, k in ((length, 17), (5, length)):
        got = posviz.alibi_bias(3, q, k, slopes=slopes, dtype=dtype)
        # the formula in float64, here (not posviz's float64 result): -m_h |i - j|
        exact = -slopes[:, None, None] * (torch.arange(q)[:, None] - torch.arange(k)[None, :]).abs().double()
        assert got.dtype == dtype
        torch.testing.assert_close(got.double(), correctly_rounded(exact, dtype), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("length", LENGTHS)
def test_sinusoidal_encoding(dtype, length):
    _once(lambda dt: posviz.sinusoidal_encoding(length, 64, dtype=dt), dtype)


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("heads", [1, 6, 8, 12])
def test_alibi_slopes(dtype, heads):
    _once(lambda dt: posviz.alibi_slopes(heads, dtype=dt), dtype)


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("dim", [64, 128])
def test_frequencies_and_wavelengths(dtype, dim):
    _once(lambda dt: posviz.rope_frequencies(dim, dtype=dt), dtype)
    _once(lambda dt: posviz.wavelengths(dim, dtype=dt), dtype)


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("position", LENGTHS)
def test_rotation_and_shift_matrices(dtype, position):
    _once(lambda dt: posviz.rope_rotation_matrix(position, 16, dtype=dt), dtype)
    _once(lambda dt: posviz.sinusoidal_shift_matrix(position, 16, dtype=dt), dtype)


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("length", LENGTHS)
def test_phase_coverage(dtype, length):
    _once(lambda dt: posviz.sinusoidal_phase_coverage(length, 64, dtype=dt), dtype)


@pytest.fixture
def default_dtype():
    previous = torch.get_default_dtype()

    def use(dtype):
        torch.set_default_dtype(dtype)

    yield use
    torch.set_default_dtype(previous)


@pytest.mark.parametrize("dtype", [*LOW, torch.float32])
@pytest.mark.parametrize("length", LENGTHS)
def test_functions_of_integer_positions(dtype, length, default_dtype):
    """Integer positions give torch's default dtype (here set to the low one), rounded once."""
    pos = torch.arange(length)
    fns = {
        "rope_angles": lambda: posviz.rope_angles(pos, 32),
        "sinusoidal_offset_similarity": lambda: posviz.sinusoidal_offset_similarity(pos, 32),
        "rope_mean_partial_sum": lambda: posviz.rope_mean_partial_sum(pos, 32),
        "binary_counter_waves": lambda: posviz.binary_counter_waves(pos, 12, smooth=True),
    }
    for name, fn in fns.items():
        default_dtype(torch.float64)
        exact = fn()
        default_dtype(dtype)
        got = fn()
        assert got.dtype == dtype, name
        want = correctly_rounded(exact, dtype) if dtype in LOW else exact.to(dtype)  # float32: one rounding
        torch.testing.assert_close(got.double(), want.double(), rtol=0, atol=0, msg=name)


@pytest.mark.parametrize("dtype", LOW)
def test_alibi_window_helpers_round_once(dtype):
    slopes = torch.tensor([0.5, 1 / 3, 2**-8, 0.0]).to(dtype)  # the slopes as the caller has them

    def in_dtype(dt):
        s = slopes.to(dt)
        return torch.cat([posviz.alibi_distance_weights(s, 2100).flatten(),
                          posviz.alibi_window_mass(s, 300, 2100), posviz.alibi_effective_window(s, 0.9, 2100)])

    _once(in_dtype, dtype)


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_apply_rope_at_long_positions(dtype, layout):
    """apply_rope transforms a tensor (it computes in float32 from float64 tables and rounds to the
    input dtype): within one unit in the last place of the float64 result, at positions past 2,048."""
    x = torch.randn(1, 2, 2100, 32, generator=torch.Generator().manual_seed(0)).to(dtype)
    got = posviz.apply_rope(x, layout=layout).to(torch.float64)
    exact = posviz.apply_rope(x.to(torch.float64), layout=layout)
    ulp = torch.finfo(dtype).eps * exact.abs().clamp(min=torch.finfo(dtype).tiny)
    assert torch.all((got - exact).abs() <= ulp)
