r"""Position schemes of today's model families, read from their configs: :func:`position_card`.

.. code-block:: python

    card = posviz.position_card(config)          # a transformers config, or json.load(open("config.json"))
    card.method, card.rope.layout, card.base(layer=5), card.scaling(layer=5), card.rope.nope_layers
    q, k = card.rotate(q, k, position_ids, layer=5)   # RoPE families, [batch, heads, seq, head_dim]
    bias = card.bias(q_len, k_len)                    # ALiBi and T5 families
    rows = card.positions(attention_mask)             # learned tables (OPT's offset of 2), Marian's sinusoids
    table = card.table()                              # sinusoidal families

The config is read duck-typed (attributes or mapping keys); ``transformers`` is never imported.
Every number on a card names its source in ``card.sources``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ._config import Reader, model_type_of
from .bias import mpt_alibi_slopes
from .card import AlibiRule, LearnedTable, PositionCard, RopeScheme, SinusoidalTable, T5Buckets, TemperatureRule
from .families_other import OTHER_FAMILIES
from .families_rope import ROPE_FAMILIES
from .released import RELEASED, Released, released_config
from .rotate import nope_query_temperature

__all__ = [
    "AlibiRule",
    "LearnedTable",
    "PositionCard",
    "RELEASED",
    "Released",
    "RopeScheme",
    "SUPPORTED_MODEL_TYPES",
    "SinusoidalTable",
    "T5Buckets",
    "TemperatureRule",
    "mpt_alibi_slopes",
    "nope_query_temperature",
    "position_card",
    "released_config",
]

_FAMILIES: dict[str, Callable[[Reader, str], PositionCard]] = {**ROPE_FAMILIES, **OTHER_FAMILIES}
# composite (multimodal) configs: the text model's config sits in text_config
_COMPOSITE = {"llama4": "llama4_text", "gemma3": "gemma3_text"}
SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(sorted({*_FAMILIES, *_COMPOSITE}))


def position_card(config: object) -> PositionCard:
    """The position scheme of the model ``config`` describes, as a :class:`PositionCard`.

    Args:
        config: a ``transformers`` config object (``AutoConfig.from_pretrained(...)``) or the plain
            dict of a ``config.json`` (Hub format with ``rope_theta`` / ``rope_scaling``, or
            ``transformers`` 5's ``to_dict()`` with ``rope_parameters``). Its ``model_type`` picks
            the family; composite configs (``llama4``, ``gemma3``) are read from ``text_config``.

    Raises:
        ValueError: ``config`` has no ``model_type``, or one outside ``SUPPORTED_MODEL_TYPES``.
    """
    if config is None or isinstance(config, (str, bytes, int, float)):
        raise TypeError(
            f"config must be a transformers config object or a config.json dict, got {type(config).__name__}"
        )
    model_type = model_type_of(config)
    reader = Reader(config)
    if model_type in _COMPOSITE:
        text = reader.sub("text_config")
        if text is not None:
            reader = text
            inner = text.raw("model_type")
            model_type = str(inner).lower() if inner else _COMPOSITE[model_type]
        else:
            model_type = _COMPOSITE[model_type]
    builder = _FAMILIES.get(model_type)
    if builder is None:
        raise ValueError(
            f"config has model_type {model_type!r}, which posviz.position_card does not know; "
            f"supported model types: {', '.join(SUPPORTED_MODEL_TYPES)}"
        )
    if not isinstance(config, Mapping) and not hasattr(config, "__dict__"):
        raise TypeError(f"config must be a transformers config object or a mapping, got {type(config).__name__}")
    return builder(reader, model_type)
