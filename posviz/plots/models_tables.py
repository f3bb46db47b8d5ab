r"""Tables of released models for the chapter *Positions in today's models*: each cell read from a
:func:`posviz.position_card`, rendered as a translatable :class:`posviz.lab.tables.Table` (Markdown in
the reader's language). The figures are in :mod:`posviz.plots.models`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from ..frequencies import rope_frequencies
from ..i18n import get_language, recording, tr
from ..lab.tables import Table

__all__ = ["family_row", "family_table", "spectrum_counts", "spectrum_spec", "spectrum_table"]

def _num(value: float) -> str:
    """A number for a table cell: plain digits (no thousands separator), the same in every language."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _layers(layers: Sequence[int], total: int) -> str:
    if not layers:
        return tr("none")
    step = layers[1] - layers[0] if len(layers) > 1 else 0
    if len(layers) > 2 and all(b - a == step for a, b in itertools.pairwise(layers)):
        return tr("{count} of {total}: one in {step}, layers {first}, {second}, …, {last}", count=len(layers),
                  total=total, step=step, first=layers[0], second=layers[1], last=layers[-1])
    return tr("{count} of {total}: layers {layers}", count=len(layers), total=total,
              layers=", ".join(str(i) for i in layers))


def _scaling_words(scaling: Mapping[str, Any] | None) -> str:
    if scaling is None:
        return tr("none")
    kind, s = scaling["rope_type"], scaling.get("factor")
    original = scaling.get("original_max_position_embeddings")
    if kind == "linear":
        return tr("linear (PI), s = {s}", s=_num(s))
    if kind == "dynamic":
        return tr("dynamic NTK, s = {s}", s=_num(s))
    if kind == "llama3":
        return tr("llama3, s = {s}, from L = {L}", s=_num(s), L=original)
    if kind == "yarn":
        return tr("YaRN, s = {s}, from L = {L}", s=_num(s), L=original)
    if kind == "longrope":
        return tr("LongRoPE (one factor per pair), from L = {L}", L=original)
    return str(kind)


def _per_type(card: Any, value: Any) -> str:
    """One cell for a per-layer-type value: the value, or each layer type's (Gemma's local and global)."""
    kinds = list(dict.fromkeys(card.layer_types))
    cells = {kind: value(kind) for kind in kinds}
    if len(set(cells.values())) == 1:
        return cells[kinds[0]]
    names = {"sliding_attention": tr("local"), "full_attention": tr("global"), "chunked_attention": tr("chunked")}
    parts = [tr("{name}: {value}", name=names.get(kind, kind), value=cell) for kind, cell in cells.items()]
    out = parts[0]
    for part in parts[1:]:
        out = tr("{first}; {second}", first=out, second=part)
    return out


def family_row(name: str, card: Any) -> list[str]:
    """The table row of one released model's card (:func:`family_table`). RoPE families: model,
    pairing, base(s), rotated share, scaling, position-free layers, context; the others: model,
    method, context."""
    context = _num(card.max_position_embeddings) if card.max_position_embeddings else tr("none in the config")
    model = f"`{card.family} ({name})`"  # names, in code: the same in every edition
    if card.rope is None:
        if card.alibi is not None:
            method = tr("ALiBi, MPT slopes (alibi_bias_max = {m})", m=_num(card.alibi.alibi_bias_max)) if (
                card.alibi.slopes == "mpt") else tr("ALiBi, Press et al.'s slopes")
        elif card.t5 is not None:
            method = tr("T5 buckets ({n}, up to distance {d}), table in layer 0", n=card.t5.num_buckets,
                        d=card.t5.max_distance)
        else:
            method = tr("learned table, {rows} rows, offset {offset}", rows=card.learned.rows,
                        offset=card.learned.offset)
        return [model, method, context]
    rope = card.rope
    pairing = tr("half") if rope.layout == "half" else tr("interleaved")
    share = f"{rope.rotary_dim / rope.head_dim:.0%} ({rope.rotary_dim}/{rope.head_dim})"
    if rope.shared_key_head:
        share += ", " + tr("one key head shared")
    return [
        model,
        pairing,
        _per_type(card, lambda kind: _num(rope.base[kind])),
        share,
        _per_type(card, lambda kind: _scaling_words(rope.scaling[kind])),
        _layers(rope.nope_layers, card.num_layers),
        context,
    ]


def family_table(cards: Mapping[str, Any], *, rope: bool = True) -> Table:
    """The chapter's table of families, one row per card (``name -> PositionCard``), every cell read
    from the card (:func:`family_row`): the RoPE families (``rope=True``) or the others; a
    :class:`posviz.lab.tables.Table`, translatable."""
    with recording() as record:
        if rope:
            head = [tr("model"), tr("pairing"), tr("base"), tr("rotated share"), tr("scaling"),
                    tr("position-free layers"), tr("context")]
        else:
            head = [tr("model"), tr("method"), tr("context")]
        rows = [family_row(name, card) for name, card in cards.items() if (card.rope is not None) == rope]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        text = "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
    return Table(text, record if get_language() == "en" else None)


def spectrum_spec(name: str, card: Any, *, layer: int = 0) -> dict[str, Any]:
    """:func:`rope_spectrum_figure`'s spec of one card's layer: its rotated dimensions, base and scaling;
    ``trained`` is the scaling's ``original_max_position_embeddings`` (for ``linear``, which names
    none, the declared context divided by ``s``: the span the unscaled pairs cover), else the declared
    context, which is ``extended``."""
    scaling = card.scaling(layer)
    extended = int(card.max_position_embeddings)
    trained = extended
    if scaling is not None:
        original = scaling.get("original_max_position_embeddings")
        trained = int(original) if original else round(extended / float(scaling.get("factor", 1.0)))
    return {"name": name, "dim": card.rope.rotary_dim, "base": card.base(layer), "scaling": scaling,
            "trained": trained, "extended": extended}


def spectrum_counts(spec: Mapping[str, Any]) -> dict[str, int]:
    """Counts of a model's spectrum: ``pairs``; ``turned`` (wavelength at most the trained context:
    at least one full turn seen in training); ``never`` and ``never_scaled`` (wavelength beyond the
    extended context before and after the scaling: never one turn); ``moved`` (pairs the scaling
    changes by more than 0.1%)."""
    f64 = {"device": "cpu", "dtype": torch.float64}
    theta = rope_frequencies(spec["dim"], spec["base"], **f64)
    scaled = rope_frequencies(spec["dim"], spec["base"], scaling=spec.get("scaling"), seq_len=spec["extended"], **f64)
    lam, lam_s = 2 * math.pi / theta, 2 * math.pi / scaled
    return {
        "pairs": spec["dim"] // 2,
        "turned": int((lam <= spec["trained"]).sum()),
        "never": int((lam > spec["extended"]).sum()),
        "never_scaled": int((lam_s > spec["extended"]).sum()),
        "moved": int(((scaled / theta - 1).abs() > 1e-3).sum()),
    }


def spectrum_table(specs: Sequence[Mapping[str, Any]]) -> Table:
    """:func:`spectrum_counts` of each spec, as a translatable table."""
    with recording() as record:
        head = [tr("model"), tr("pairs"), tr("L"), tr("turn within L"), tr("extended context"),
                tr("never turn, unscaled"), tr("never turn, scaled"), tr("moved by the scaling")]
        rows = []
        for spec in specs:
            c = spectrum_counts(spec)
            rows.append([str(spec["name"]), str(c["pairs"]), str(spec["trained"]), str(c["turned"]),
                         str(spec["extended"]), str(c["never"]), str(c["never_scaled"]), str(c["moved"])])
        lines = ["| " + " | ".join(head) + " |", "|---" + "|--:" * (len(head) - 1) + "|"]
        text = "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
    return Table(text, record if get_language() == "en" else None)
