r"""Positions in two and three dimensions: image patches, windows, and mixed text/image/video sequences.

The same plug-in surface as the 1-D methods: tables **added** to the patch embeddings
(:func:`sinusoidal_encoding_2d`, :func:`resize_position_table`), rotations of queries and keys
(:func:`axial_rope_2d`, :func:`apply_mixed_rope` / :class:`MixedRoPE`, :func:`apply_mrope`), and
biases added to the **scores** (:class:`SwinRelativeBias`).

Conventions: a grid of ``height x width`` patches in row-major order; a position is ``(row, col)``
(:func:`patch_positions`), offsets are query minus key; class tokens come first in tables.
Each function is checked against ``transformers``' own code in ``tests/test_vision_*.py``.
Book chapter: *Beyond one dimension*.
"""

from .mrope import apply_mrope, mrope_position_ids
from .rope2d import MixedRoPE, apply_mixed_rope, axial_rope_2d, mixed_rope_frequencies
from .swin import SwinRelativeBias, relative_position_index_2d, swin_relative_position_index
from .tables import patch_positions, resize_position_table, sinusoidal_encoding_2d

__all__ = [
    "MixedRoPE",
    "SwinRelativeBias",
    "apply_mixed_rope",
    "apply_mrope",
    "axial_rope_2d",
    "mixed_rope_frequencies",
    "mrope_position_ids",
    "patch_positions",
    "relative_position_index_2d",
    "resize_position_table",
    "sinusoidal_encoding_2d",
    "swin_relative_position_index",
]
