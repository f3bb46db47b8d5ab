"""posviz.models.card and position_card: dicts and objects, Hub-format config.json, sources, errors.

The Hub-format dicts below carry the position fields of released ``config.json`` files (shapes and
values of the model repositories; Phi-3's factor lists are stand-ins of the right length). Each
is read twice: as the plain dict, and through the family's ``transformers`` config class, which
standardizes it its own way; both must give the same card (sources aside).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

import pytest
import torch

import posviz
from posviz.models import SUPPORTED_MODEL_TYPES, PositionCard, position_card

transformers = pytest.importorskip("transformers", reason="the configs are checked against transformers' classes")
transformers.logging.set_verbosity_error()

HUB = {
    "llama-2-7b": {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 32,
                   "num_hidden_layers": 32, "max_position_embeddings": 4096, "rope_scaling": None},
    "llama-3.1-8b": {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
                     "num_hidden_layers": 32, "max_position_embeddings": 131072, "rope_theta": 500000.0,
                     "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                      "original_max_position_embeddings": 8192, "rope_type": "llama3"}},
    "mistral-7b-v0.1": {"model_type": "mistral", "hidden_size": 4096, "num_attention_heads": 32,
                        "num_key_value_heads": 8, "num_hidden_layers": 32, "max_position_embeddings": 32768,
                        "rope_theta": 10000.0, "sliding_window": 4096},
    "qwen2.5-7b": {"model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
                   "num_hidden_layers": 28, "max_position_embeddings": 32768, "rope_theta": 1000000.0,
                   "rope_scaling": None},
    "qwen3-8b": {"model_type": "qwen3", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
                 "head_dim": 128, "num_hidden_layers": 36, "max_position_embeddings": 40960, "rope_theta": 1000000},
    "gemma-3-4b": {"model_type": "gemma3", "text_config": {
        "model_type": "gemma3_text", "hidden_size": 2560, "num_attention_heads": 8, "num_key_value_heads": 4,
        "head_dim": 256, "num_hidden_layers": 34, "max_position_embeddings": 131072, "rope_theta": 1000000.0,
        "rope_local_base_freq": 10000.0, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
        "sliding_window_pattern": 6}},
    "phi-3-mini-128k": {"model_type": "phi3", "hidden_size": 3072, "num_attention_heads": 32,
                        "num_key_value_heads": 32, "num_hidden_layers": 32, "max_position_embeddings": 131072,
                        "original_max_position_embeddings": 4096, "rope_theta": 10000.0,
                        "rope_scaling": {"type": "longrope", "long_factor": [1.0 + i / 8 for i in range(48)],
                                         "short_factor": [1.0 + i / 64 for i in range(48)]}},
    "pythia-70m": {"model_type": "gpt_neox", "hidden_size": 512, "num_attention_heads": 8, "num_hidden_layers": 6,
                   "max_position_embeddings": 2048, "rotary_pct": 0.25, "rotary_emb_base": 10000},
    "deepseek-v3": {"model_type": "deepseek_v3", "hidden_size": 7168, "num_attention_heads": 128,
                    "num_key_value_heads": 128, "num_hidden_layers": 61, "qk_nope_head_dim": 128,
                    "qk_rope_head_dim": 64, "v_head_dim": 128, "kv_lora_rank": 512, "q_lora_rank": 1536,
                    "max_position_embeddings": 163840, "rope_theta": 10000,
                    "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                                     "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                                     "type": "yarn"}},
    "gpt-oss-20b": {"model_type": "gpt_oss", "hidden_size": 2880, "num_attention_heads": 64,
                    "num_key_value_heads": 8, "head_dim": 64, "num_hidden_layers": 24,
                    "max_position_embeddings": 131072, "rope_theta": 150000,
                    "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                                     "original_max_position_embeddings": 4096, "rope_type": "yarn",
                                     "truncate": False},
                    "layer_types": ["sliding_attention", "full_attention"] * 12},
    "smollm3-3b": {"model_type": "smollm3", "hidden_size": 2048, "num_attention_heads": 16,
                   "num_key_value_heads": 4, "num_hidden_layers": 36, "max_position_embeddings": 65536,
                   "rope_theta": 5000000.0, "no_rope_layers": [int((i + 1) % 4 != 0) for i in range(36)]},
    "llama-4-scout": {"model_type": "llama4", "text_config": {
        "model_type": "llama4_text", "hidden_size": 5120, "num_attention_heads": 40, "num_key_value_heads": 8,
        "head_dim": 128, "num_hidden_layers": 48, "max_position_embeddings": 10485760, "rope_theta": 500000.0,
        "rope_scaling": {"factor": 16.0, "high_freq_factor": 1.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "no_rope_layers": [], "attn_temperature_tuning": True, "floor_scale": 8192, "attn_scale": 0.1,
        "use_qk_norm": True, "intermediate_size": 8192, "intermediate_size_mlp": 16384}},
    "bloom-560m": {"model_type": "bloom", "hidden_size": 1024, "n_head": 16, "n_layer": 24},
    "mpt-7b": {"model_type": "mpt", "d_model": 4096, "n_heads": 32, "n_layers": 32, "max_seq_len": 2048,
               "attn_config": {"alibi": True, "alibi_bias_max": 8}},
    "t5-small": {"model_type": "t5", "d_model": 512, "d_kv": 64, "num_heads": 8, "num_layers": 6,
                 "relative_attention_num_buckets": 32, "relative_attention_max_distance": 128},
    "opus-mt-en-de": {"model_type": "marian", "d_model": 512, "encoder_layers": 6, "decoder_layers": 6,
                      "encoder_attention_heads": 8, "decoder_attention_heads": 8, "max_position_embeddings": 512,
                      "scale_embedding": True},
    "opt-125m": {"model_type": "opt", "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12,
                 "max_position_embeddings": 2048},
}


def _object(hub: dict):
    fields = {k: v for k, v in hub.items() if k != "model_type"}
    return transformers.CONFIG_MAPPING[hub["model_type"]](**json.loads(json.dumps(fields)))


def _without_sources(card: PositionCard) -> PositionCard:
    return dataclasses.replace(card, sources={}, notes=())


@pytest.mark.parametrize("name", sorted(HUB))
def test_hub_dict_reads_as_transformers_reads_it(name):
    hub = json.loads(json.dumps(HUB[name]))
    from_dict, from_object = position_card(hub), position_card(_object(hub))
    assert _without_sources(from_dict) == _without_sources(from_object)
    assert position_card(_object(hub).to_dict()) == from_object  # to_dict() round trip, sources included


def test_what_the_released_configs_say():
    llama31 = position_card(HUB["llama-3.1-8b"])
    assert llama31.scaling()["rope_type"] == "llama3" and llama31.scaling()["original_max_position_embeddings"] == 8192
    assert llama31.base() == 500000.0 and llama31.sources["rope.base.full_attention"] == "config.rope_theta"
    llama2 = position_card(HUB["llama-2-7b"])
    assert llama2.base() == 10000.0 and llama2.scaling() is None
    assert "LlamaConfig" in llama2.sources["rope.base.full_attention"]
    gemma = position_card(HUB["gemma-3-4b"])
    kinds = gemma.layer_types
    assert kinds[5] == "full_attention" and kinds[0] == "sliding_attention"
    assert (gemma.base(0), gemma.base(5)) == (10000.0, 1000000.0)
    assert gemma.scaling(0) is None and gemma.scaling(5)["factor"] == 8.0
    pythia = position_card(HUB["pythia-70m"])
    assert (pythia.rope.rotary_dim, pythia.rope.head_dim, pythia.sources["rope.partial_rotary_factor"]) == (
        16, 64, "config.rotary_pct")
    phi = position_card(HUB["phi-3-mini-128k"])
    assert phi.scaling()["rope_type"] == "longrope" and phi.scaling()["original_max_position_embeddings"] == 4096
    scout = position_card(HUB["llama-4-scout"])
    assert scout.rope.nope_layers == tuple(range(3, 48, 4)) and scout.rope.layout == "interleaved"
    assert scout.rope.temperature.floor_scale == 8192 and scout.rope.qk_norm_after_rope
    v3 = position_card(HUB["deepseek-v3"])
    assert (v3.rope.rotary_offset, v3.rope.rotary_dim, v3.rope.deinterleave_output) == (128, 64, True)
    assert v3.rope.softmax_scale_factor == pytest.approx(posviz.yarn_mscale(40, 1.0) ** 2)
    assert position_card(HUB["smollm3-3b"]).rope.nope_layers == tuple(range(3, 36, 4))
    assert position_card(HUB["mpt-7b"]).alibi.alibi_bias_max == 8
    assert position_card(HUB["opt-125m"]).learned.offset == 2


def _numbers(value, path=""):
    """Paths of every number on a card (mappings and tuples of numbers count as one)."""
    if dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            if f.name not in ("sources", "notes", "model_type", "family", "method", "layer_types", "layout"):
                yield from _numbers(getattr(value, f.name), f"{path}.{f.name}".lstrip("."))
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if item is not None and not isinstance(item, bool):
                yield f"{path}.{key}"
    elif isinstance(value, tuple) and value:
        yield path
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path


@pytest.mark.parametrize("name", sorted(HUB))
def test_every_number_cites_its_source(name):
    card = position_card(HUB[name])
    missing = [p for p in _numbers(card) if p not in card.sources and p.rsplit(".", 1)[0] not in card.sources]
    assert not missing, f"{name}: no source for {missing}"
    assert all(isinstance(s, str) and s for s in card.sources.values())


def test_cards_are_frozen():
    card = position_card(HUB["llama-3.1-8b"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        card.method = "alibi"
    with pytest.raises(TypeError):
        card.rope.base["full_attention"] = 1.0
    plain = card.scaling()
    plain["factor"] = 1.0  # a copy: the card keeps its own
    assert card.scaling()["factor"] == 8.0


def test_unknown_or_missing_family_is_a_clear_error():
    with pytest.raises(ValueError, match=r"config has model_type 'roformer'.*supported model types: .*llama"):
        position_card({"model_type": "roformer"})
    with pytest.raises(ValueError, match="config must name its family in model_type"):
        position_card({"hidden_size": 8})
    with pytest.raises(TypeError, match="config must be a transformers config object or a config.json dict"):
        position_card("meta-llama/Llama-3.1-8B")
    with pytest.raises(ValueError, match="must give n_layer"):
        position_card({"model_type": "llama", "hidden_size": 8})
    required = ("marian bert gpt2 opt t5 gpt_neox gptj llama llama4 mistral qwen2 qwen3 gemma2 gemma3 phi3 "
                "deepseek_v2 deepseek_v3 bloom mpt falcon smollm3 gpt_oss").split()
    for name in required:
        assert name in SUPPORTED_MODEL_TYPES


def test_methods_refuse_the_wrong_family_and_bad_tensors():
    llama, bloom, t5 = (position_card(HUB[n]) for n in ("llama-3.1-8b", "bloom-560m", "t5-small"))
    with pytest.raises(ValueError, match="rotate is for RoPE families; BLOOM"):
        bloom.rotate(torch.zeros(1, 1, 2, 64), torch.zeros(1, 1, 2, 64), torch.arange(2))
    with pytest.raises(ValueError, match="bias is for ALiBi and T5 families; Llama"):
        llama.bias(4)
    with pytest.raises(ValueError, match="positions is for learned and sinusoidal tables"):
        llama.positions(seq_len=3)
    with pytest.raises(ValueError, match=r"layer must be in \[0, 31\]"):
        llama.rotate(torch.zeros(1, 1, 2, 128), torch.zeros(1, 1, 2, 128), torch.arange(2), layer=32)
    with pytest.raises(ValueError, match="q.shape\\[-1\\] must be this card's head_dim 128"):
        llama.rotate(torch.zeros(1, 1, 2, 64), torch.zeros(1, 1, 2, 64), torch.arange(2))
    with pytest.raises(ValueError, match="position_ids must be \\[seq\\] or \\[batch, seq\\] with seq=2"):
        llama.rotate(torch.zeros(1, 1, 2, 128), torch.zeros(1, 1, 2, 128), torch.arange(3))
    with pytest.raises(TypeError, match="position_ids must be an integer tensor"):
        llama.rotate(torch.zeros(1, 1, 2, 128), torch.zeros(1, 1, 2, 128), torch.arange(2.0))
    with pytest.raises(TypeError, match="pass table="):
        t5.bias(3)
    with pytest.raises(ValueError, match="stack must be one of"):
        t5.bias(3, table=torch.zeros(32, 8), stack="cross")


def test_rotate_keeps_dtype_and_the_layout_matters():
    card = position_card(HUB["qwen2.5-7b"])
    q = torch.randn(1, 2, 4, 128, dtype=torch.float64)
    rq, _ = card.rotate(q, q, torch.arange(4) + 100)
    assert rq.dtype == torch.float64 and rq.shape == q.shape
    wrong = posviz.apply_rope(q, torch.arange(4) + 100, card.base(), layout="interleaved")
    assert not torch.allclose(rq, wrong)
    assert torch.allclose(rq, posviz.apply_rope(q, torch.arange(4) + 100, card.base(), layout="half"))


def test_summary_states_the_five_facts():
    gemma = position_card(HUB["gemma-3-4b"]).summary()
    assert gemma["base"] == "full 1e+06, sliding 10000" and gemma["scaling"] == "full: linear, factor 8; sliding: none"
    scout = position_card(HUB["llama-4-scout"]).summary()
    assert scout["nope"].startswith("12 of 48: 3, 7, 11") and scout["pairing"].startswith("interleaved")
    assert scout["scaling"] == "llama3, factor 16, original 8192"
    v3 = position_card(HUB["deepseek-v3"]).summary()
    assert v3["rotated"] == "64 of 192 (last 64, after 128 unrotated)" and "[evens | odds]" in v3["pairing"]
    assert position_card(HUB["pythia-70m"]).summary()["rotated"] == "16 of 64"
    assert position_card(HUB["bloom-560m"]).summary() == {
        "family": "BLOOM", "method": "ALiBi", "pairing": "-", "base": "-", "rotated": "-", "scaling": "-", "nope": "-"}
