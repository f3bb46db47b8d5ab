"""Cards of the RoPE families, read from their configs.

Family defaults (used only when a plain ``config.json`` dict lacks the field) are those of the
family's ``transformers`` config class (version 5), each cited with the paper or model card it
follows where one exists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._config import Reader
from ._rope_config import read_rope
from .card import PositionCard, RopeScheme, TemperatureRule, frozen_mapping

__all__ = ["ROPE_FAMILIES"]

# model_type -> (family name, layout, default base, its reference, default max_position_embeddings)
_PLAIN: dict[str, tuple[str, str, float, str, int]] = {
    "llama": ("Llama", "half", 10000.0, "LlamaConfig; RoFormer's base (Su et al. 2021), kept by Llama 2", 2048),
    "mistral": ("Mistral", "half", 10000.0, "MistralConfig", 131072),
    "qwen2": ("Qwen2 / Qwen2.5", "half", 10000.0, "Qwen2Config", 32768),
    "qwen3": ("Qwen3", "half", 10000.0, "Qwen3Config", 32768),
    "phi3": ("Phi-3", "half", 10000.0, "Phi3Config", 4096),
    "falcon": ("Falcon", "half", 10000.0, "FalconConfig", 2048),
    "gpt_neox": ("GPT-NeoX / Pythia", "half", 10000.0, "GPTNeoXConfig rotary_emb_base", 2048),
    "gemma2": ("Gemma 2", "half", 10000.0, "Gemma2Config", 8192),
    "smollm3": ("SmolLM3", "half", 2000000.0, "SmolLM3Config default_theta", 32768),
    "gpt_oss": ("gpt-oss", "half", 150000.0, "GptOssConfig default_theta", 131072),
    "llama4_text": ("Llama 4", "interleaved", 500000.0, "Llama4TextConfig default_theta", 131072),
    "deepseek_v2": ("DeepSeek-V2", "interleaved", 10000.0, "DeepseekV2Config", 2048),
    "deepseek_v3": ("DeepSeek-V3", "interleaved", 10000.0, "DeepseekV3Config", 4096),
}

_GPT_OSS_SCALING = (
    {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
     "original_max_position_embeddings": 4096},
    "default yarn, factor 32, original 4096, beta_fast 32, beta_slow 1 (GptOssConfig; gpt-oss model card)",
)


def _fixed_sources(sources: dict[str, str]) -> dict[str, str]:
    """Sources of the numbers that are fixed for a family unless its config says otherwise."""
    sources.setdefault("rope.rotary_offset", "0: the rotated coordinates come first")
    sources.setdefault("rope.softmax_scale_factor", "1: the score scale stays 1/sqrt(head_dim)")
    return sources


def common(r: Reader, *, max_position_default: int | None, family: str) -> dict[str, Any]:
    """Layers, heads, hidden size and context, with sources."""
    sources: dict[str, str] = {}
    try:
        layers, sources["num_layers"] = r.get(
            "n_layer", "n_layers", "num_layers", "encoder_layers", "num_hidden_layers"
        )
        heads, sources["num_heads"] = r.get(
            "n_head", "n_heads", "num_heads", "encoder_attention_heads", "num_attention_heads"
        )
    except KeyError as err:
        raise ValueError(
            f"config must give {err.args[0]} (the number of layers and of heads; read as {family})"
        ) from None
    hidden, sources["hidden_size"] = r.get("n_embd", "d_model", "hidden_size", default=None)
    if max_position_default is None:
        max_pos, src = r.get("n_positions", "max_position_embeddings", default=None)
    else:
        max_pos, src = r.get(
            "n_positions", "max_position_embeddings",
            default=max_position_default, default_source=f"default {max_position_default} ({family})",
        )
    if max_pos is not None:
        sources["max_position_embeddings"] = src
    return {"layers": int(layers), "heads": int(heads), "hidden": hidden, "max_pos": max_pos, "sources": sources}


def _head_dim(r: Reader, c: dict[str, Any]) -> tuple[int, str]:
    value, src = r.get("head_dim", default=None)
    if value is not None:
        return int(value), src
    if c["hidden"] is None:
        raise ValueError("config must give head_dim or hidden_size (with num_attention_heads)")
    return int(c["hidden"]) // c["heads"], f"{c['sources']['hidden_size']} // {c['sources']['num_heads']}"


def _layer_types(r: Reader, layers: int, default: Callable[[int], str] | None = None) -> tuple[tuple[str, ...], str]:
    value = r.raw("layer_types")
    if value:
        return tuple(str(v) for v in value), f"{r.prefix}.layer_types"
    if default is None:
        return ("full_attention",) * layers, "every layer full attention (no layer_types in the config)"
    return tuple(default(i) for i in range(layers)), "default pattern of the config class (no layer_types given)"


def _nope(r: Reader, layers: int, interval_default: int, family: str, sources: dict[str, str]) -> tuple[int, ...]:
    flags = r.raw("no_rope_layers")
    if flags:  # 1 = this layer uses RoPE, 0 = NoPE
        sources["rope.nope_layers"] = f"{r.prefix}.no_rope_layers (0 = no RoPE)"
        return tuple(i for i, f in enumerate(flags) if not f)
    interval, src = r.get(
        "no_rope_layer_interval", default=interval_default,
        default_source=f"default {interval_default} ({family})",
    )
    sources["rope.nope_layers"] = f"every {interval}th layer from {src} (no_rope_layers not given)"
    return tuple(i for i in range(layers) if (i + 1) % int(interval) == 0)


def _yarn_softmax_factor(scaling: dict[str, Any] | None) -> float:
    """DeepSeek's extra score-scale factor, ``mscale(factor, mscale_all_dim)**2`` (yarn_apply_mscale)."""
    from ..rope_scaling import yarn_mscale

    if not scaling or not scaling.get("mscale_all_dim"):
        return 1.0
    return yarn_mscale(float(scaling["factor"]), float(scaling["mscale_all_dim"])) ** 2


def rope_card(r: Reader, model_type: str) -> PositionCard:
    family, layout, theta, theta_ref, max_default = _PLAIN[model_type]
    config_class = theta_ref.split(";")[0].split(" ")[0]  # e.g. "LlamaConfig"
    c = common(r, max_position_default=max_default, family=config_class)
    sources = dict(c["sources"])
    layers = c["layers"]
    notes: list[str] = []

    nope: tuple[int, ...] = ()
    if model_type in ("llama4_text", "smollm3"):
        nope = _nope(r, layers, 4, config_class, sources)
    default_kind: Callable[[int], str] | None = None
    if model_type in ("gemma2", "gpt_oss"):  # their config classes alternate, sliding first
        default_kind = lambda i: "sliding_attention" if (i + 1) % 2 else "full_attention"  # noqa: E731
    elif model_type == "llama4_text":  # Llama4TextConfig: chunked attention in the RoPE layers
        chunked = r.get("attention_chunk_size", default=8192)[0] is not None
        default_kind = lambda i: "chunked_attention" if chunked and i not in nope else "full_attention"  # noqa: E731
    elif model_type == "smollm3" and r.raw("use_sliding_window") and r.raw("sliding_window"):
        default_kind = lambda i: "sliding_attention" if i in nope else "full_attention"  # noqa: E731
    kinds, sources["layer_types"] = _layer_types(r, layers, default_kind)

    partial_default = (1.0, "default 1.0 (every coordinate rotates)")
    partial_names: tuple[str, ...] = ("partial_rotary_factor",)
    theta_names = None
    if model_type == "gpt_neox":
        partial_default = (0.25, "default 0.25 (GPTNeoXConfig rotary_pct; Black et al. 2022, GPT-NeoX-20B §2.1)")
        partial_names = ("rotary_pct", "partial_rotary_factor")
        theta_names = {k: ("rotary_emb_base", "rope_theta") for k in kinds}
    read = read_rope(
        r, list(kinds),
        default_theta={k: (theta, f"default {theta} ({theta_ref})") for k in kinds},
        theta_names=theta_names,
        default_scaling=_GPT_OSS_SCALING if model_type == "gpt_oss" else None,
        default_partial=partial_default, partial_names=partial_names,
        max_position=c["max_pos"],
        rename_types={"su": "longrope", "yarn": "longrope"} if model_type == "phi3" else None,
    )
    sources.update(read.sources)

    offset, temperature, qk_norm = 0, None, False
    shared_key, deinterleave, softmax_factor = False, False, 1.0
    if model_type.startswith("deepseek"):
        rot, sources["rope.rotary_dim"] = r.get(
            "qk_rope_head_dim", default=64, default_source="default 64 (DeepSeek-V2 paper §2.1.3, d_h^R = 64)"
        )
        offset, sources["rope.rotary_offset"] = r.get(
            "qk_nope_head_dim", default=128, default_source="default 128 (DeepSeek-V2 paper §2.1.3, d_h = 128)"
        )
        rot, offset = int(rot), int(offset)
        head_dim = offset + rot
        sources["rope.head_dim"] = f"{sources['rope.rotary_offset']} + {sources['rope.rotary_dim']}"
        shared_key = True
        notes.append("MLA: the key's rotated part is one head shared by all heads (kv_a_proj_with_mqa)")
        if model_type == "deepseek_v3":
            interleave, src = r.get("rope_interleave", default=True, default_source="default True (DeepseekV3Config)")
            sources["rope.layout"] = src
            layout = "interleaved" if interleave else "half"
            deinterleave = bool(interleave)
        else:
            sources["rope.layout"] = "DeepSeek-V2's complex view of adjacent pairs (apply_rotary_emb)"
        softmax_factor = _yarn_softmax_factor(read.scaling[kinds[0]])
        if softmax_factor != 1.0:
            sources["rope.softmax_scale_factor"] = f"{sources[f'rope.scaling.{kinds[0]}']}: mscale_all_dim, factor"
    else:
        head_dim, sources["rope.head_dim"] = _head_dim(r, c)
        if model_type in ("gpt_neox", "falcon"):
            head_dim = int(c["hidden"]) // c["heads"]  # their head size ignores any head_dim field
            sources["rope.head_dim"] = f"{c['sources']['hidden_size']} // {c['sources']['num_heads']}"
        rot = int(head_dim * read.partial_rotary_factor)  # transformers: int(head_dim * partial_rotary_factor)
        sources["rope.rotary_dim"] = f"int(head_dim * partial_rotary_factor) ({sources['rope.partial_rotary_factor']})"
        sources["rope.layout"] = {
            "half": "rotate_half pairs (x_i, x_{i+d/2}) in the family's apply_rotary_pos_emb",
            "interleaved": "complex view of adjacent pairs (Llama 4's apply_rotary_emb, Meta's reference code)",
        }[layout]

    if model_type == "llama4_text":
        tuning, src = r.get("attn_temperature_tuning", default=True, default_source="default True (Llama4TextConfig)")
        if tuning:
            floor, sources["rope.temperature.floor_scale"] = r.get(
                "floor_scale", default=8192, default_source="default 8192 (Llama4TextConfig)"
            )
            scale, sources["rope.temperature.attn_scale"] = r.get(
                "attn_scale", default=0.1, default_source="default 0.1 (Llama4TextConfig)"
            )
            temperature = TemperatureRule(float(floor), float(scale))
        qk_norm, sources["rope.qk_norm_after_rope"] = r.get(
            "use_qk_norm", default=True, default_source="default True (Llama4TextConfig)"
        )
        qk_norm = bool(qk_norm)
        if qk_norm:
            notes.append("use_qk_norm: an L2 norm follows RoPE in RoPE layers; a norm, so rotate() leaves it out")

    if model_type in ("qwen3",):
        notes.append("q_norm / k_norm (RMSNorm per head) come before RoPE: pass normed q and k to rotate()")
    if model_type == "falcon":
        notes.append("Falcon with alibi=False: RoPE (this card); alibi=True gives an ALiBi card")

    rope = RopeScheme(
        layout=layout,  # type: ignore[arg-type]
        head_dim=head_dim,
        rotary_dim=rot,
        rotary_offset=offset,
        partial_rotary_factor=read.partial_rotary_factor if not model_type.startswith("deepseek") else 1.0,
        base=frozen_mapping(read.base),
        scaling=frozen_mapping(read.scaling),
        nope_layers=tuple(nope),
        deinterleave_output=deinterleave,
        shared_key_head=shared_key,
        temperature=temperature,
        softmax_scale_factor=softmax_factor,
        qk_norm_after_rope=qk_norm,
    )
    return PositionCard(
        model_type=model_type, family=family, method="rope", num_layers=layers, num_heads=c["heads"],
        max_position_embeddings=None if c["max_pos"] is None else int(c["max_pos"]), layer_types=kinds,
        rope=rope, sources=frozen_mapping(_fixed_sources(sources)), notes=tuple(notes),
    )


def gemma3_card(r: Reader, model_type: str) -> PositionCard:
    """Gemma 3: local (sliding) and global layers with their own bases; scaling on the global ones."""
    c = common(r, max_position_default=131072, family="Gemma3TextConfig")
    sources = dict(c["sources"])
    pattern, _ = r.get("sliding_window_pattern", default=6)
    kinds, sources["layer_types"] = _layer_types(
        r, c["layers"], lambda i: "sliding_attention" if (i + 1) % int(pattern) else "full_attention"
    )
    read = read_rope(
        r, sorted(set(kinds) | {"sliding_attention", "full_attention"}),
        default_theta={
            "full_attention": (1_000_000.0, "default 1000000.0 (Gemma3TextConfig; Gemma 3 report §2.1, global)"),
            "sliding_attention": (10_000.0, "default 10000.0 (Gemma3TextConfig; Gemma 3 report §2.1, local)"),
        },
        theta_names={"full_attention": ("rope_theta",), "sliding_attention": ("rope_local_base_freq",)},
        hub_scaling_kinds={"full_attention"},
        max_position=c["max_pos"],
    )
    sources.update(read.sources)
    head_dim, sources["rope.head_dim"] = _head_dim(r, c)
    sources["rope.rotary_dim"] = "every coordinate (Gemma3RotaryEmbedding)"
    sources["rope.layout"] = "rotate_half pairs (x_i, x_{i+d/2}) in Gemma 3's apply_rotary_pos_emb"
    rope = RopeScheme(
        layout="half", head_dim=head_dim, rotary_dim=head_dim, rotary_offset=0, partial_rotary_factor=1.0,
        base=frozen_mapping(read.base), scaling=frozen_mapping(read.scaling),
    )
    return PositionCard(
        model_type="gemma3_text", family="Gemma 3", method="rope", num_layers=c["layers"], num_heads=c["heads"],
        max_position_embeddings=int(c["max_pos"]), layer_types=kinds, rope=rope,
        sources=frozen_mapping(_fixed_sources(sources)),
        notes=("q_norm / k_norm (RMSNorm per head) come before RoPE: pass normed q and k to rotate()",),
    )


def gptj_card(r: Reader, model_type: str) -> PositionCard:
    """GPT-J: interleaved pairs on the first ``rotary_dim`` coordinates, base fixed at 10000."""
    c = common(r, max_position_default=2048, family="GPTJConfig n_positions")
    sources = dict(c["sources"])
    head_dim = int(c["hidden"]) // c["heads"]
    sources["rope.head_dim"] = f"{c['sources']['hidden_size']} // {c['sources']['num_heads']}"
    rot, src = r.get("rotary_dim", default=None)
    notes = ["positions index a table of max_position_embeddings rows (create_sinusoidal_positions)"]
    if rot is None:
        rot, src = head_dim, "rotary_dim None: every coordinate"
        notes.append("rotary_dim None: transformers builds a hidden_size-wide table, which fits one head only")
    sources["rope.rotary_dim"] = src
    sources["rope.base.full_attention"] = "10000, fixed in create_sinusoidal_positions (mesh-transformer-jax)"
    sources["rope.layout"] = "rotate_every_two: adjacent pairs (x_{2i}, x_{2i+1})"
    sources["layer_types"] = "every layer full attention"
    rope = RopeScheme(
        layout="interleaved", head_dim=head_dim, rotary_dim=int(rot), rotary_offset=0,
        partial_rotary_factor=int(rot) / head_dim, base=frozen_mapping({"full_attention": 10000.0}),
        scaling=frozen_mapping({"full_attention": None}),
    )
    sources["rope.partial_rotary_factor"] = "rotary_dim / head_dim"
    return PositionCard(
        model_type=model_type, family="GPT-J", method="rope", num_layers=c["layers"], num_heads=c["heads"],
        max_position_embeddings=int(c["max_pos"]), layer_types=("full_attention",) * c["layers"], rope=rope,
        sources=frozen_mapping(_fixed_sources(sources)), notes=tuple(notes),
    )


ROPE_FAMILIES: dict[str, Callable[[Reader, str], PositionCard]] = {
    **{mt: rope_card for mt in _PLAIN if mt != "falcon"},
    "gemma3_text": gemma3_card,
    "gptj": gptj_card,
}
