"""Shared helpers of posviz.vision: rotating pairs by given angles, and checking 2-D / 3-D positions.

:func:`rotate_pairs` applies the same arithmetic as :func:`posviz.apply_rope` (interleaved pairs as
complex numbers; the half layout with two multiply-adds per half), so a 2-D or 3-D method whose
angles reduce to ``m * theta_i`` gives bit-for-bit the 1-D result.
"""

from __future__ import annotations

import torch

from .._validate import check_tensor, compute_dtype
from ..rope import _angle_tables

__all__ = ["check_positions_nd", "check_rope_input", "rotate_pairs"]


def check_rope_input(x: object, *, multiple: int = 2) -> torch.Tensor:
    """Queries or keys ``[..., T, d]`` with ``d`` a positive multiple of ``multiple``."""
    x = check_tensor("x", x, min_dim=2, shape_hint="[..., T, dim] (at least 2 dims)")
    dim = x.shape[-1]
    if dim == 0 or dim % multiple:
        why = "pairs split between two axes" if multiple == 4 else "rotation pairs"
        raise ValueError(f"dim (x.shape[-1]) must be a positive multiple of {multiple} ({why}), got {dim}")
    return x


def check_positions_nd(
    name: str, positions: object, x: torch.Tensor, axes: int, *, axis_first: bool = False, what: str = "(row, col)"
) -> torch.Tensor:
    """Positions of ``x``'s ``T`` rows with ``axes`` coordinates each.

    ``axis_first=False``: shape ``[T, axes]`` or ``[..., T, axes]``; ``True``: ``[axes, T]`` or
    ``[axes, ..., T]``. Real numbers (integers or finite floats); batch dims broadcast against
    ``x.shape[:-2]``. Returned with the coordinate axis last.
    """
    if not isinstance(positions, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(positions).__name__}")
    if positions.dtype == torch.bool or positions.is_complex():
        raise TypeError(f"{name} must hold real numbers (integers or floats), got {positions.dtype}")
    seq = x.shape[-2]
    shape = f"[{axes}, T] or [{axes}, ..., T]" if axis_first else f"[T, {axes}] or [..., T, {axes}]"
    if positions.dim() < 2:
        raise ValueError(f"{name} must have shape {shape} {what} with T={seq}, got {list(positions.shape)}")
    if axis_first:
        positions = positions.movedim(0, -1)
    if positions.shape[-1] != axes or positions.shape[-2] != seq:
        raise ValueError(f"{name} must have shape {shape} {what} with T={seq}, got {list(positions.shape)}")
    try:
        torch.broadcast_shapes(positions.shape[:-1], x.shape[:-1])
    except RuntimeError as err:
        raise ValueError(
            f"{name}' batch dims must broadcast against x's: {name} {list(positions.shape)} and x "
            f"{list(x.shape)}; e.g. {name}[:, None] for x [batch, heads, T, dim]"
        ) from err
    if positions.is_floating_point() and not bool(torch.isfinite(positions).all()):
        raise ValueError(f"{name} must be finite, got NaN or inf")
    return positions


def rotate_pairs(x: torch.Tensor, angle: torch.Tensor, layout: str) -> torch.Tensor:
    r"""Rotate the pairs of ``x`` ``[..., T, d]`` by ``angle`` ``[..., T, d/2]`` (broadcast).

    ``layout="interleaved"``: pair :math:`i` is :math:`(x_{2i}, x_{2i+1})`; ``"half"``:
    :math:`(x_i, x_{i+d/2})`. Angle :math:`\alpha` maps :math:`(a, b)` to
    :math:`(a\cos\alpha - b\sin\alpha,\; a\sin\alpha + b\cos\alpha)`. The result has ``x``'s dtype;
    the work runs in float32 (float64 for float64 inputs), as in :func:`posviz.apply_rope`.
    """
    dim = x.shape[-1]
    work = compute_dtype(x.dtype)
    tables = _angle_tables(angle, layout, work)
    xw = x.to(work)
    if layout == "interleaved":
        (cis,) = tables
        xc = torch.view_as_complex(xw.contiguous().unflatten(-1, (dim // 2, 2)))
        out = torch.view_as_real(xc * cis).flatten(-2)
    else:
        cos, sin = tables
        half = dim // 2
        x1, x2 = xw[..., :half], xw[..., half:]
        if torch.is_grad_enabled() and (xw.requires_grad or cos.requires_grad):
            out = torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
        else:  # the same fused steps as apply_rope, so that equal angles give equal bits
            shape = torch.broadcast_shapes(xw.shape, (*cos.shape[:-1], dim))
            out = torch.empty(shape, dtype=work, device=x.device)
            o1, o2 = out[..., :half], out[..., half:]
            torch.mul(x1, cos, out=o1)
            o1.addcmul_(x2, sin, value=-1.0)
            torch.mul(x2, cos, out=o2)
            o2.addcmul_(x1, sin)
    return out.to(x.dtype)
