"""posviz.models.rotate: each RoPE family's card.rotate against the family's own attention module.

For every family and several seeded random tiny configs, the family's ``<Family>Attention`` module
from ``transformers`` runs on random hidden states with its own rotary module's output, and the
query and key it hands to the score function are captured (the module's ``eager_attention_forward``
is replaced by a recorder). A second run with the identity rotation (cos = 1, sin = 0, or
``freqs_cis = 1``) captures the same tensors *before* the position step (after the projections and
any norm that precedes RoPE). ``card.rotate`` applied to the second pair must give the first.
"""

from __future__ import annotations

import importlib
import random

import pytest
import torch

from posviz.models import position_card

transformers = pytest.importorskip("transformers", reason="the reference implementations come from transformers")
transformers.logging.set_verbosity_error()

ATOL = 1e-5  # float32: transformers rounds m * theta_i to float32, posviz forms it in float64
SEEDS = range(6)
MAX_DIFF: dict[str, float] = {}


def _module(name: str):
    return importlib.import_module(f"transformers.models.{name}.modeling_{name}")


def _capture(monkeypatch, mod, attn, hidden, pe):
    got = {}

    def recorder(module, query, key, value, attention_mask, **kwargs):
        got["q"], got["k"] = query.clone(), key.clone()
        return torch.zeros(query.shape[0], query.shape[2], query.shape[1], value.shape[-1]), None

    monkeypatch.setattr(mod, "eager_attention_forward", recorder)
    attn(hidden_states=hidden, position_embeddings=pe, attention_mask=None)
    return got["q"], got["k"]


def _scaling(rng: random.Random, seed: int, max_pos: int, rotary_dim: int, allowed: tuple[str, ...]) -> dict | None:
    kind = ("default", *allowed)[seed % (len(allowed) + 1)]  # every rule the family allows, in turn
    original = max_pos // rng.choice((2, 4, 8))
    if kind == "default":
        return None
    if kind == "linear":
        return {"rope_type": "linear", "factor": rng.uniform(1.5, 8.0)}
    if kind == "dynamic":
        return {"rope_type": "dynamic", "factor": rng.uniform(1.5, 8.0)}
    if kind == "yarn":
        return {"rope_type": "yarn", "factor": max_pos / original, "original_max_position_embeddings": original,
                "beta_fast": rng.choice((32.0, 16.0)), "beta_slow": rng.choice((1.0, 2.0))}
    if kind == "llama3":
        return {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": original}
    n = rotary_dim // 2
    return {"rope_type": "longrope", "original_max_position_embeddings": original,
            "short_factor": [rng.uniform(1.0, 2.0) for _ in range(n)],
            "long_factor": [rng.uniform(1.0, 8.0) for _ in range(n)]}


def _positions(rng: random.Random, seq: int, limit: int) -> torch.Tensor:
    starts = [rng.randrange(0, max(limit - seq, 1)) for _ in range(2)]
    return torch.stack([torch.arange(seq) + s for s in starts])


def _sizes(rng: random.Random) -> dict:
    heads = rng.choice((2, 4))
    return {"heads": heads, "kv": rng.choice([d for d in (1, 2, heads) if heads % d == 0]),
            "head_dim": rng.choice((8, 16, 32)), "base": rng.choice((10000.0, 500000.0, 1e6, rng.uniform(100, 1e5)))}


# model_type -> (module, config class, attention class, rotary class, config maker, scaling types tried)
def _llama_like(rng, s, max_pos, scaling):
    params = {"rope_type": "default", "rope_theta": s["base"]} | (scaling or {})
    return dict(hidden_size=s["heads"] * s["head_dim"], num_attention_heads=s["heads"],
                num_key_value_heads=s["kv"], head_dim=s["head_dim"], num_hidden_layers=4,
                max_position_embeddings=max_pos, rope_parameters=params)


ALL_TYPES = ("linear", "dynamic", "yarn", "llama3", "longrope")
CASES = {
    "llama": ("llama", "LlamaConfig", "LlamaAttention", "LlamaRotaryEmbedding", ALL_TYPES),
    "mistral": ("mistral", "MistralConfig", "MistralAttention", "MistralRotaryEmbedding", ("linear", "yarn")),
    "qwen2": ("qwen2", "Qwen2Config", "Qwen2Attention", "Qwen2RotaryEmbedding", ("yarn", "dynamic")),
    "qwen3": ("qwen3", "Qwen3Config", "Qwen3Attention", "Qwen3RotaryEmbedding", ("yarn",)),
    "smollm3": ("smollm3", "SmolLM3Config", "SmolLM3Attention", "SmolLM3RotaryEmbedding", ("yarn",)),
    "gemma2": ("gemma2", "Gemma2Config", "Gemma2Attention", "Gemma2RotaryEmbedding", ("linear",)),
    "gpt_oss": ("gpt_oss", "GptOssConfig", "GptOssAttention", "GptOssRotaryEmbedding", ("yarn",)),
}


def _build(model_type: str, seed: int):
    mod_name, cfg_name, attn_name, rot_name, types = CASES[model_type]
    rng = random.Random(f"{model_type}-{seed}")
    s = _sizes(rng)
    max_pos = rng.choice((32, 64))
    scaling = _scaling(rng, seed, max_pos, s["head_dim"], types)
    kwargs = _llama_like(rng, s, max_pos, scaling)
    if model_type == "smollm3":
        kwargs["no_rope_layers"] = [rng.choice((0, 1)) for _ in range(4)]
    if model_type == "gpt_oss":
        kwargs.update(num_local_experts=2, num_experts_per_tok=1, intermediate_size=8)
    mod = _module(mod_name)
    config = getattr(transformers, cfg_name)(**kwargs)
    config._attn_implementation = "eager"
    return mod, config, getattr(mod, attn_name), getattr(mod, rot_name), rng


def _compare(name: str, got: torch.Tensor, want: torch.Tensor) -> None:
    diff = (got - want).abs().max().item()
    MAX_DIFF[name] = max(MAX_DIFF.get(name, 0.0), diff)
    torch.testing.assert_close(got, want, atol=ATOL, rtol=1e-5)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("model_type", sorted(CASES))
def test_llama_like_families_match_their_attention_module(model_type, seed, monkeypatch):
    torch.manual_seed(seed)
    mod, config, attn_cls, rot_cls, rng = _build(model_type, seed)
    card = position_card(config)
    assert card == position_card(config.to_dict())
    with torch.no_grad():
        for layer in range(config.num_hidden_layers):
            attn = attn_cls(config, layer).eval()
            rotary = rot_cls(config)
            hidden = torch.randn(2, 5, config.hidden_size)
            pos = _positions(rng, 5, 3 * config.max_position_embeddings)
            pe = rotary(hidden, pos)
            q, k = _capture(monkeypatch, mod, attn, hidden, pe)
            q0, k0 = _capture(monkeypatch, mod, attn, hidden, (torch.ones_like(pe[0]), torch.zeros_like(pe[1])))
            cq, ck = card.rotate(q0, k0, pos, layer=layer)
            _compare(model_type, cq, q)
            _compare(model_type, ck, k)


def test_report_largest_difference():
    """Not a check: prints the largest |card - transformers| per family (run with -s)."""
    print("\nmax |card.rotate - transformers| per family:", {k: f"{v:.2e}" for k, v in sorted(MAX_DIFF.items())})
