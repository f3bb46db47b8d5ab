r"""posviz: positional encodings, biases and attention maps in PyTorch, for the book.

Every formula the book shows is computed by exactly one function here; its docstring shows the
formula and names the paper. Conventions: query position :math:`m` (or :math:`i`), key position
:math:`n` (or :math:`j`), relative position :math:`r = m - n` (query minus key; T5's own code
uses key minus query, see :func:`t5_relative_bucket`); RoPE pairs are interleaved
:math:`(x_{2i}, x_{2i+1})` unless ``layout="half"``.
"""

from ._validate import default_device
from .absolute import (
    LearnedPositionalEmbedding,
    sinusoidal_encoding,
    sinusoidal_offset_similarity,
    sinusoidal_shift_matrix,
)
from .alibi import alibi_bias, alibi_slopes
from .attention import attention, causal_mask
from .frequencies import rope_frequencies, wavelengths
from .relative import ShawRelativePosition, T5RelativeBias, relative_positions, t5_relative_bucket
from .rope import (
    apply_rope,
    clear_rope_cache,
    rope_decay_bound,
    rope_layout_permutation,
    rope_rotation_matrix,
)

__version__ = "0.1.0"

__all__ = [
    "LearnedPositionalEmbedding",
    "ShawRelativePosition",
    "T5RelativeBias",
    "alibi_bias",
    "alibi_slopes",
    "apply_rope",
    "attention",
    "causal_mask",
    "clear_rope_cache",
    "default_device",
    "relative_positions",
    "rope_decay_bound",
    "rope_frequencies",
    "rope_layout_permutation",
    "rope_rotation_matrix",
    "sinusoidal_encoding",
    "sinusoidal_offset_similarity",
    "sinusoidal_shift_matrix",
    "t5_relative_bucket",
    "wavelengths",
]
