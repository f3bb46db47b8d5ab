r"""posviz: positional encodings, biases and attention maps in PyTorch, for the book.

Every formula the book shows is computed by exactly one function here; its docstring shows the
formula and names the paper. Conventions: query position :math:`m` (or :math:`i`), key position
:math:`n` (or :math:`j`), relative position :math:`r = m - n` (query minus key; T5's own code
uses key minus query, see :func:`t5_relative_bucket`); RoPE pairs are interleaved
:math:`(x_{2i}, x_{2i+1})` unless ``layout="half"``.
"""

from ._validate import default_device, default_dtype
from .absolute import (
    LearnedPositionalEmbedding,
    binary_counter_waves,
    sinusoidal_encoding,
    sinusoidal_offset_similarity,
    sinusoidal_phase_coverage,
    sinusoidal_shift_matrix,
)
from .alibi import alibi_bias, alibi_distance_weights, alibi_effective_window, alibi_slopes, alibi_window_mass
from .cope import CoPE, cope_interpolate, cope_positions
from .cost import relative_attention_cost
from .distance_bias import FIRE, KerpleLogBias, fire_normalized_distance, kerple_log_bias
from .dot_product import attention, attention_scores, attention_weights, causal_mask, self_attention
from .frequencies import rope_frequencies, wavelengths
from .i18n import get_language, set_language
from .learned import cosine_similarity_matrix, learned_table_parameters
from .models import PositionCard, position_card
from .randomized import random_positions
from .relative import (
    ScoreTerms,
    ShawRelativePosition,
    T5RelativeBias,
    absolute_score_terms,
    relative_positions,
    t5_relative_bucket,
    transformer_xl_scores,
)
from .rope import (
    apply_rope,
    clear_rope_cache,
    rope_angles,
    rope_cache_info,
    rope_complex_view,
    rope_layout_permutation,
    rope_mean_partial_sum,
    rope_relative_score,
    rope_rotation_matrix,
    rope_scores,
)
from .rope_scaling import (
    llama3_ramp,
    ntk_aware_base,
    rope_attention_factor,
    yarn_correction_range,
    yarn_mscale,
    yarn_ramp,
)
from .vision import (
    MixedRoPE,
    SwinRelativeBias,
    apply_mixed_rope,
    apply_mrope,
    axial_rope_2d,
    mixed_rope_frequencies,
    mrope_position_ids,
    patch_positions,
    relative_position_index_2d,
    resize_position_table,
    sinusoidal_encoding_2d,
    swin_relative_position_index,
)
from .xpos import apply_xpos, xpos_scale, xpos_zeta

__version__ = "0.1.0"

__all__ = [
    # devices
    "default_device",
    "default_dtype",
    # absolute: sinusoidal and learned
    "sinusoidal_encoding",
    "sinusoidal_shift_matrix",
    "sinusoidal_offset_similarity",
    "sinusoidal_phase_coverage",
    "binary_counter_waves",
    "LearnedPositionalEmbedding",
    "learned_table_parameters",
    "cosine_similarity_matrix",
    # frequencies
    "rope_frequencies",
    "wavelengths",
    # RoPE scaling rules (context extension)
    "rope_attention_factor",
    "ntk_aware_base",
    "yarn_correction_range",
    "yarn_ramp",
    "yarn_mscale",
    "llama3_ramp",
    # RoPE
    "apply_rope",
    "rope_rotation_matrix",
    "rope_layout_permutation",
    "rope_mean_partial_sum",
    "rope_angles",
    "rope_complex_view",
    "rope_relative_score",
    "rope_scores",
    "clear_rope_cache",
    "rope_cache_info",
    # ALiBi
    "alibi_slopes",
    "alibi_bias",
    "alibi_distance_weights",
    "alibi_window_mass",
    "alibi_effective_window",
    # relative: Shaw, Transformer-XL, T5
    "relative_positions",
    "t5_relative_bucket",
    "ShawRelativePosition",
    "T5RelativeBias",
    "ScoreTerms",
    "absolute_score_terms",
    "transformer_xl_scores",
    "relative_attention_cost",
    # round three: learned functions of distance, random and contextual positions, xPos
    "random_positions",
    "kerple_log_bias",
    "KerpleLogBias",
    "fire_normalized_distance",
    "FIRE",
    "cope_positions",
    "cope_interpolate",
    "CoPE",
    "apply_xpos",
    "xpos_zeta",
    "xpos_scale",
    # model families' position schemes, read from their configs
    "position_card",
    "PositionCard",
    # beyond one dimension: image patches, windows, mixed text/image/video sequences (posviz.vision)
    "patch_positions",
    "sinusoidal_encoding_2d",
    "resize_position_table",
    "axial_rope_2d",
    "mixed_rope_frequencies",
    "apply_mixed_rope",
    "MixedRoPE",
    "swin_relative_position_index",
    "relative_position_index_2d",
    "SwinRelativeBias",
    "mrope_position_ids",
    "apply_mrope",
    # attention
    "attention",
    "attention_scores",
    "attention_weights",
    "self_attention",
    "causal_mask",
    # the language figures and explorers are drawn in
    "set_language",
    "get_language",
]
