r"""Swin's relative position bias (Liu et al., 2021): a learned table over 2-D offsets, added to the scores.

Inside an :math:`M_h \times M_w` window, query patch :math:`i` at :math:`(r_i, c_i)` and key patch
:math:`j` at :math:`(r_j, c_j)` differ by :math:`(\Delta r, \Delta c) = (r_i - r_j, c_i - c_j)`
(query minus key, the book's sign), each in :math:`[-(M-1), M-1]`. Head :math:`h` adds

.. math:: s_{ij} \mathrel{+}= B_h[\Delta r, \Delta c], \qquad B \in \mathbb{R}^{(2M_h-1)(2M_w-1) \times H}

to the score, read from the table row

.. math:: \operatorname{idx}(i, j) = (\Delta r + M_h - 1)(2M_w - 1) + (\Delta c + M_w - 1).
"""

from __future__ import annotations

import torch
from torch import nn

from .._validate import check_fits_in_memory, check_int, resolve
from .tables import check_grid, patch_positions

__all__ = ["SwinRelativeBias", "relative_position_index_2d", "swin_relative_position_index"]


def _offset_index(height: int, width: int, kh: int, kw: int, device: torch.device) -> torch.Tensor:
    pos = patch_positions(height, width, device=device)  # [T, 2] (row, col)
    delta = pos[:, None, :] - pos[None, :, :]  # query minus key, [T, T, 2]
    dr = delta[..., 0].clamp(-kh, kh) + kh
    dc = delta[..., 1].clamp(-kw, kw) + kw
    return dr * (2 * kw + 1) + dc


def swin_relative_position_index(
    window: int | tuple[int, int], *, device: torch.device | str | None = None
) -> torch.Tensor:
    r"""The table row for every (query, key) pair of a window, ``[M_h M_w, M_h M_w]`` long.

    .. math:: \operatorname{idx}(i, j) = (r_i - r_j + M_h - 1)(2M_w - 1) + (c_i - c_j + M_w - 1)

    with patches in row-major order; values in :math:`[0, (2M_h-1)(2M_w-1))`, the centre
    (:math:`i = j`) at :math:`(M_h - 1)(2M_w - 1) + M_w - 1`. Equal to ``transformers``'
    Swin ``relative_position_index`` (``SwinRelativePositionBias`` in ``SwinAttention``; square windows in Swin's
    config, rectangular ones through its ``(Wh, Ww)`` module).

    Args:
        window: :math:`M` (an ``M x M`` window) or ``(M_h, M_w)``, each >= 1.
        device: where to build it (torch's default device).
    """
    mh, mw = check_grid("window", window)
    device, _ = resolve(device, None)
    check_fits_in_memory("relative position index", (mh * mw, mh * mw), torch.int64, device)
    return _offset_index(mh, mw, mh - 1, mw - 1, device)


def relative_position_index_2d(
    height: int,
    width: int,
    *,
    max_offset: int | tuple[int, int] | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    r"""Swin's index for a whole ``height x width`` grid, offsets clipped to ``±max_offset``, ``[HW, HW]`` long.

    .. math::

        \operatorname{idx}(i, j) = (\operatorname{clip}(r_i - r_j, \pm K_h) + K_h)(2K_w + 1)
            + \operatorname{clip}(c_i - c_j, \pm K_w) + K_w

    into a table of :math:`(2K_h + 1)(2K_w + 1)` rows. ``max_offset=None`` takes
    :math:`K = (H - 1, W - 1)`, every offset its own row: then this is
    :func:`swin_relative_position_index` of the ``(H, W)`` window. A table learned on an
    :math:`M \times M` grid has :math:`K = M - 1`; with ``max_offset=M - 1`` it serves a larger
    grid, every offset past :math:`M - 1` along an axis reading the edge row of that axis.

    Args:
        height, width: the grid, each >= 1.
        max_offset: :math:`K` (both axes) or ``(K_h, K_w)``, each >= 0; default no clipping.
        device: where to build it (torch's default device).
    """
    height = check_int("height", height, minimum=1)
    width = check_int("width", width, minimum=1)
    kh, kw = (height - 1, width - 1) if max_offset is None else check_grid("max_offset", max_offset, minimum=0)
    device, _ = resolve(device, None)
    check_fits_in_memory("relative position index", (height * width, height * width), torch.int64, device)
    return _offset_index(height, width, kh, kw, device)


class SwinRelativeBias(nn.Module):
    r"""Swin's learned relative position bias: ``forward()`` gives ``[n_heads, T, T]`` to add to the scores.

    Holds ``table``, an ``nn.Parameter`` of shape ``[(2M_h - 1)(2M_w - 1), n_heads]`` (Swin's
    ``relative_position_bias_table``), and reads it at :func:`swin_relative_position_index`:

    .. math:: \text{bias}[h, i, j] = \text{table}[\operatorname{idx}(i, j), h]

    ``init="trunc_normal"`` (default) draws the table as Microsoft's Swin code does,
    ``trunc_normal_(std=.02)``: a normal of std 0.02 cut at :math:`\pm 2` (absolute, i.e. 100 std:
    in effect untruncated); ``init="zeros"`` starts at zero, as ``transformers``'
    ``SwinPreTrainedModel`` initialises it (every offset then starts with the same bias).

    ``forward(grid=(H, W))`` evaluates the same table on a larger (or smaller) grid with offsets
    clipped to the window's :math:`\pm(M - 1)` (:func:`relative_position_index_2d`), e.g. a
    bias trained on an ``8 x 8`` grid used on ``16 x 16``.

    Args:
        n_heads: heads, >= 1.
        window: :math:`M` or ``(M_h, M_w)``, each >= 1: the grid (or window) the table covers.
        init: ``"trunc_normal"`` or ``"zeros"``.
        generator: for ``trunc_normal`` (default: torch's global generator).
        device, dtype: of the table (torch's defaults).
    """

    def __init__(
        self,
        n_heads: int,
        window: int | tuple[int, int],
        *,
        init: str = "trunc_normal",
        generator: torch.Generator | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.n_heads = check_int("n_heads", n_heads, minimum=1)
        self.window = check_grid("window", window)
        if init not in ("trunc_normal", "zeros"):
            raise ValueError(f"init must be 'trunc_normal' or 'zeros', got {init!r}")
        device, dtype = resolve(device, dtype)
        mh, mw = self.window
        table = torch.zeros((2 * mh - 1) * (2 * mw - 1), self.n_heads, device=device, dtype=dtype)
        if init == "trunc_normal":
            nn.init.trunc_normal_(table, std=0.02, generator=generator)
        self.table = nn.Parameter(table)
        self.register_buffer("index", swin_relative_position_index(self.window, device=device), persistent=False)

    def forward(self, grid: int | tuple[int, int] | None = None) -> torch.Tensor:
        """The bias ``[n_heads, T, T]`` on the window (``grid=None``) or on another ``grid`` (offsets clipped)."""
        if grid is None or check_grid("grid", grid) == self.window:
            index = self.index
        else:
            h, w = check_grid("grid", grid)
            mh, mw = self.window
            index = relative_position_index_2d(h, w, max_offset=(mh - 1, mw - 1), device=self.table.device)
        return self.table[index].permute(2, 0, 1)

    def extra_repr(self) -> str:
        return f"n_heads={self.n_heads}, window={self.window}"
