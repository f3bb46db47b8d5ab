"""The position fields of released models' ``config.json`` files, as data: :data:`RELEASED`.

One :class:`Released` per model: its Hub-format config (only the fields :func:`posviz.position_card`
reads; values as in the model repository's ``config.json``), and ``source``, where the values come
from. Read a card with ``position_card(RELEASED["llama-3.1-8b"].config)``.

What is *not* here: Phi-3's LongRoPE factor lists (48 searched numbers each) are not available
offline, so ``phi-3-mini-128k`` carries **stand-ins of the right length** (``stand_ins`` names the
fields); nothing in the book draws or quotes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from .card import frozen_mapping

__all__ = ["RELEASED", "Released", "released_config"]


@dataclass(frozen=True)
class Released:
    """A released model's position fields.

    Attributes:
        name: a short name (the key in :data:`RELEASED`).
        repo: the model repository whose ``config.json`` the fields come from.
        config: the Hub-format ``config.json`` fields (read-only; :func:`released_config` gives a copy).
        source: where the values come from.
        stand_ins: fields whose values are placeholders of the right shape, not the released ones.
    """

    name: str
    repo: str
    config: Mapping[str, Any]
    source: str
    stand_ins: tuple[str, ...] = ()


_HUB = "config.json of the model repository on the Hugging Face Hub"


def _entry(
    name: str, repo: str, config: dict[str, Any], source: str = _HUB, stand_ins: tuple[str, ...] = ()
) -> Released:
    return Released(name, repo, frozen_mapping(config), f"{repo}: {source}", stand_ins)


_ENTRIES = [
    _entry("bert-base", "google-bert/bert-base-uncased",
           {"model_type": "bert", "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12,
            "max_position_embeddings": 512, "position_embedding_type": "absolute"}),
    _entry("gpt-2", "openai-community/gpt2",
           {"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024}),
    _entry("opt-125m", "facebook/opt-125m",
           {"model_type": "opt", "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12,
            "max_position_embeddings": 2048}),
    _entry("t5-small", "google-t5/t5-small",
           {"model_type": "t5", "d_model": 512, "d_kv": 64, "num_heads": 8, "num_layers": 6,
            "relative_attention_num_buckets": 32, "relative_attention_max_distance": 128}),
    _entry("pythia-70m", "EleutherAI/pythia-70m",
           {"model_type": "gpt_neox", "hidden_size": 512, "num_attention_heads": 8, "num_hidden_layers": 6,
            "max_position_embeddings": 2048, "rotary_pct": 0.25, "rotary_emb_base": 10000}),
    _entry("gpt-j-6b", "EleutherAI/gpt-j-6b",
           {"model_type": "gptj", "n_embd": 4096, "n_head": 16, "n_layer": 28, "n_positions": 2048,
            "rotary_dim": 64}),
    _entry("llama-2-7b", "meta-llama/Llama-2-7b-hf",
           {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 32,
            "num_hidden_layers": 32, "max_position_embeddings": 4096, "rope_scaling": None}),
    _entry("llama-3.1-8b", "meta-llama/Llama-3.1-8B",
           {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
            "num_hidden_layers": 32, "max_position_embeddings": 131072, "rope_theta": 500000.0,
            "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                             "original_max_position_embeddings": 8192, "rope_type": "llama3"}}),
    _entry("llama-4-scout", "meta-llama/Llama-4-Scout-17B-16E",
           {"model_type": "llama4", "text_config": {
               "model_type": "llama4_text", "hidden_size": 5120, "num_attention_heads": 40,
               "num_key_value_heads": 8, "head_dim": 128, "num_hidden_layers": 48,
               "max_position_embeddings": 10485760, "rope_theta": 500000.0,
               "rope_scaling": {"factor": 16.0, "high_freq_factor": 1.0, "low_freq_factor": 1.0,
                                "original_max_position_embeddings": 8192, "rope_type": "llama3"},
               "no_rope_layers": [], "attn_temperature_tuning": True, "floor_scale": 8192, "attn_scale": 0.1,
               "use_qk_norm": True, "intermediate_size": 8192, "intermediate_size_mlp": 16384}}),
    _entry("mistral-7b-v0.1", "mistralai/Mistral-7B-v0.1",
           {"model_type": "mistral", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
            "num_hidden_layers": 32, "max_position_embeddings": 32768, "rope_theta": 10000.0,
            "sliding_window": 4096}),
    _entry("qwen2.5-7b", "Qwen/Qwen2.5-7B",
           {"model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
            "num_hidden_layers": 28, "max_position_embeddings": 32768, "rope_theta": 1000000.0,
            "rope_scaling": None}),
    _entry("qwen3-8b", "Qwen/Qwen3-8B",
           {"model_type": "qwen3", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
            "head_dim": 128, "num_hidden_layers": 36, "max_position_embeddings": 40960, "rope_theta": 1000000}),
    _entry("gemma-3-4b", "google/gemma-3-4b-pt",
           {"model_type": "gemma3", "text_config": {
               "model_type": "gemma3_text", "hidden_size": 2560, "num_attention_heads": 8, "num_key_value_heads": 4,
               "head_dim": 256, "num_hidden_layers": 34, "max_position_embeddings": 131072,
               "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
               "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window_pattern": 6}}),
    _entry("phi-3-mini-128k", "microsoft/Phi-3-mini-128k-instruct",
           {"model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 32, "num_key_value_heads": 32,
            "num_hidden_layers": 32, "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
            "rope_theta": 10000.0,
            "rope_scaling": {"type": "longrope", "long_factor": [1.0 + i / 8 for i in range(48)],
                             "short_factor": [1.0 + i / 64 for i in range(48)]}},
           source=_HUB + "; the two factor lists are stand-ins of the right length (48), not the released values",
           stand_ins=("rope_scaling.long_factor", "rope_scaling.short_factor")),
    _entry("deepseek-v3", "deepseek-ai/DeepSeek-V3",
           {"model_type": "deepseek_v3", "hidden_size": 7168, "num_attention_heads": 128,
            "num_key_value_heads": 128, "num_hidden_layers": 61, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
            "v_head_dim": 128, "kv_lora_rank": 512, "q_lora_rank": 1536, "max_position_embeddings": 163840,
            "rope_theta": 10000,
            "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                             "original_max_position_embeddings": 4096, "type": "yarn"}}),
    _entry("smollm3-3b", "HuggingFaceTB/SmolLM3-3B",
           {"model_type": "smollm3", "hidden_size": 2048, "num_attention_heads": 16, "num_key_value_heads": 4,
            "num_hidden_layers": 36, "max_position_embeddings": 65536, "rope_theta": 5000000.0,
            "no_rope_layers": [int((i + 1) % 4 != 0) for i in range(36)]}),
    _entry("gpt-oss-20b", "openai/gpt-oss-20b",
           {"model_type": "gpt_oss", "hidden_size": 2880, "num_attention_heads": 64, "num_key_value_heads": 8,
            "head_dim": 64, "num_hidden_layers": 24, "max_position_embeddings": 131072, "rope_theta": 150000,
            "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                             "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": False},
            "layer_types": ["sliding_attention", "full_attention"] * 12}),
    _entry("bloom-560m", "bigscience/bloom-560m",
           {"model_type": "bloom", "hidden_size": 1024, "n_head": 16, "n_layer": 24}),
    _entry("mpt-7b", "mosaicml/mpt-7b",
           {"model_type": "mpt", "d_model": 4096, "n_heads": 32, "n_layers": 32, "max_seq_len": 2048,
            "attn_config": {"alibi": True, "alibi_bias_max": 8}}),
]

RELEASED: Mapping[str, Released] = MappingProxyType({e.name: e for e in _ENTRIES})
"""Released models by short name, in the book's order (learned tables, T5, RoPE families, ALiBi)."""


def _thaw(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_thaw(v) for v in value]
    return value


def released_config(name: str) -> dict[str, Any]:
    """A fresh, plain-``dict`` copy of the released config ``name`` (a key of :data:`RELEASED`)."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if name not in RELEASED:
        raise ValueError(f"name must be one of {', '.join(RELEASED)}, got {name!r}")
    return _thaw(RELEASED[name].config)
