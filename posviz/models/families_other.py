"""Cards of the learned-table, T5-bucket and ALiBi families, read from their configs."""

from __future__ import annotations

from collections.abc import Callable

from ._config import Reader, as_mapping
from .card import AlibiRule, LearnedTable, PositionCard, SinusoidalTable, T5Buckets, frozen_mapping
from .families_rope import common, rope_card

__all__ = ["OTHER_FAMILIES"]


def _learned(r: Reader, model_type: str) -> PositionCard:
    family, max_default, ref, offset, from_mask = {
        "bert": ("BERT", 512, "BertConfig; Devlin et al. 2019 §3 (512 positions)", 0, False),
        "gpt2": ("GPT-2", 1024, "GPT2Config n_positions; Radford et al. 2019 §2.3 (1024 tokens)", 0, False),
        "opt": ("OPT", 2048, "OPTConfig; Zhang et al. 2022, Table 1 (2048 tokens)", 2, True),
    }[model_type]
    c = common(r, max_position_default=None, family=family)
    sources = dict(c["sources"])
    max_pos, sources["max_position_embeddings"] = r.get(
        "n_positions", "max_position_embeddings", default=max_default, default_source=f"default {max_default} ({ref})"
    )
    notes: list[str] = []
    if model_type == "opt":
        sources["learned.offset"] = "OPTLearnedPositionalEmbedding.offset = 2 (fixed in transformers and metaseq)"
        sources["learned.rows"] = "max_position_embeddings + offset"
        notes.append("OPT's positions count unpadded tokens: cumsum(attention_mask) * attention_mask - 1, then + 2")
    else:
        sources["learned.offset"] = "none: position ids are arange(past, past + seq)"
        sources["learned.rows"] = "max_position_embeddings"
        notes.append(f"{family} gives left-padded tokens their slot positions: the mask does not move them")
    table = LearnedTable(rows=int(max_pos) + offset, offset=offset, from_mask=from_mask)
    return PositionCard(
        model_type=model_type, family=family, method="learned", num_layers=c["layers"], num_heads=c["heads"],
        max_position_embeddings=int(max_pos), layer_types=("full_attention",) * c["layers"], learned=table,
        sources=frozen_mapping(sources), notes=tuple(notes),
    )


def _t5(r: Reader, model_type: str) -> PositionCard:
    c = common(r, max_position_default=None, family="T5")
    sources = dict(c["sources"])
    buckets, sources["t5.num_buckets"] = r.get(
        "relative_attention_num_buckets", default=32, default_source="default 32 (T5Config; Raffel et al. 2020 §2.1)"
    )
    distance, sources["t5.max_distance"] = r.get(
        "relative_attention_max_distance", default=128,
        default_source="default 128 (T5Config; Raffel et al. 2020 §2.1)",
    )
    sources["t5.owner_layers"] = "T5Stack: has_relative_attention_bias=bool(i == 0) for block i of each stack"
    sources["t5.bidirectional"] = "T5Attention.compute_bias: bidirectional = not is_decoder"
    spec = T5Buckets(
        num_buckets=int(buckets), max_distance=int(distance),
        bidirectional=frozen_mapping({"encoder": True, "decoder": False}),
        owner_layers=frozen_mapping({"encoder": 0, "decoder": 0}),
    )
    decoder_layers, _ = r.get("num_decoder_layers", default=c["layers"])
    return PositionCard(
        model_type=model_type, family="T5", method="t5-bucket", num_layers=c["layers"], num_heads=c["heads"],
        max_position_embeddings=None, layer_types=("encoder",) * c["layers"], t5=spec,
        sources=frozen_mapping(sources),
        notes=(
            f"encoder {c['layers']} and decoder {int(decoder_layers)} layers; cross-attention has no position bias",
            "the bias is added to unscaled scores (T5 folds 1/sqrt(d) into its initialisation)",
        ),
    )


def _bloom(r: Reader, model_type: str) -> PositionCard:
    c = common(r, max_position_default=None, family="BLOOM")
    sources = dict(c["sources"])
    sources["alibi.slopes"] = "_get_alibi_slopes: Press et al. 2022's rule (BLOOM, Le Scao et al. 2022)"
    rule = AlibiRule(slopes="press", form="key-position")
    return PositionCard(
        model_type=model_type, family="BLOOM", method="alibi", num_layers=c["layers"], num_heads=c["heads"],
        max_position_embeddings=None, layer_types=("full_attention",) * c["layers"], alibi=rule,
        sources=frozen_mapping(sources),
        notes=("the bias is added to scaled scores (baddbmm with beta=1, alpha=1/sqrt(head_dim))",),
    )


def _mpt(r: Reader, model_type: str) -> PositionCard:
    c = common(r, max_position_default=None, family="MPT")
    sources = dict(c["sources"])
    attn = r.sub("attn_config") or Reader({}, prefix=f"{r.prefix}.attn_config")
    attn = Reader(as_mapping(attn.config), prefix=attn.prefix)
    uses, _ = attn.get("alibi", default=True)
    if not uses:
        raise ValueError("config.attn_config.alibi is False: this MPT has no position bias posviz can describe")
    bias_max, sources["alibi.alibi_bias_max"] = attn.get(
        "alibi_bias_max", default=8, default_source="default 8 (MptAttentionConfig; Press et al. 2022's 2^-8)"
    )
    max_len, sources["max_position_embeddings"] = r.get(
        "max_seq_len", default=2048, default_source="default 2048 (MptConfig max_seq_len)"
    )
    sources["alibi.slopes"] = "build_mpt_alibi_tensor (MosaicML's attention.py)"
    rule = AlibiRule(slopes="mpt", form="key-minus-last", alibi_bias_max=float(bias_max))
    return PositionCard(
        model_type=model_type, family="MPT", method="alibi", num_layers=c["layers"], num_heads=c["heads"],
        max_position_embeddings=int(max_len), layer_types=("full_attention",) * c["layers"], alibi=rule,
        sources=frozen_mapping(sources),
        notes=("the bias is added to scaled scores; built for max_seq_len keys and sliced to the last key_len",),
    )


def _falcon(r: Reader, model_type: str) -> PositionCard:
    uses, src = r.get("alibi", default=False, default_source="default False (FalconConfig)")
    if not uses:
        return rope_card(r, model_type)
    c = common(r, max_position_default=2048, family="FalconConfig")
    sources = dict(c["sources"])
    sources["alibi"] = src
    sources["alibi.slopes"] = "build_alibi_tensor: Press et al.'s rule, slopes rounded to bfloat16"
    head_dim = int(c["hidden"]) // c["heads"]
    sources["alibi.head_dim"] = f"{c['sources']['hidden_size']} // {c['sources']['num_heads']}"
    rule = AlibiRule(slopes="press", form="key-position", slope_dtype="bfloat16", bias_scaled=True, head_dim=head_dim)
    return PositionCard(
        model_type=model_type, family="Falcon", method="alibi", num_layers=c["layers"], num_heads=c["heads"],
        max_position_embeddings=int(c["max_pos"]), layer_types=("full_attention",) * c["layers"], alibi=rule,
        sources=frozen_mapping(sources),
        notes=("the bias is added before the 1/sqrt(head_dim) scale: (q.k + alibi) / sqrt(d)",),
    )


def _marian(r: Reader, model_type: str) -> PositionCard:
    c = common(r, max_position_default=None, family="MarianConfig")
    sources = dict(c["sources"])
    rows, sources["sinusoidal.rows"] = r.get(
        "max_position_embeddings", default=1024, default_source="default 1024 (MarianConfig)"
    )
    dim, sources["sinusoidal.dim"] = r.get("d_model", default=1024, default_source="default 1024 (MarianConfig)")
    scaled, _ = r.get("scale_embedding", default=False)
    sources["sinusoidal.base"] = "10000, fixed in MarianSinusoidalPositionalEmbedding (Vaswani et al. 2017 §3.5)"
    sources["sinusoidal.embed_scale"] = (
        f"sqrt(d_model) from {r.prefix}.scale_embedding" if scaled else "1: scale_embedding is off"
    )
    if int(dim) % 2:
        raise ValueError(f"config.d_model must be even for a sinusoidal table, got {dim}")
    table = SinusoidalTable(rows=int(rows), dim=int(dim), embed_scale=float(int(dim) ** 0.5) if scaled else 1.0)
    return PositionCard(
        model_type=model_type, family="Marian", method="sinusoidal", num_layers=c["layers"], num_heads=c["heads"],
        max_position_embeddings=int(rows), layer_types=("full_attention",) * c["layers"], sinusoidal=table,
        sources=frozen_mapping(sources),
        notes=("columns [sin | cos], not interleaved (MarianSinusoidalPositionalEmbedding.create_weight)",),
    )


OTHER_FAMILIES: dict[str, Callable[[Reader, str], PositionCard]] = {
    "bert": _learned,
    "gpt2": _learned,
    "opt": _learned,
    "t5": _t5,
    "bloom": _bloom,
    "mpt": _mpt,
    "falcon": _falcon,
    "marian": _marian,
}
