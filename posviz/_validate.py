"""Argument checks shared by every public function.

Each check raises ``TypeError`` or ``ValueError`` whose message names the argument and the
allowed range, so that a reader who drags a slider to a bad value sees a sentence, not a
torch traceback.
"""

from __future__ import annotations

import math
import numbers
import os

import torch

__all__ = [
    "check_even_dim",
    "check_fits_in_memory",
    "check_float_dtype",
    "check_int",
    "check_positive",
    "default_device",
    "resolve",
]


def default_device() -> torch.device:
    """CUDA when a GPU is available, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def check_int(name: str, value: object, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as an ``int`` or raise naming ``name`` and the allowed range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_floating_point():
            value = int(value.item())
        else:
            raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    value = int(value)
    if minimum is not None and value < minimum:
        rng = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise ValueError(f"{name} must be {rng}, got {value}")
    if maximum is not None and value > maximum:
        rng = f"<= {maximum}" if minimum is None else f"in [{minimum}, {maximum}]"
        raise ValueError(f"{name} must be {rng}, got {value}")
    return value


def check_even_dim(name: str, value: object) -> int:
    """A model dimension that is split into 2-D pairs: a positive even integer."""
    value = check_int(name, value, minimum=1)
    if value % 2:
        raise ValueError(
            f"{name} must be a positive even integer (dimensions come in (sin, cos) / rotation "
            f"pairs), got {value}"
        )
    return value


def check_positive(name: str, value: object) -> float:
    """A finite real number > 0 (e.g. the frequency base)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number > 0, got {value!r} ({type(value).__name__})")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


def check_float_dtype(name: str, dtype: torch.dtype) -> torch.dtype:
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating-point torch.dtype (e.g. torch.float32), got {dtype!r}")
    return dtype


def resolve(device: torch.device | str | None, dtype: torch.dtype | None) -> tuple[torch.device, torch.dtype]:
    """Apply the library's defaults: ``default_device()`` and ``torch.float32``."""
    try:
        device = default_device() if device is None else torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"device must be a torch device such as 'cpu' or 'cuda', got {device!r}") from err
    dtype = torch.float32 if dtype is None else check_float_dtype("dtype", dtype)
    return device, dtype


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """Elementwise work runs in float64 for float64 inputs, else in float32 (then cast back)."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def table_dtype(device: torch.device) -> torch.dtype:
    """Angles ``p * theta_i`` and their sin/cos are built in float64 (then cast), so a float32
    table is correctly rounded even at large positions. MPS has no float64."""
    return torch.float32 if device.type == "mps" else torch.float64


def _free_bytes(device: torch.device) -> int:
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 8 * 2**30


def _human(nbytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if nbytes < 1024 or unit == "PiB":
            return f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    return f"{nbytes:.1f} PiB"  # pragma: no cover


def check_fits_in_memory(
    what: str, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device, copies: int = 1
) -> None:
    """Refuse, before allocating, a tensor (times ``copies`` working buffers) that cannot fit."""
    numel = math.prod(shape)
    itemsize = torch.empty((), dtype=dtype).element_size()
    need = numel * itemsize * copies
    free = _free_bytes(device)
    if need > free:
        raise ValueError(
            f"{what} of shape {list(shape)} ({dtype}, x{copies} working copies) needs "
            f"{_human(need)} but only {_human(free)} is free on {device}; use a shorter "
            f"length or fewer heads"
        )
