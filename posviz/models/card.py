r"""A model family's position scheme as data: :class:`PositionCard` and its parts.

A card is what :func:`posviz.position_card` reads out of a ``transformers`` config object or a
plain ``config.json`` dict. It holds numbers and rules, never weights; each number cites its
source in :attr:`PositionCard.sources` (the config field it came from, or the family default and
the paper, model card or ``transformers`` config class that documents it).

Its methods apply the scheme:

- RoPE families: ``PositionCard.rotate`` (queries and keys as the family's attention module
  feeds them to the score);
- ALiBi and T5 families: :meth:`PositionCard.bias` (the additive score bias);
- learned tables: :meth:`PositionCard.positions` (the table rows each token reads).

Tensor layout for ``rotate``: ``q`` and ``k`` are ``[batch, heads, seq, head_dim]`` (keys may have
fewer heads, e.g. grouped-query attention, or one shared head, MLA).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

import torch

__all__ = ["AlibiRule", "LearnedTable", "PositionCard", "RopeScheme", "SinusoidalTable", "T5Buckets", "TemperatureRule"]

Method = Literal["rope", "alibi", "t5-bucket", "learned", "sinusoidal"]


def frozen_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """A read-only copy (nested mappings and lists frozen too), so a card cannot be changed in place."""
    if value is None:
        return MappingProxyType({})
    out: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(item, Mapping):
            item = frozen_mapping(item)
        elif isinstance(item, list):
            item = tuple(item)
        out[key] = item
    return MappingProxyType(out)


def plain(value: Any) -> Any:
    """A card's frozen mapping back as a plain ``dict`` (tuples as lists), e.g. to pass as ``scaling``."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    return value


@dataclass(frozen=True)
class TemperatureRule:
    r"""Llama 4's query temperature in its position-free (NoPE) layers (Nakanishi 2025, arXiv:2501.19399).

    .. math:: \tau_m = 1 + s \cdot \ln\!\big(1 + \lfloor (m + 1) / F \rfloor\big)

    with ``attn_scale`` :math:`s` and ``floor_scale`` :math:`F`; the query at position :math:`m`
    is multiplied by :math:`\tau_m` (``posviz.models.rotate.nope_query_temperature``).
    """

    floor_scale: float
    attn_scale: float


@dataclass(frozen=True)
class RopeScheme:
    """How a RoPE family rotates.

    Attributes:
        layout: ``"half"`` (pairs :math:`(x_i, x_{i+d/2})`, GPT-NeoX / Hugging Face) or
            ``"interleaved"`` (pairs :math:`(x_{2i}, x_{2i+1})`, GPT-J, Meta's complex view).
        head_dim: width of a query/key head (MLA: ``qk_nope_head_dim + qk_rope_head_dim``).
        rotary_dim: how many coordinates rotate (``int(head_dim_rope * partial_rotary_factor)``).
        rotary_offset: index of the first rotated coordinate (0; MLA: ``qk_nope_head_dim``, the
            rotated part is the last ``qk_rope_head_dim`` coordinates).
        partial_rotary_factor: ``rotary_dim`` as a share of the rotary head width.
        base: frequency base per layer type (the keys of ``layer_types``).
        scaling: the ``rope_parameters`` mapping per layer type (``None`` for plain RoPE), with
            ``max_position_embeddings`` added, as :func:`posviz.rope_frequencies` takes it.
        nope_layers: layers whose queries and keys get no position at all.
        deinterleave_output: rotated interleaved pairs are written back as
            ``[evens | odds]`` (DeepSeek-V3 with ``rope_interleave``); the score is unchanged.
        shared_key_head: the key's rotated part is one head broadcast to all heads (MLA).
        temperature: the NoPE-layer query temperature (Llama 4), or ``None``.
        softmax_scale_factor: factor on the score scale :math:`1/\\sqrt{d}` from YaRN's
            ``mscale_all_dim`` (DeepSeek); it is applied to the score, not in ``rotate``.
        qk_norm_after_rope: an L2 norm follows the rotation (Llama 4's ``use_qk_norm``); a norm,
            so ``PositionCard.rotate`` leaves it out.
    """

    layout: Literal["half", "interleaved"]
    head_dim: int
    rotary_dim: int
    rotary_offset: int
    partial_rotary_factor: float
    base: Mapping[str, float]
    scaling: Mapping[str, Mapping[str, Any] | None]
    nope_layers: tuple[int, ...] = ()
    deinterleave_output: bool = False
    shared_key_head: bool = False
    temperature: TemperatureRule | None = None
    softmax_scale_factor: float = 1.0
    qk_norm_after_rope: bool = False


@dataclass(frozen=True)
class AlibiRule:
    """ALiBi as a family ships it.

    Attributes:
        slopes: ``"press"`` (Press et al.'s rule, :func:`posviz.alibi_slopes`: BLOOM, Falcon) or
            ``"mpt"`` (MPT's rule with ``alibi_bias_max``, ``posviz.models.bias.mpt_alibi_slopes``).
        alibi_bias_max: MPT's largest exponent (8 gives Press et al.'s slopes); ``None`` otherwise.
        form: ``"key-position"`` (BLOOM, Falcon: :math:`+\\mu_h\\,j`, keys counted from the first
            unpadded token) or ``"key-minus-last"`` (MPT: :math:`\\mu_h\\,(j - (L_k - 1))`).
        slope_dtype: dtype the slopes are rounded to before use (Falcon: ``"bfloat16"``).
        bias_scaled: the bias is added before the :math:`1/\\sqrt{d}` scale (Falcon), so it
            reaches the scaled score divided by :math:`\\sqrt{d}`.
        head_dim: :math:`d` of that scale (Falcon), else ``None``.
    """

    slopes: Literal["press", "mpt"]
    form: Literal["key-position", "key-minus-last"]
    alibi_bias_max: float | None = None
    slope_dtype: str | None = None
    bias_scaled: bool = False
    head_dim: int | None = None


@dataclass(frozen=True)
class T5Buckets:
    """T5's bucketed relative bias.

    Attributes:
        num_buckets, max_distance: ``relative_attention_num_buckets`` and
            ``relative_attention_max_distance``.
        bidirectional: per stack (``"encoder"``: True, ``"decoder"``: False).
        owner_layers: per stack, the layer that owns the bias table (0, the first block); the
            other layers reuse its ``position_bias``.
    """

    num_buckets: int
    max_distance: int
    bidirectional: Mapping[str, bool]
    owner_layers: Mapping[str, int]


@dataclass(frozen=True)
class LearnedTable:
    """A learned absolute table.

    Attributes:
        rows: rows in the table (OPT: ``max_position_embeddings + offset``).
        offset: added to every position id before the look-up (OPT: 2).
        from_mask: position ids count only unpadded tokens (``cumsum(mask) * mask - 1``, OPT) instead
            of ``arange`` (BERT, GPT-2, which give padded tokens their slot positions).
    """

    rows: int
    offset: int = 0
    from_mask: bool = False


@dataclass(frozen=True)
class SinusoidalTable:
    """A fixed sinusoidal table added to the embeddings.

    Attributes:
        rows, dim: table size (``max_position_embeddings`` x ``d_model``).
        base: the frequency base (10000).
        halves: columns ``[sin | cos]`` (Marian, "not interleaved") instead of Vaswani et al.'s
            interleaved sin/cos (:func:`posviz.sinusoidal_encoding`).
        embed_scale: factor on the token embeddings before the table is added
            (:math:`\\sqrt{d}` with ``scale_embedding``, else 1).
    """

    rows: int
    dim: int
    base: float = 10000.0
    halves: bool = True
    embed_scale: float = 1.0


@dataclass(frozen=True)
class PositionCard:
    """One model family's position scheme, read from its config.

    Attributes:
        model_type: the config's ``model_type`` (for composite configs, the text model's).
        family: a readable family name.
        method: ``"rope"``, ``"alibi"``, ``"t5-bucket"``, ``"learned"`` or ``"sinusoidal"``.
        num_layers, num_heads: layers and query heads.
        max_position_embeddings: the context the config declares (``None`` where it has none).
        layer_types: per layer, its attention kind (the keys of ``rope.base``).
        rope, alibi, t5, learned, sinusoidal: the method's details (the others are ``None``).
        sources: for every number on the card, where it came from (field path -> short text).
        notes: what the card leaves out or a reader should know.
    """

    model_type: str
    family: str
    method: Method
    num_layers: int
    num_heads: int
    max_position_embeddings: int | None
    layer_types: tuple[str, ...]
    rope: RopeScheme | None = None
    alibi: AlibiRule | None = None
    t5: T5Buckets | None = None
    learned: LearnedTable | None = None
    sinusoidal: SinusoidalTable | None = None
    sources: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    notes: tuple[str, ...] = ()

    # --- per-layer views -------------------------------------------------------------------
    def _layer(self, layer: int) -> int:
        if isinstance(layer, bool) or not isinstance(layer, int):
            raise TypeError(f"layer must be an int, got {type(layer).__name__}")
        if not 0 <= layer < self.num_layers:
            raise ValueError(f"layer must be in [0, {self.num_layers - 1}] for this {self.family} config, got {layer}")
        return layer

    def has_position(self, layer: int = 0) -> bool:
        """Whether layer ``layer`` applies the family's position step (False for NoPE layers)."""
        layer = self._layer(layer)
        return not (self.rope is not None and layer in self.rope.nope_layers)

    def base(self, layer: int = 0) -> float:
        """The RoPE frequency base of layer ``layer``."""
        rope = self._need_rope("base")
        return float(rope.base[self.layer_types[self._layer(layer)]])

    def scaling(self, layer: int = 0) -> dict[str, Any] | None:
        """The RoPE scaling mapping of layer ``layer`` as a plain dict (``None``: unscaled)."""
        rope = self._need_rope("scaling")
        value = rope.scaling[self.layer_types[self._layer(layer)]]
        return None if value is None else plain(value)

    def _need_rope(self, what: str) -> RopeScheme:
        if self.rope is None:
            raise ValueError(f"{what} is for RoPE families; {self.family} ({self.model_type}) uses {self.method}")
        return self.rope

    def summary(self) -> dict[str, str]:
        """What a reader asks of a family, as short English text: method, pairing, base(s), rotated
        share, scaling, position-free layers (``"-"`` where the method has no such thing)."""
        out = {"family": self.family, "method": {"rope": "RoPE", "alibi": "ALiBi", "t5-bucket": "T5 buckets",
               "learned": "learned table", "sinusoidal": "sinusoidal"}[self.method]}
        rope = self.rope
        if rope is None:
            out.update(pairing="-", base="-", rotated="-", scaling="-", nope="-")
            return out
        pairing = {"half": "half (x_i, x_{i+d/2})", "interleaved": "interleaved (x_2i, x_2i+1)"}[rope.layout]
        out["pairing"] = pairing + (", written back [evens | odds]" if rope.deinterleave_output else "")
        kinds = sorted(set(self.layer_types))
        bases = {kind: f"{rope.base[kind]:g}" for kind in kinds}
        out["base"] = bases[kinds[0]] if len(set(bases.values())) == 1 else ", ".join(
            f"{kind.replace('_attention', '')} {value}" for kind, value in bases.items())
        where = f" (last {rope.rotary_dim}, after {rope.rotary_offset} unrotated)" if rope.rotary_offset else ""
        out["rotated"] = f"{rope.rotary_dim} of {rope.head_dim}{where}"

        def rule(kind: str) -> str:
            value = rope.scaling[kind]
            if value is None:
                return "none"
            parts = [str(value["rope_type"])]
            if value.get("factor") is not None:
                parts.append(f"factor {value['factor']:g}")
            if value.get("original_max_position_embeddings") is not None:
                parts.append(f"original {value['original_max_position_embeddings']}")
            return ", ".join(parts)

        rules = {kind: rule(kind) for kind in kinds}
        out["scaling"] = rules[kinds[0]] if len(set(rules.values())) == 1 else "; ".join(
            f"{kind.replace('_attention', '')}: {value}" for kind, value in rules.items())
        nope = rope.nope_layers
        out["nope"] = "none" if not nope else f"{len(nope)} of {self.num_layers}: " + ", ".join(map(str, nope))
        return out

    # --- applying the scheme ---------------------------------------------------------------
    def rotate(
        self, q: torch.Tensor, k: torch.Tensor, position_ids: torch.Tensor, *, layer: int = 0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Queries and keys after the family's position step in layer ``layer``.

        See ``posviz.models.rotate.rotate`` for the formula and conventions.
        """
        from .rotate import rotate

        self._need_rope("rotate")
        return rotate(self, q, k, position_ids, layer=self._layer(layer))

    def bias(self, query_len: int, key_len: int | None = None, **kwargs: Any) -> torch.Tensor:
        """The additive score bias of an ALiBi or T5 family; see ``posviz.models.bias.card_bias``."""
        from .bias import card_bias

        return card_bias(self, query_len, key_len, **kwargs)

    def positions(
        self,
        attention_mask: torch.Tensor | None = None,
        *,
        seq_len: int | None = None,
        past_length: int = 0,
    ) -> torch.Tensor:
        """Row of the learned table each token reads; see ``posviz.models.bias.table_positions``."""
        from .bias import table_positions

        return table_positions(self, attention_mask, seq_len=seq_len, past_length=past_length)

    def table(self, *, device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> torch.Tensor:
        """The fixed sinusoidal table of a sinusoidal family; see ``posviz.models.bias.sinusoidal_table``."""
        from .bias import sinusoidal_table

        return sinusoidal_table(self, device=device, dtype=dtype)
