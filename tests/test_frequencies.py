import math

import pytest
import torch

import posviz


def test_rope_frequencies_formula(device):
    d, base = 16, 10000.0
    theta = posviz.rope_frequencies(d, base, device=device, dtype=torch.float64)
    expected = torch.tensor([base ** (-2 * i / d) for i in range(d // 2)], dtype=torch.float64)
    assert theta.device.type == device.type
    torch.testing.assert_close(theta.cpu(), expected, rtol=1e-14, atol=0)


def test_defaults_are_float32():
    assert posviz.rope_frequencies(8, device="cpu").dtype == torch.float32


def test_wavelengths_span_2pi_to_2pi_base():
    lam = posviz.wavelengths(64, 10000.0, device="cpu", dtype=torch.float64)
    assert lam[0].item() == pytest.approx(2 * math.pi)
    assert lam[-1].item() == pytest.approx(2 * math.pi * 10000 ** (62 / 64))
    assert torch.all(lam[1:] > lam[:-1])


@pytest.mark.parametrize("dim", [0, -4, 7])
def test_bad_dim(dim):
    with pytest.raises(ValueError, match="dim must be a positive even integer|dim must be >= 1"):
        posviz.rope_frequencies(dim)


def test_bad_base():
    with pytest.raises(ValueError, match="base must be a finite number > 0"):
        posviz.rope_frequencies(8, base=0)
    with pytest.raises(TypeError, match="base must be a real number"):
        posviz.rope_frequencies(8, base="big")
