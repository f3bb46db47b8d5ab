r"""Tables added to the patch embeddings: patch positions, 2-D sin-cos (MAE) and resizing a learned table (ViT).

**Grid convention.** An image of ``height x width`` patches is read row by row (row-major,
"raster" order): patch :math:`t = r\cdot W + c` sits in row :math:`r` (top to bottom) and column
:math:`c` (left to right). :func:`patch_positions` gives these ``(row, col)`` pairs; every 2-D method
of :mod:`posviz.vision` takes positions in this form. A class token, when present, comes *first*
(row 0 of a table), as in ViT and MAE.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F

from .._validate import (
    check_even_dim,
    check_fits_in_memory,
    check_int,
    check_positive,
    check_tensor,
    resolve,
    round_once,
    table_dtype,
)
from ..frequencies import rope_frequencies

__all__ = ["patch_positions", "resize_position_table", "sinusoidal_encoding_2d"]

SinCosLayout = Literal["mae", "rows_first"]
_SINCOS_LAYOUTS = ("mae", "rows_first")
_RESIZE_MODES = ("bicubic", "bilinear", "nearest")


def check_grid(name: str, grid: object, minimum: int = 1) -> tuple[int, int]:
    """An int ``n`` (an ``n x n`` grid) or a pair ``(height, width)`` of ints >= ``minimum``."""
    if isinstance(grid, (tuple, list)):
        if len(grid) != 2:
            raise ValueError(f"{name} must be an int or a pair (height, width), got {len(grid)} values: {grid!r}")
        return (check_int(f"{name}[0] (height)", grid[0], minimum=minimum),
                check_int(f"{name}[1] (width)", grid[1], minimum=minimum))
    if isinstance(grid, torch.Tensor) and grid.numel() == 2:
        return check_grid(name, tuple(int(v) for v in grid.reshape(-1).tolist()), minimum)
    try:
        n = check_int(name, grid, minimum=minimum)
    except TypeError:
        raise TypeError(f"{name} must be an int or a pair (height, width) of ints, got {grid!r}") from None
    return n, n


def patch_positions(height: int, width: int, *, device: torch.device | str | None = None) -> torch.Tensor:
    r"""The ``(row, col)`` of every patch of a ``height x width`` grid in row-major order, ``[height*width, 2]`` long.

    .. math:: p_t = (r_t, c_t) = (\lfloor t / W \rfloor,\; t \bmod W), \qquad t = 0, \dots, HW - 1

    Column 0 is the row (the vertical coordinate, "y"), column 1 the column ("x").

    Args:
        height: rows of patches, >= 1.
        width: columns of patches, >= 1.
        device: where to build it (default: torch's default device).
    """
    height = check_int("height", height, minimum=1)
    width = check_int("width", width, minimum=1)
    device, _ = resolve(device, None)
    rows, cols = torch.meshgrid(
        torch.arange(height, device=device), torch.arange(width, device=device), indexing="ij"
    )
    return torch.stack((rows.reshape(-1), cols.reshape(-1)), dim=-1)


def sinusoidal_encoding_2d(
    height: int,
    width: int,
    dim: int,
    base: float = 10000.0,
    *,
    cls_token: bool = False,
    layout: SinCosLayout = "mae",
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    r"""The fixed 2-D sin-cos table of MAE (He et al., 2022), ``[cls_token + height*width, dim]``.

    Each axis takes half of the dimensions and encodes its coordinate with the 1-D sinusoids
    (sines first, then cosines) on the ladder of ``dim/4`` frequencies

    .. math::

        \omega_j = \text{base}^{-j/(d/4)}, \quad j = 0, \dots, d/4 - 1, \qquad
        e(p) = [\sin(p\,\omega_0), \dots, \sin(p\,\omega_{d/4-1}),\;
                \cos(p\,\omega_0), \dots, \cos(p\,\omega_{d/4-1})]

    and patch :math:`(r, c)` (row, column; rows of the table in row-major order) gets

    - ``layout="mae"``: :math:`[\,e(c) \mid e(r)\,]`, the **column** in the first half. This is
      the table of MAE's released checkpoints and of its ``get_2d_sincos_pos_embed`` (whose
      ``np.meshgrid(grid_w, grid_h)`` puts the column first), and what ``transformers``'
      ``ViTMAEModel`` and its decoder hold after initialisation;
    - ``layout="rows_first"``: :math:`[\,e(r) \mid e(c)\,]`, exactly the output of
      ``transformers``' ``build_2d_sinusoidal_position_embedding`` (``[sin_h | cos_h | sin_w |
      cos_w]``), which ``ViTMAEModel`` then swaps into the ``"mae"`` layout.

    With ``cls_token=True`` a row of zeros comes first (MAE's class token has no position).
    The table does not depend on the training grid: a larger grid extends it with the same formula.

    Args:
        height, width: rows and columns of patches, >= 1.
        dim: the embedding width, a positive multiple of 4.
        base: the frequency base ("temperature"), > 0.
        cls_token: prepend a zero row for a class token.
        layout: ``"mae"`` (column first) or ``"rows_first"``.
        device, dtype: where and in what dtype (torch's defaults); computed in float64 and rounded once.
    """
    height = check_int("height", height, minimum=1)
    width = check_int("width", width, minimum=1)
    dim = check_even_dim("dim", dim)
    if dim % 4:
        raise ValueError(f"dim must be a positive multiple of 4 (sin and cos for each of two axes), got {dim}")
    base = check_positive("base", base)
    if not isinstance(cls_token, bool):
        raise TypeError(f"cls_token must be True or False, got {cls_token!r}")
    if layout not in _SINCOS_LAYOUTS:
        raise ValueError(f"layout must be one of {_SINCOS_LAYOUTS}, got {layout!r}")
    device, dtype = resolve(device, dtype)
    rows = int(cls_token) + height * width
    check_fits_in_memory("2-D sin-cos table", (rows, dim), dtype, device, work=((torch.float64, 2),))
    work = table_dtype(device)
    omega = rope_frequencies(dim // 2, base, device=device, dtype=work)  # base^(-j/(d/4)), [d/4]
    pos = patch_positions(height, width, device=device).to(work)
    r, c = pos[:, 0:1] * omega, pos[:, 1:2] * omega  # [HW, d/4] each

    def e(angle: torch.Tensor) -> torch.Tensor:
        return torch.cat((torch.sin(angle), torch.cos(angle)), dim=-1)

    first, second = (c, r) if layout == "mae" else (r, c)
    table = torch.cat((e(first), e(second)), dim=-1)
    if cls_token:
        table = torch.cat((torch.zeros(1, dim, device=device, dtype=work), table), dim=0)
    return round_once(table, dtype)


def resize_position_table(
    table: torch.Tensor,
    new_grid: int | tuple[int, int],
    *,
    cls_tokens: int = 1,
    grid: int | tuple[int, int] | None = None,
    mode: str = "bicubic",
    align_corners: bool = False,
) -> torch.Tensor:
    r"""A learned patch table resized to a new grid, class rows kept, as ViT does at a new resolution.

    The patch rows of ``table`` (row-major over the old :math:`h \times w` grid) are laid out as an
    image ``[1, dim, h, w]`` (one channel per embedding dimension), resampled to
    ``[1, dim, h', w']`` with ``torch.nn.functional.interpolate(size=(h', w'), mode, align_corners)``
    and read back row-major; the first ``cls_tokens`` rows are copied unchanged. With the defaults
    (bicubic, ``align_corners=False``) this is ``transformers``' ``ViTEmbeddings.interpolate_pos_encoding``
    (from DINO): bicubic interpolation with the cubic convolution kernel (:math:`a = -0.75`), sample
    :math:`i'` of the new axis reading the old axis at

    .. math:: u = (i' + \tfrac12)\,\frac{h}{h'} - \tfrac12 ,

    so the new table is a smooth function of the old one (positions past the old grid's edge are
    clamped, not extrapolated). When the new grid equals the old one the table is returned as it
    is (as ``transformers`` does).

    Args:
        table: floating tensor ``[cls_tokens + N, dim]`` or ``[1, cls_tokens + N, dim]`` (the
            ``nn.Parameter`` of ViT); the result has the same number of dims, dtype and device,
            and keeps autograd.
        new_grid: the new grid, an int ``n`` (``n x n``) or ``(height, width)``, each >= 1.
        cls_tokens: leading rows that are not patches (1 for ViT's class token; 0 for none; 2 for
            DeiT's class and distillation tokens), >= 0.
        grid: the old grid ``(h, w)`` when it is not square; default: ``N`` must be a square.
        mode: ``"bicubic"`` (ViT), ``"bilinear"`` or ``"nearest"``.
        align_corners: passed to ``interpolate`` for bicubic/bilinear (ViT: False).
    """
    table = check_tensor("table", table, min_dim=2, shape_hint="[cls_tokens + N, dim] or [1, cls_tokens + N, dim]")
    if table.dim() > 3 or (table.dim() == 3 and table.shape[0] != 1):
        raise ValueError(
            f"table must have shape [cls_tokens + N, dim] or [1, cls_tokens + N, dim], got {list(table.shape)}"
        )
    batched = table.dim() == 3
    flat = table[0] if batched else table
    cls_tokens = check_int("cls_tokens", cls_tokens, minimum=0)
    if flat.shape[0] <= cls_tokens:
        raise ValueError(
            f"table has {flat.shape[0]} rows, fewer than cls_tokens + 1 = {cls_tokens + 1}: it must hold the "
            f"{cls_tokens} class row(s) and at least one patch row"
        )
    n, dim = flat.shape[0] - cls_tokens, flat.shape[1]
    if grid is None:
        side = math.isqrt(n)
        if side * side != n:
            raise ValueError(
                f"table has {n} patch rows (after {cls_tokens} class row(s)), which is not a square grid; "
                f"pass grid=(height, width) for a rectangular grid, or check cls_tokens"
            )
        old = (side, side)
    else:
        old = check_grid("grid", grid)
        if old[0] * old[1] != n:
            raise ValueError(f"grid {old} holds {old[0] * old[1]} patches but table has {n} patch rows")
    new = check_grid("new_grid", new_grid)
    if mode not in _RESIZE_MODES:
        raise ValueError(f"mode must be one of {_RESIZE_MODES}, got {mode!r}")
    if not isinstance(align_corners, bool):
        raise TypeError(f"align_corners must be True or False, got {align_corners!r}")
    if new == old:
        return table
    check_fits_in_memory("resized table", (cls_tokens + new[0] * new[1], dim), table.dtype, table.device, copies=2)
    patches = flat[cls_tokens:].reshape(1, old[0], old[1], dim).permute(0, 3, 1, 2)  # [1, dim, h, w]
    corners = align_corners if mode != "nearest" else None
    work = table.dtype if table.dtype in (torch.float32, torch.float64) else torch.float32  # half: in float32
    resized = F.interpolate(patches.to(work), size=new, mode=mode, align_corners=corners).to(table.dtype)
    resized = resized.permute(0, 2, 3, 1).reshape(new[0] * new[1], dim)  # row-major again
    out = torch.cat((flat[:cls_tokens], resized), dim=0)
    return out[None] if batched else out
