r"""The 2-D position plug-ins of the tiny ViT: one :class:`PositionMethod2D` per method.

The same surface as the lab's :class:`posviz.lab.positions.PositionMethod`, on a patch grid: a
method adds to the input, rotates q and k, or biases the scores, and each calls the ``posviz``
function its chapter teaches. The sequence is ``[cls, patch (0, 0), patch (0, 1), ...]``: the class
token first, then the patches row-major (:func:`posviz.patch_positions`), so a tensor over the
sequence has ``1 + H W`` rows. The class token has no place on the grid: it gets its own row of a
learned table, the zero row of the 2-D sin-cos table (MAE), no rotation (as in Heo et al.'s code,
which rotates the patch tokens only), and a zero bias.

* ``none``: nothing; attention without positions is permutation-equivariant over the patches, so
  the task (:mod:`posviz.vislab.task`) is at chance (a check of the whole pipeline).
* ``learned``: a table of ``1 + G^2`` rows for the training grid :math:`G` (ViT), started as the
  2-D sin-cos table and trained, resized to an :math:`H \times W` grid by
  :func:`posviz.resize_position_table` (bicubic, class row kept), added.
* ``sincos-2d``: :func:`posviz.sinusoidal_encoding_2d` (MAE's layout, zero class row), added; it
  extends to any grid by itself.
* ``rope-axial``: :func:`posviz.axial_rope_2d` on q and k, half the pairs turning with the row and
  half with the column, base 100 (Heo et al.'s RoPE-Axial).
* ``rope-mixed``: one :class:`posviz.MixedRoPE` per layer, learnable per-head frequency pairs
  :math:`(\theta_x, \theta_y)` (Heo et al.'s RoPE-Mixed, base 10).
* ``swin-bias``: one :class:`posviz.SwinRelativeBias` per layer, a :math:`(2G-1)^2` table per head
  indexed by the offset (:func:`posviz.relative_position_index_2d`), global attention over the
  grid; offsets past :math:`\pm(G-1)` are clipped to it.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = [
    "METHODS",
    "METHOD_KIND",
    "POSITION_PARAMETERS",
    "PositionMethod2D",
    "make_position",
]

METHODS: tuple[str, ...] = ("none", "learned", "sincos-2d", "rope-axial", "rope-mixed", "swin-bias")
"""The miniature's methods, in the order figures and tables list them."""
METHOD_KIND: dict[str, str] = {
    "none": "none",
    "learned": "adds to the input",
    "sincos-2d": "adds to the input",
    "rope-axial": "rotates q and k",
    "rope-mixed": "rotates q and k",
    "swin-bias": "biases the scores",
}
POSITION_PARAMETERS: tuple[str, ...] = ("learned", "rope-mixed", "swin-bias")
"""Methods with trainable position parameters: their learning-rate multiplier is chosen on validation."""
AXIAL_BASE = 100.0
"""RoPE-Axial's base (Heo et al.'s ``compute_axial_cis``, ``theta=100``)."""
MIXED_BASE = 10.0
"""RoPE-Mixed's base (Heo et al.'s ``init_random_2d_freqs``, ``theta=10``)."""


class PositionMethod2D(nn.Module):
    """The plug-in surface on a patch grid; the defaults do nothing (``none``).

    Shapes: ``q, k`` ``(B, nh, 1 + H W, hs)``; what is added ``(1 + H W, C)``; a bias
    ``(nh, 1 + H W, 1 + H W)``. ``layer`` lets a method hold one module per layer.
    """

    def add_to_input(self, height: int, width: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor | None:
        """``p`` for the class token and every patch, ``(1 + H W, C)``, added to the embeddings; or None."""
        return None

    def rotate(
        self, q: torch.Tensor, k: torch.Tensor, height: int, width: int, layer: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``q, k`` rotated, same shapes (the class token, row 0, unchanged)."""
        return q, k

    def bias(
        self, height: int, width: int, layer: int, device: torch.device, dtype: torch.dtype
    ) -> torch.Tensor | None:
        """Score bias ``(nh, 1 + H W, 1 + H W)`` of ``layer`` (zero on the class token's row and column); or None."""
        return None

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator) -> None:
        """Draw the method's parameters from ``generator`` (the model's position stream)."""


class NoPosition2D(PositionMethod2D):
    """No position signal."""


def _patches(height: int, width: int, device: torch.device) -> torch.Tensor:
    import posviz

    return posviz.patch_positions(height, width, device=device)  # (H W, 2): (row, col)


def _rotate_patches(fn, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``fn`` on the patch rows of ``q`` and ``k`` (``[..., 1:, :]``), the class row kept."""
    return (
        torch.cat([q[..., :1, :], fn(q[..., 1:, :])], dim=-2),  # (B, nh, 1 + H W, hs)
        torch.cat([k[..., :1, :], fn(k[..., 1:, :])], dim=-2),
    )


class LearnedTable2D(PositionMethod2D):
    r"""A learned table for the training grid, ``(1 + G^2, C)``, trained with the model; at another
    grid it is resized by :func:`posviz.resize_position_table` (bicubic, class row kept).

    It starts as the 2-D sin-cos table (:func:`posviz.sinusoidal_encoding_2d`, zero class row), not
    as ViT's small random :math:`\mathcal{N}(0, 0.02^2)`: from that start (and from a random
    :math:`\mathcal{N}(0, 1)`) the miniature stayed at chance for its whole training budget
    (measured: 300 and 600 steps, validation loss :math:`\ln 4`), since a table must first learn
    which rows are above which, which a training run of ImageNet size does and this one cannot. So
    ``learned`` is "sin-cos, then trained, then resized", and its difference to ``sincos-2d`` is
    what training the table and resizing it (instead of extending the formula) do.
    """

    def __init__(self, grid: int, dim: int) -> None:
        super().__init__()
        self.grid = grid
        self.table = nn.Parameter(torch.zeros(1 + grid * grid, dim))

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator) -> None:
        import posviz

        self.table.copy_(posviz.sinusoidal_encoding_2d(self.grid, self.grid, self.table.shape[1], cls_token=True))

    def add_to_input(self, height: int, width: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        import posviz

        if (height, width) == (self.grid, self.grid):
            return self.table.to(dtype)  # (1 + G^2, C)
        return posviz.resize_position_table(self.table, (height, width), cls_tokens=1).to(dtype)  # (1 + H W, C)


class SinCos2D(PositionMethod2D):
    """MAE's fixed 2-D sin-cos table (:func:`posviz.sinusoidal_encoding_2d`, zero class row)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def add_to_input(self, height: int, width: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        import posviz

        return posviz.sinusoidal_encoding_2d(height, width, self.dim, cls_token=True, device=device, dtype=dtype)


class AxialRoPE2D(PositionMethod2D):
    """Axial 2-D RoPE (:func:`posviz.axial_rope_2d`, base :data:`AXIAL_BASE`) on the patch tokens."""

    def rotate(
        self, q: torch.Tensor, k: torch.Tensor, height: int, width: int, layer: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        import posviz

        positions = _patches(height, width, q.device)
        return _rotate_patches(lambda x: posviz.axial_rope_2d(x, positions, base=AXIAL_BASE), q, k)


class MixedRoPE2D(PositionMethod2D):
    """RoPE-Mixed: one :class:`posviz.MixedRoPE` per layer (learnable frequencies, base :data:`MIXED_BASE`)."""

    def __init__(self, n_layer: int, n_head: int, head_dim: int) -> None:
        super().__init__()
        import posviz

        self.layers = nn.ModuleList(posviz.MixedRoPE(n_head, head_dim, base=MIXED_BASE) for _ in range(n_layer))

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator) -> None:
        import posviz

        for rope in self.layers:
            n_head, half, _ = rope.frequencies.shape
            rope.frequencies.copy_(posviz.mixed_rope_frequencies(n_head, 2 * half, MIXED_BASE, generator=generator))

    def rotate(
        self, q: torch.Tensor, k: torch.Tensor, height: int, width: int, layer: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        positions = _patches(height, width, q.device)
        rope = self.layers[layer]
        return _rotate_patches(lambda x: rope(x, positions), q, k)


class SwinBias2D(PositionMethod2D):
    r"""One :class:`posviz.SwinRelativeBias` per layer (window = the training grid :math:`G`, a
    :math:`(2G-1)^2 \times n_h` table, Swin's truncated normal of std 0.02), over the whole grid; at a
    larger grid the offsets are clipped to :math:`\pm(G-1)` (:func:`posviz.relative_position_index_2d`)."""

    def __init__(self, n_layer: int, n_head: int, grid: int) -> None:
        super().__init__()
        import posviz

        self.grid = grid
        self.layers = nn.ModuleList(posviz.SwinRelativeBias(n_head, grid) for _ in range(n_layer))

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator) -> None:
        for bias in self.layers:  # as Swin's code: trunc_normal_(std=.02)
            nn.init.trunc_normal_(bias.table, std=0.02, generator=generator)

    def bias(
        self, height: int, width: int, layer: int, device: torch.device, dtype: torch.dtype
    ) -> torch.Tensor:
        patches = self.layers[layer]((height, width)).to(device=device, dtype=dtype)  # (nh, H W, H W), clipped
        return nn.functional.pad(patches, (1, 0, 1, 0))  # (nh, 1 + H W, 1 + H W): zero for the class token


def make_position(method: str, *, grid: int, dim: int, n_layer: int, n_head: int) -> PositionMethod2D:
    """The plug-in for ``method`` (one of :data:`METHODS`) of a model with ``n_layer`` layers,
    ``n_head`` heads and width ``dim``, trained on a ``grid`` x ``grid`` image."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method == "none":
        return NoPosition2D()
    if method == "learned":
        return LearnedTable2D(grid, dim)
    if method == "sincos-2d":
        return SinCos2D(dim)
    if method == "rope-axial":
        return AxialRoPE2D()
    if method == "rope-mixed":
        return MixedRoPE2D(n_layer, n_head, dim // n_head)
    return SwinBias2D(n_layer, n_head, grid)
