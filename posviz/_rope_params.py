"""The mapping a RoPE scaling rule comes in: a ``transformers`` config's ``rope_parameters``, checked.

:func:`parse_scaling` reads it as ``transformers`` does (the legacy ``type`` key, the original
context defaulting to ``max_position_embeddings``, YaRN's ``beta_fast or 32``), refuses keys the
rule does not read and values out of range with a message naming the key, and returns the fields
with their defaults filled in, for :mod:`posviz.rope_scaling`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from ._validate import check_int, check_positive, check_real

__all__ = ["SCALING_TYPES", "parse_scaling"]

SCALING_TYPES = ("default", "linear", "dynamic", "yarn", "llama3", "longrope")

# Keys any rope_parameters mapping may hold; they are read where a rule needs them and otherwise
# ignored (partial_rotary_factor: you pass the rotated dimension itself).
# M-RoPE's mrope_section / mrope_interleaved (Qwen2-VL) split the pairs among position axes and
# leave the frequencies alone.
_COMMON = frozenset(
    {"rope_type", "type", "rope_theta", "partial_rotary_factor", "max_position_embeddings",
     "original_max_position_embeddings", "mrope_section", "mrope_interleaved"}
)
_MROPE = {"mrope": "default"}  # Qwen2-VL's legacy type: transformers reads it as the default ladder
_FIELDS = {
    "default": frozenset(),
    "linear": frozenset({"factor"}),
    "dynamic": frozenset({"factor"}),
    "yarn": frozenset({"factor", "attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "truncate"}),
    "llama3": frozenset({"factor", "low_freq_factor", "high_freq_factor"}),
    "longrope": frozenset({"factor", "attention_factor", "short_factor", "long_factor"}),
}


def _optional(name: str, params: Mapping, key: str, check) -> object:
    value = params.get(key)
    return None if value is None else check(f"{name}[{key!r}]", value)


def parse_scaling(scaling: object, name: str = "scaling") -> dict | None:
    """Validate a ``rope_parameters``-style mapping; return its fields with defaults filled in."""
    if scaling is None:
        return None
    if not isinstance(scaling, Mapping):
        raise TypeError(
            f"{name} must be None or a mapping like a transformers config's rope_parameters "
            f"(e.g. {{'rope_type': 'linear', 'factor': 4.0}}), got {type(scaling).__name__}"
        )
    if not all(isinstance(key, str) for key in scaling):
        raise TypeError(f"{name}'s keys must be strings, got {sorted(map(repr, scaling))}")
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    legacy = scaling.get("type")
    if legacy is not None and "rope_type" in scaling and _MROPE.get(legacy, legacy) != _MROPE.get(kind, kind):
        raise ValueError(f"{name} has rope_type={kind!r} and the legacy type={legacy!r}: keep one")
    kind = _MROPE.get(kind, kind)
    if kind not in SCALING_TYPES:
        raise ValueError(f"{name}['rope_type'] must be one of {SCALING_TYPES}, got {kind!r}")
    unknown = set(scaling) - _COMMON - _FIELDS[kind]
    if unknown:
        raise ValueError(
            f"{name} has keys {sorted(unknown)} that rope_type {kind!r} does not read; it reads "
            f"{sorted(_FIELDS[kind] | _COMMON)}"
        )

    def positive_int(label: str, value: object) -> int:
        return check_int(label, value, minimum=1)

    p: dict = {"rope_type": kind}
    p["rope_theta"] = _optional(name, scaling, "rope_theta", check_positive)
    p["max_position_embeddings"] = _optional(name, scaling, "max_position_embeddings", positive_int)
    original = _optional(name, scaling, "original_max_position_embeddings", positive_int)
    if kind in ("yarn", "llama3", "longrope"):
        # transformers' standardize_rope_params: the original length defaults to max_position_embeddings
        original = original if original is not None else p["max_position_embeddings"]
        if original is None:
            raise ValueError(
                f"rope_type {kind!r} reads {name}['original_max_position_embeddings'] (the pre-training context; "
                f"else the config's max_position_embeddings): add one of them to the mapping"
            )
    p["original_max_position_embeddings"] = original
    p["factor"] = _optional(name, scaling, "factor", check_positive)
    needs_factor = kind in ("linear", "dynamic", "llama3") or (kind == "yarn" and p["max_position_embeddings"] is None)
    if needs_factor and p["factor"] is None:
        raise ValueError(f"rope_type {kind!r} needs {name}['factor'], a number > 0 (the context multiplier s)")
    if kind == "yarn" and p["factor"] is None:  # as transformers: the ratio of the two context lengths
        p["factor"] = p["max_position_embeddings"] / original
    if kind == "dynamic" and p["max_position_embeddings"] is None:
        raise ValueError(
            f"rope_type 'dynamic' reads {name}['max_position_embeddings'] (the config's "
            f"max_position_embeddings, where the scaling starts): add it to the mapping"
        )
    if kind == "yarn":
        # transformers reads `get("beta_fast") or 32`: a missing, None or 0 beta takes the default
        p["beta_fast"] = check_positive(f"{name}['beta_fast']", scaling.get("beta_fast") or 32)
        p["beta_slow"] = check_positive(f"{name}['beta_slow']", scaling.get("beta_slow") or 1)
        if p["beta_fast"] <= p["beta_slow"]:
            raise ValueError(
                f"{name}['beta_fast'] must be > {name}['beta_slow'] (turns over the original context), got "
                f"{p['beta_fast']} and {p['beta_slow']}"
            )
        truncate = scaling.get("truncate", True)
        if not isinstance(truncate, bool):
            raise TypeError(f"{name}['truncate'] must be True or False, got {truncate!r}")
        p["truncate"] = truncate
        p["mscale"] = _optional(name, scaling, "mscale", check_real)
        p["mscale_all_dim"] = _optional(name, scaling, "mscale_all_dim", check_real)
    if kind in ("yarn", "longrope"):
        p["attention_factor"] = _optional(name, scaling, "attention_factor", check_positive)
    if kind == "llama3":
        for key in ("low_freq_factor", "high_freq_factor"):
            if scaling.get(key) is None:
                raise ValueError(f"rope_type 'llama3' needs {name}[{key!r}], a number > 0")
            p[key] = check_positive(f"{name}[{key!r}]", scaling[key])
        if p["high_freq_factor"] < p["low_freq_factor"]:  # equal: a step, no ramp (Llama 4's configs)
            raise ValueError(
                f"{name}['high_freq_factor'] must be >= {name}['low_freq_factor'], got "
                f"{p['high_freq_factor']} and {p['low_freq_factor']}"
            )
    if kind == "longrope":
        for key in ("short_factor", "long_factor"):
            p[key] = _factor_list(f"{name}[{key!r}]", scaling.get(key))
    return p


def _factor_list(label: str, value: object) -> tuple[float, ...]:
    if isinstance(value, torch.Tensor):
        value = value.tolist()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{label} must be a list of numbers > 0, one per rotated pair, got {type(value).__name__}")
    return tuple(check_positive(f"{label}[{i}]", v) for i, v in enumerate(value))


def _check_seq_len(seq_len: object) -> int | None:
    return None if seq_len is None else check_int("seq_len", seq_len, minimum=1)
