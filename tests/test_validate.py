import pytest
import torch

import posviz
from posviz._validate import check_even_dim, check_fits_in_memory, check_int, check_positive, resolve


def test_default_device_matches_cuda_availability():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert posviz.default_device().type == expected


def test_resolve_defaults_to_float32_on_default_device():
    device, dtype = resolve(None, None)
    assert dtype == torch.float32 and device == posviz.default_device()


@pytest.mark.parametrize("bad", [1.5, "3", None, True])
def test_check_int_rejects_non_integers(bad):
    with pytest.raises(TypeError, match="length must be an integer"):
        check_int("length", bad)


def test_check_int_names_range():
    with pytest.raises(ValueError, match=r"length must be >= 0, got -1"):
        check_int("length", -1, minimum=0)
    with pytest.raises(ValueError, match=r"n must be in \[1, 4\], got 5"):
        check_int("n", 5, minimum=1, maximum=4)


@pytest.mark.parametrize("bad", [0, -2, 3])
def test_check_even_dim(bad):
    with pytest.raises(ValueError, match="dim must be"):
        check_even_dim("dim", bad)


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan")])
def test_check_positive(bad):
    with pytest.raises(ValueError, match="base must be a finite number > 0"):
        check_positive("base", bad)


def test_resolve_rejects_integer_dtype_and_bad_device():
    with pytest.raises(TypeError, match="dtype must be a floating-point"):
        resolve("cpu", torch.int64)
    with pytest.raises(ValueError, match="device must be"):
        resolve("not-a-device", None)


def test_memory_check_refuses_before_allocating():
    with pytest.raises(ValueError, match=r"needs .*PiB but only .* is free"):
        check_fits_in_memory("attention map", (10**6, 10**6, 10**3), torch.float32, torch.device("cpu"))
