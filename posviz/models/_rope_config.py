"""Reading a RoPE family's bases, scaling and rotary share from its config (either format).

Two formats exist: ``transformers`` 5's ``rope_parameters`` (flat, or keyed by layer type as in
Gemma 3), and the ``config.json`` files on the Hub, which keep ``rope_theta`` (or a family's own
name for it) at the top and the scaling in ``rope_scaling``. Both are read here the way
``transformers``' ``standardize_rope_params`` reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._config import Reader, as_mapping

# rope types whose init function reads the pre-training context (transformers' standardize_rope_params)
_NEEDS_ORIGINAL = ("llama3", "yarn", "longrope")
_DROPPED = ("rope_theta", "partial_rotary_factor", "type")


@dataclass
class RopeRead:
    base: dict[str, float] = field(default_factory=dict)
    scaling: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    partial_rotary_factor: float = 1.0
    sources: dict[str, str] = field(default_factory=dict)


def _nested(params: Mapping[str, Any], kinds: set[str]) -> bool:
    return any(key in kinds and isinstance(value, Mapping) for key, value in params.items())


def read_rope(
    r: Reader,
    kinds: list[str],
    *,
    default_theta: dict[str, tuple[float, str]],
    theta_names: dict[str, tuple[str, ...]] | None = None,
    hub_scaling_kinds: set[str] | None = None,
    default_scaling: tuple[dict[str, Any], str] | None = None,
    default_partial: tuple[float, str] = (1.0, "default 1.0 (every coordinate rotates)"),
    partial_names: tuple[str, ...] = ("partial_rotary_factor",),
    max_position: int | None = None,
    rename_types: dict[str, str] | None = None,
) -> RopeRead:
    """Bases, scaling mappings and the rotary share for each layer kind in ``kinds``.

    ``default_theta[kind]`` is the family default and its reference; ``theta_names[kind]`` the
    top-level field names of the Hub format (default ``("rope_theta",)``); ``hub_scaling_kinds``
    the kinds a top-level ``rope_scaling`` applies to (default: all).
    """
    out = RopeRead()
    kind_set = set(kinds)
    params_all = r.raw("rope_parameters")
    where = "rope_parameters"
    if params_all is None:
        params_all, where = r.raw("rope_scaling"), "rope_scaling"
    params_all = as_mapping(params_all)
    nested = _nested(params_all, kind_set)
    partial_seen: tuple[float, str] | None = None
    for kind in sorted(kind_set):
        if nested:
            params = as_mapping(params_all.get(kind))
            prefix = f"{r.prefix}.{where}['{kind}']"
        elif where == "rope_scaling" and hub_scaling_kinds is not None and kind not in hub_scaling_kinds:
            params, prefix = {}, f"{r.prefix}.{where}"
        else:
            params, prefix = params_all, f"{r.prefix}.{where}"
        if not params_all and default_scaling is not None:  # neither field: the family's default scaling
            params, prefix = dict(default_scaling[0]), default_scaling[1]

        # base
        if params.get("rope_theta") is not None:
            base, src = float(params["rope_theta"]), f"{prefix}['rope_theta']"
        else:
            names = (theta_names or {}).get(kind, ("rope_theta",))
            value, src = r.get(*names, default=default_theta[kind][0], default_source=default_theta[kind][1])
            base = float(value)
        out.base[kind] = base
        out.sources[f"rope.base.{kind}"] = src

        # partial rotary share (one per family)
        if partial_seen is None:
            if params.get("partial_rotary_factor") is not None:
                partial_seen = (float(params["partial_rotary_factor"]), f"{prefix}['partial_rotary_factor']")
            else:
                value, src = r.get(*partial_names, default=default_partial[0], default_source=default_partial[1])
                partial_seen = (float(value), src)

        # scaling
        rope_type = params.get("rope_type", params.get("type", "default")) or "default"
        rope_type = (rename_types or {}).get(rope_type, rope_type)
        if rope_type == "default":
            out.scaling[kind] = None
            continue
        scaling = {k: v for k, v in params.items() if k not in _DROPPED}
        scaling["rope_type"] = rope_type
        if max_position is not None:
            scaling["max_position_embeddings"] = max_position
        if rope_type in _NEEDS_ORIGINAL:
            top = r.raw("original_max_position_embeddings")  # Phi-3 keeps it at the top, and it wins
            if top is not None:
                scaling["original_max_position_embeddings"] = top
            else:
                scaling.setdefault("original_max_position_embeddings", max_position)
        out.scaling[kind] = scaling
        out.sources[f"rope.scaling.{kind}"] = f"{prefix} (rope_type {rope_type!r} and its fields)"
    assert partial_seen is not None
    out.partial_rotary_factor, out.sources["rope.partial_rotary_factor"] = partial_seen
    return out
