import math

import pytest
import torch

import posviz


@pytest.mark.parametrize("d", [16, 12, 6, 10, 24, 96, 130])  # non-powers of two: 2i/d is inexact in bf16
def test_rope_frequencies_formula(device, d):
    base = 10000.0
    theta = posviz.rope_frequencies(d, base, device=device, dtype=torch.float64)
    expected = torch.tensor([base ** (-2 * i / d) for i in range(d // 2)], dtype=torch.float64)
    assert theta.device.type == device.type
    torch.testing.assert_close(theta.cpu(), expected, rtol=1e-14, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_rope_frequencies_are_rounded_once(dtype):
    """Every dtype gets the correctly rounded float64 value (exponents computed in float64, not in dtype)."""
    for d in (12, 24, 100):
        exact = posviz.rope_frequencies(d, 10000.0, dtype=torch.float64)
        assert torch.equal(posviz.rope_frequencies(d, 10000.0, dtype=dtype), exact.to(dtype))


def test_defaults_are_float32():
    assert posviz.rope_frequencies(8, device="cpu").dtype == torch.float32


def test_wavelengths_span_2pi_to_2pi_base():
    lam = posviz.wavelengths(64, 10000.0, device="cpu", dtype=torch.float64)
    assert lam[0].item() == pytest.approx(2 * math.pi)
    assert lam[-1].item() == pytest.approx(2 * math.pi * 10000 ** (62 / 64))
    assert torch.all(lam[1:] > lam[:-1])


@pytest.mark.parametrize("base", [1.0, 0.5, 1e-3])
def test_wavelengths_for_base_at_most_one(base):
    """The docstring's claim: 2pi at i = 0 to 2pi base^((d-2)/d): constant for base 1, shrinking below."""
    d = 10
    lam = posviz.wavelengths(d, base, device="cpu", dtype=torch.float64)
    assert lam[0].item() == pytest.approx(2 * math.pi, rel=1e-15)
    assert lam[-1].item() == pytest.approx(2 * math.pi * base ** ((d - 2) / d), rel=1e-14)
    if base == 1.0:
        assert torch.all(lam == lam[0])
    else:
        assert torch.all(lam[1:] < lam[:-1])


@pytest.mark.parametrize("dim", [0, -4, 7])
def test_bad_dim(dim):
    with pytest.raises(ValueError, match="dim must be a positive even integer|dim must be >= 1"):
        posviz.rope_frequencies(dim)


def test_bad_base():
    with pytest.raises(ValueError, match="base must be a finite number > 0"):
        posviz.rope_frequencies(8, base=0)
    with pytest.raises(ValueError, match="base must be a finite number > 0"):
        posviz.rope_frequencies(8, base=10**400)  # an int past float's range: no bare OverflowError
    with pytest.raises(ValueError, match="base must be a finite number > 0"):
        posviz.wavelengths(8, base=-(10**400))
    with pytest.raises(TypeError, match="base must be a real number"):
        posviz.rope_frequencies(8, base="big")
