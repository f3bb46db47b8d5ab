"""Argument checks and the device/dtype rules shared by every public function.

Each check raises ``TypeError`` (wrong kind of value) or ``ValueError`` (right kind, wrong value)
whose message names the argument and the allowed range, so that a reader who drags a slider to a
bad value sees a sentence, not a torch traceback.

**Device and dtype rule.** A function that builds a tensor from Python numbers puts it on
``device`` and gives it ``dtype`` when they are passed, and otherwise follows torch's own
defaults, exactly like ``torch.zeros``: ``torch.get_default_device()`` (the CPU unless
``torch.set_default_device`` changed it) and ``torch.get_default_dtype()`` (``float32`` unless
``torch.set_default_dtype`` changed it). A function that takes tensors returns results on their
device, in their dtype. Values are computed in float64 (integer positions in int64) and rounded
**once** to the requested dtype, so a bfloat16 or float16 result is the correctly rounded float64
value (MPS, which has no float64, computes in float32). Rounding once needs :func:`round_once`:
torch's own float64 -> bfloat16/float16 cast rounds twice, through float32.
"""

from __future__ import annotations

import math
import numbers
import os
import sys

import torch

__all__ = [
    "check_even_dim",
    "check_fits_in_memory",
    "check_float_dtype",
    "check_int",
    "check_positive",
    "check_real",
    "check_same_dtype_device",
    "check_tensor",
    "default_device",
    "default_dtype",
    "exact_dtype",
    "resolve",
    "round_once",
]


def default_device() -> torch.device:
    """The device torch creates tensors on by default (``torch.set_default_device``; else the CPU).

    posviz never moves work to a GPU on its own: pass ``device="cuda"`` (or set torch's default
    device) to build tensors there; functions that take tensors follow their device.
    """
    getter = getattr(torch, "get_default_device", None)  # torch >= 2.3
    if getter is not None:
        return torch.device(getter())
    return torch.empty(()).device  # pragma: no cover - older torch


def default_dtype() -> torch.dtype:
    """The floating dtype torch creates tensors in by default (``torch.set_default_dtype``)."""
    return torch.get_default_dtype()


def check_int(name: str, value: object, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as an ``int`` or raise naming ``name`` and the allowed range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if (
            isinstance(value, torch.Tensor)
            and value.numel() == 1
            and not value.is_floating_point()
            and value.dtype != torch.bool
            and not value.is_complex()
        ):
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
            f"{name} must be a positive even integer (dimensions come in (sin, cos) / rotation pairs), got {value}"
        )
    return value


def check_real(name: str, value: object, *, positive: bool = False) -> float:
    """A finite real number (a Python number, not a bool); ``positive``: also > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        what = "a real number > 0" if positive else "a real number"
        raise TypeError(f"{name} must be {what}, got {value!r} ({type(value).__name__})")
    try:
        value = float(value)
    except OverflowError:  # an int or a Fraction past float's range, e.g. 10**400
        raise ValueError(
            f"{name} must be a finite number{' > 0' if positive else ''}, got a value ({type(value).__name__}) "
            f"beyond float64's range (|x| <= {sys.float_info.max:.4g})"
        ) from None
    if not math.isfinite(value) or (positive and value <= 0):
        raise ValueError(f"{name} must be a finite number{' > 0' if positive else ''}, got {value}")
    return value


def check_positive(name: str, value: object) -> float:
    """A finite real number > 0 (e.g. the frequency base)."""
    return check_real(name, value, positive=True)


def check_float_dtype(name: str, dtype: object) -> torch.dtype:
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating-point torch.dtype (e.g. torch.float32), got {dtype!r}")
    return dtype


def check_tensor(
    name: str,
    t: object,
    *,
    floating: bool = True,
    min_dim: int = 0,
    ndim: int | None = None,
    shape_hint: str = "",
) -> torch.Tensor:
    """A ``torch.Tensor`` (floating point unless ``floating=False``) with at least ``min_dim``
    dims (exactly ``ndim`` when given)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if floating and not t.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {t.dtype}")
    if ndim is not None and t.dim() != ndim:
        hint = f" {shape_hint}" if shape_hint else ""
        raise ValueError(f"{name} must have {ndim} dimension(s){hint}, got shape {list(t.shape)}")
    if t.dim() < min_dim:
        hint = shape_hint or f"at least {min_dim} dims"
        raise ValueError(f"{name} must have shape {hint}, got {list(t.shape)}")
    return t


def check_same_dtype_device(**tensors: torch.Tensor) -> None:
    """Tensors that are combined share one dtype and one device (as ``torch.matmul`` requires)."""
    items = [(n, t) for n, t in tensors.items() if t is not None]
    if not items:
        return
    first_name, first = items[0]
    for name, t in items[1:]:
        if t.dtype != first.dtype:
            raise TypeError(f"{name} must have {first_name}'s dtype {first.dtype}, got {t.dtype}; cast it with .to()")
        if t.device != first.device:
            raise ValueError(
                f"{name} must be on {first_name}'s device {first.device}, got {t.device}; move it with .to()"
            )


def resolve(device: torch.device | str | None, dtype: torch.dtype | None) -> tuple[torch.device, torch.dtype]:
    """Apply the library's defaults: torch's default device and default dtype."""
    try:
        device = default_device() if device is None else torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"device must be a torch device such as 'cpu' or 'cuda', got {device!r}") from err
    check_device_available(device)
    dtype = default_dtype() if dtype is None else check_float_dtype("dtype", dtype)
    return device, dtype


def check_device_available(device: torch.device, name: str = "device") -> torch.device:
    """A CUDA or MPS device that this machine has (torch would fail later with an AssertionError
    or a RuntimeError that does not name the argument)."""
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ValueError(f"{name} {str(device)!r} is not available: this machine has no CUDA device; use 'cpu'")
        if device.index is not None and device.index >= count:
            raise ValueError(
                f"{name} {str(device)!r} is not available: this machine has {count} CUDA device(s), "
                f"cuda:0 to cuda:{count - 1}"
            )
    elif device.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ValueError(f"{name} {str(device)!r} is not available on this machine; use 'cpu'")
    return device


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """Elementwise work runs in float64 for float64 inputs, else in float32 (then cast back)."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def exact_dtype(device: torch.device) -> torch.dtype:
    """Tables (angles ``p * theta_i``, their sin/cos, distances times slopes) are built in float64
    and rounded once to the requested dtype, so a float32, float16 or bfloat16 table is correctly
    rounded even at large positions. MPS has no float64."""
    return torch.float32 if device.type == "mps" else torch.float64


table_dtype = exact_dtype  # the name the modules used first

_HALF = (torch.bfloat16, torch.float16)


def _round_once_values(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    r32 = x.to(torch.float32)  # round to nearest: correct, but rounding it again to 16 bits may not be
    back = r32.to(torch.float64)
    bits = r32.view(torch.int32)
    # round to odd instead: where float32 was inexact and chose the neighbour with an even last bit,
    # take the other neighbour (one unit of the last place towards x), whose last bit is odd
    fix = (back != x) & ((bits & 1) == 0) & torch.isfinite(r32)
    step = torch.where(back.abs() < x.abs(), 1, -1).to(torch.int32)  # the bits order |value|, sign apart
    odd = torch.where(fix, bits + step, bits).view(torch.float32)
    return odd.to(dtype)


class _RoundOnce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:  # type: ignore[override]
        ctx.input_dtype = x.dtype
        return _round_once_values(x, dtype)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:  # type: ignore[override]
        return grad.to(ctx.input_dtype), None  # as Tensor.to's gradient


def round_once(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    r"""``x`` rounded **once** to ``dtype`` (to nearest, ties to even), autograd kept.

    ``x.to(torch.bfloat16)`` or ``.to(torch.float16)`` from float64 goes through float32, and
    rounding twice can differ from rounding once: :math:`1 + 2^{-8} + 2^{-30}` becomes
    :math:`1 + 2^{-8}` in float32, a tie that bfloat16 rounds down to 1, where the correctly rounded
    value is :math:`1 + 2^{-7}`. Rounding to float32 *to odd* first (the neighbour with an odd last
    bit when inexact) keeps the information that decides the second rounding, so that rounding
    to any format with at least two bits fewer is correct (Boldo and Melquiond, 2008, *Emulation
    of FMA and correctly rounded sums: proved algorithms using rounding to odd*). Other dtypes (and
    float32 inputs) use ``x.to(dtype)``, which is a single rounding.
    """
    if dtype not in _HALF or x.dtype != torch.float64:
        return x.to(dtype)
    return _RoundOnce.apply(x, dtype)


MEMINFO = "/proc/meminfo"  # Linux: MemAvailable is what a new allocation can use without swapping


def _available_bytes(device: torch.device) -> int | None:
    """Memory a new allocation can use: CUDA's free memory, else the OS's *available* memory
    (``MemAvailable``: free plus reclaimable page cache), ``None`` when unknown (meta, MPS...)."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    if device.type != "cpu":
        return None
    try:
        with open(MEMINFO) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:  # other POSIX systems: free pages only (an underestimate)
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return None


def _human(nbytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if nbytes < 1024 or unit == "PiB":
            return f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    return f"{nbytes:.1f} PiB"  # pragma: no cover


def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype, device="meta").element_size()


def check_fits_in_memory(
    what: str,
    shape: tuple[int, ...],
    dtype: torch.dtype,
    device: torch.device,
    copies: int = 1,
    *,
    work: tuple[tuple[torch.dtype, float], ...] = (),
) -> int:
    """Refuse, before allocating, a result that cannot fit with its working buffers; return the bytes.

    The need is ``numel * (copies * itemsize(dtype) + sum(n * itemsize(w) for w, n in work))``:
    ``copies`` buffers of the result's dtype plus, e.g., ``work=((torch.float64, 2),)`` for two
    float64 intermediates of the same shape. It is compared with the memory a new allocation can
    use (CUDA: free device memory; CPU: the OS's available memory, not merely its free memory:
    page cache is given back on demand).
    """
    numel = math.prod(shape)
    per_element = copies * _itemsize(dtype) + sum(n * _itemsize(w) for w, n in work)
    need = numel * per_element
    available = _available_bytes(device)
    if available is not None and need > available:
        extra = "".join(f" + {n} x {w}" for w, n in work)
        raise ValueError(
            f"{what} of shape {list(shape)} ({copies} x {dtype}{extra} per element) needs "
            f"{_human(need)} but only {_human(available)} is available on {device}; use a shorter "
            f"length or fewer heads"
        )
    return need


def check_qk(q: object, k: object, *, last: str = "d") -> tuple[torch.Tensor, torch.Tensor]:
    """Queries ``[..., Lq, last]`` and keys ``[..., Lk, last]``: tensors with the same last dim, dtype and device."""
    q = check_tensor("q", q, min_dim=2, shape_hint=f"[..., Lq, {last}]")
    k = check_tensor("k", k, min_dim=2, shape_hint=f"[..., Lk, {last}]")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same last dim, got q: {q.shape[-1]} and k: {k.shape[-1]}")
    if q.dtype != k.dtype:
        raise TypeError(f"q and k must have the same dtype, got q: {q.dtype} and k: {k.dtype}; cast one with .to()")
    if q.device != k.device:
        raise ValueError(
            f"q and k must be on the same device, got q: {q.device} and k: {k.device}; move one with .to()"
        )
    return q, k
