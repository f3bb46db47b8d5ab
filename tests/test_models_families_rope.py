"""posviz.models.families_rope: the RoPE families whose position step differs from Llama's.

Each test builds the family's attention module from ``transformers`` with seeded random tiny
configs, captures the query and key it hands to the score (as in ``test_models_rotate.py``) with
the real rotary output and with the identity rotation, and compares ``card.rotate``:
partial rotary (GPT-NeoX, Phi-3), LongRoPE (Phi-3), local/global bases (Gemma 3), GPT-J's
interleaved table, Llama 4's NoPE layers and temperature, DeepSeek's MLA split and pair orders,
Falcon's rotary path.
"""

from __future__ import annotations

import random

import pytest
import torch
from test_models_rotate import _capture, _module  # the attention-capture helpers, shared

from posviz.models import position_card

transformers = pytest.importorskip("transformers", reason="the reference implementations come from transformers")
transformers.logging.set_verbosity_error()

ATOL = 1e-5  # float32 angles in transformers, float64 in posviz
SEEDS = range(4)


def _pos(rng: random.Random, seq: int, limit: int) -> torch.Tensor:
    return torch.stack([torch.arange(seq) + rng.randrange(0, max(limit - seq, 1)) for _ in range(2)])


def _eager(config):
    config._attn_implementation = "eager"
    return config


MAX_DIFF = [0.0]


def _close(got, want):
    MAX_DIFF[0] = max(MAX_DIFF[0], (got - want).abs().max().item())
    torch.testing.assert_close(got, want, atol=ATOL, rtol=1e-5)


def _check_cos_sin(monkeypatch, mod, config, attn_cls, rot_cls, rng, layers, *, limit, layer_type=None):
    card = position_card(config)
    assert card == position_card(config.to_dict())
    with torch.no_grad():
        for layer in layers:
            attn = attn_cls(config, layer).eval()
            hidden = torch.randn(2, 6, config.hidden_size)
            pos = _pos(rng, 6, limit)
            rotary = rot_cls(config)
            pe = rotary(hidden, pos) if layer_type is None else rotary(hidden, pos, config.layer_types[layer])
            q, k = _capture(monkeypatch, mod, attn, hidden, pe)
            q0, k0 = _capture(monkeypatch, mod, attn, hidden, (torch.ones_like(pe[0]), torch.zeros_like(pe[1])))
            cq, ck = card.rotate(q0, k0, pos, layer=layer)
            _close(cq, q)
            _close(ck, k)
    return card


@pytest.mark.parametrize("seed", SEEDS)
def test_gpt_neox_partial_rotary(seed, monkeypatch):
    rng = random.Random(f"neox-{seed}")
    heads = rng.choice((2, 4))
    hd, share = ((16, 0.25), (32, 0.5), (48, 0.3), (40, 0.75))[seed]  # 48 * 0.3 = 14.4: int() gives 14
    params = {"rope_type": "default", "rope_theta": rng.choice((10000.0, 1e5)), "partial_rotary_factor": share}
    config = _eager(transformers.GPTNeoXConfig(
        hidden_size=heads * hd, num_attention_heads=heads, num_hidden_layers=2, max_position_embeddings=64,
        rope_parameters=params,
    ))
    mod = _module("gpt_neox")
    card = _check_cos_sin(monkeypatch, mod, config, mod.GPTNeoXAttention, mod.GPTNeoXRotaryEmbedding, rng, [0, 1],
                          limit=64)
    assert card.rope.rotary_dim == int(hd * share) and card.rope.layout == "half"


@pytest.mark.parametrize("seed", SEEDS)
def test_phi3_partial_rotary_and_longrope(seed, monkeypatch):
    rng = random.Random(f"phi3-{seed}")
    heads, hd = rng.choice((2, 4)), rng.choice((16, 32))
    share = (1.0, 0.5, 0.75, 1.0)[seed]
    rot = int(hd * share)
    params = {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": share}
    extra = {}
    if seed % 2:  # LongRoPE: short factors up to the original context, long ones past it
        params |= {"rope_type": "longrope", "short_factor": [rng.uniform(1, 2) for _ in range(rot // 2)],
                   "long_factor": [rng.uniform(1, 8) for _ in range(rot // 2)]}
        extra["original_max_position_embeddings"] = 16
    config = _eager(transformers.Phi3Config(
        hidden_size=heads * hd, num_attention_heads=heads, num_key_value_heads=heads, num_hidden_layers=2,
        max_position_embeddings=64, rope_parameters=params, **extra,
    ))
    mod = _module("phi3")
    card = _check_cos_sin(monkeypatch, mod, config, mod.Phi3Attention, mod.Phi3RotaryEmbedding, rng, [0, 1], limit=60)
    assert card.rope.rotary_dim == rot
    if seed % 2:
        assert card.scaling(0)["original_max_position_embeddings"] == 16


@pytest.mark.parametrize("seed", SEEDS)
def test_gemma3_local_and_global_bases(seed, monkeypatch):
    rng = random.Random(f"gemma3-{seed}")
    heads, hd = rng.choice((2, 4)), rng.choice((8, 16))
    local, full = rng.choice((10000.0, 5000.0)), rng.choice((1e6, 2e5))
    full_params = {"rope_type": "default", "rope_theta": full}
    if seed % 2:
        full_params |= {"rope_type": "linear", "factor": rng.choice((8.0, 4.0))}  # Gemma 3's long-context rule
    config = _eager(transformers.Gemma3TextConfig(
        hidden_size=heads * hd, num_attention_heads=heads, num_key_value_heads=1, head_dim=hd, num_hidden_layers=6,
        max_position_embeddings=64, layer_types=[rng.choice(("sliding_attention", "full_attention")) for _ in range(6)],
        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": local},
                         "full_attention": full_params},
    ))
    mod = _module("gemma3")
    card = _check_cos_sin(monkeypatch, mod, config, mod.Gemma3Attention, mod.Gemma3RotaryEmbedding, rng,
                          range(6), limit=64, layer_type=True)
    for layer, kind in enumerate(config.layer_types):
        assert card.base(layer) == (local if kind == "sliding_attention" else full)


@pytest.mark.parametrize("seed", SEEDS)
def test_gptj_interleaved_partial(seed, monkeypatch):
    rng = random.Random(f"gptj-{seed}")
    heads, hd = rng.choice((2, 4)), rng.choice((16, 32))
    rot = rng.choice([r for r in (4, 8, 16, 32) if r <= hd])
    config = _eager(transformers.GPTJConfig(n_embd=heads * hd, n_head=heads, n_layer=1, rotary_dim=rot, n_positions=64))
    mod = _module("gptj")
    card = position_card(config)
    assert card == position_card(config.to_dict())
    with torch.no_grad():
        attn = mod.GPTJAttention(config, 0).eval()
        hidden = torch.randn(2, 6, config.n_embd)
        pos = _pos(rng, 6, 64)
        sin, cos = mod.GPTJRotaryEmbedding(config)(hidden, pos)
        q, k = _capture(monkeypatch, mod, attn, hidden, (sin, cos))
        q0, k0 = _capture(monkeypatch, mod, attn, hidden, (torch.zeros_like(sin), torch.ones_like(cos)))
    cq, ck = card.rotate(q0, k0, pos)
    _close(cq, q)
    _close(ck, k)
    assert card.rope.layout == "interleaved" and card.rope.rotary_dim == rot


@pytest.mark.parametrize("seed", SEEDS)
def test_llama4_nope_layers_temperature_and_qk_norm(seed, monkeypatch):
    rng = random.Random(f"llama4-{seed}")
    heads, hd, layers = rng.choice((2, 4)), rng.choice((8, 16)), 5
    flags = [rng.choice((0, 1)) for _ in range(layers)]
    flags[seed % layers] = 0  # at least one NoPE layer
    params = {"rope_type": "default", "rope_theta": 500000.0}
    if seed % 2:
        params |= {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8}
    config = _eager(transformers.Llama4TextConfig(
        hidden_size=heads * hd, num_attention_heads=heads, num_key_value_heads=1, head_dim=hd,
        num_hidden_layers=layers, intermediate_size=8, intermediate_size_mlp=8, num_local_experts=1,
        max_position_embeddings=64, no_rope_layers=flags, floor_scale=rng.choice((2, 3)),
        attn_scale=rng.choice((0.1, 0.5)), use_qk_norm=bool(seed % 3), rope_parameters=params,
    ))
    mod = _module("llama4")
    card = position_card(config)
    assert card == position_card(config.to_dict())
    assert card.rope.nope_layers == tuple(i for i, f in enumerate(flags) if not f)
    seq = 9
    with torch.no_grad():
        for layer in range(layers):
            attn = mod.Llama4TextAttention(config, layer).eval()
            hidden = torch.randn(2, seq, config.hidden_size)
            # NoPE layers take the temperature at the cache positions, arange(seq) without a cache
            pos = torch.arange(seq).expand(2, -1) if not flags[layer] else _pos(rng, seq, 60)
            pe = mod.Llama4TextRotaryEmbedding(config)(hidden, pos)
            q, k = _capture(monkeypatch, mod, attn, hidden, pe)
            attn.attn_temperature_tuning = False  # the identity run: no rotation, no temperature, no norm
            norm = attn.__dict__["_modules"].pop("qk_norm", None)
            q0, k0 = _capture(monkeypatch, mod, attn, hidden, torch.ones_like(pe))
            cq, ck = card.rotate(q0, k0, pos, layer=layer)
            if norm is not None:  # use_qk_norm: the L2 norm after RoPE is the module's, not the card's
                cq, ck = norm(cq), norm(ck)
            _close(cq, q)
            _close(ck, k)
            if not flags[layer]:
                assert not card.has_position(layer)
                assert torch.equal(ck, k0) and not torch.allclose(cq, q0)  # keys untouched, queries heated


def _deepseek(version: int, seed: int):
    rng = random.Random(f"deepseek{version}-{seed}")
    heads = rng.choice((2, 4))
    nope, rope_dim = rng.choice((4, 8)), rng.choice((4, 8, 16))
    params = {"rope_type": "default", "rope_theta": rng.choice((10000.0, 50000.0))}
    if seed % 2:  # DeepSeek's released rule: YaRN with mscale and mscale_all_dim
        params |= {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16, "beta_fast": 32.0,
                   "beta_slow": 1.0, "mscale": rng.choice((0.707, 1.0)), "mscale_all_dim": rng.choice((0.707, 1.0))}
    kwargs = dict(
        hidden_size=32, num_attention_heads=heads, num_key_value_heads=heads, num_hidden_layers=1,
        q_lora_rank=rng.choice((None, 8)), kv_lora_rank=8, qk_nope_head_dim=nope, qk_rope_head_dim=rope_dim,
        v_head_dim=8, max_position_embeddings=64, rope_parameters=params, intermediate_size=8,
        moe_intermediate_size=8, n_routed_experts=2, num_experts_per_tok=1,
    )
    if version == 3:
        kwargs |= {"rope_interleave": bool(seed % 3 != 2), "n_group": 1, "topk_group": 1}
        return rng, _eager(transformers.DeepseekV3Config(**kwargs)), _module("deepseek_v3")
    return rng, _eager(transformers.DeepseekV2Config(**kwargs)), _module("deepseek_v2")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("version", (2, 3))
def test_deepseek_mla_decoupled_rope(version, seed, monkeypatch):
    rng, config, mod = _deepseek(version, seed)
    card = position_card(config)
    assert card == position_card(config.to_dict())
    attn_cls = mod.DeepseekV3Attention if version == 3 else mod.DeepseekV2Attention
    rot_cls = mod.DeepseekV3RotaryEmbedding if version == 3 else mod.DeepseekV2RotaryEmbedding
    with torch.no_grad():
        attn = attn_cls(config, 0).eval()
        hidden = torch.randn(2, 6, 32)
        pos = _pos(rng, 6, 60)
        pe = rot_cls(config)(hidden, pos)
        q, k = _capture(monkeypatch, mod, attn, hidden, pe)
        if version == 3:
            interleave, config.rope_interleave = config.rope_interleave, False  # identity in the half path
            q0, k0 = _capture(monkeypatch, mod, attn, hidden, (torch.ones_like(pe[0]), torch.zeros_like(pe[1])))
            config.rope_interleave = interleave
        else:
            q0, k0 = _capture(monkeypatch, mod, attn, hidden, torch.ones_like(pe))
    cq, ck = card.rotate(q0, k0, pos)
    _close(cq, q)
    _close(ck, k)
    nope = config.qk_nope_head_dim
    assert torch.equal(cq[..., :nope], q0[..., :nope])  # the nope part never rotates
    assert torch.equal(k[:, :1, :, nope:].expand_as(k[..., nope:]), k[..., nope:])  # one rotated key for all heads
    # DeepSeek's yarn_apply_mscale: the score scale gets mscale(factor, mscale_all_dim)^2, not q or k
    assert attn.scaling == pytest.approx((nope + config.qk_rope_head_dim) ** -0.5 * card.rope.softmax_scale_factor)


@pytest.mark.parametrize("seed", SEEDS)
def test_falcon_rotary_path(seed):
    rng = random.Random(f"falcon-{seed}")
    heads, hd = rng.choice((2, 4)), rng.choice((8, 16))
    config = transformers.FalconConfig(
        hidden_size=heads * hd, num_attention_heads=heads, num_hidden_layers=1, alibi=False,
        max_position_embeddings=64, rope_parameters={"rope_type": "default", "rope_theta": rng.choice((1e4, 5e5))},
    )
    mod = _module("falcon")
    card = position_card(config)
    assert card.method == "rope" and card == position_card(config.to_dict())
    q, k = torch.randn(2, heads, 6, hd), torch.randn(2, heads, 6, hd)
    pos = _pos(rng, 6, 64)
    with torch.no_grad():
        cos, sin = mod.FalconRotaryEmbedding(config)(q, pos)
    want_q, want_k = mod.apply_rotary_pos_emb(q, k, cos, sin)  # FalconAttention.forward, alibi is None
    cq, ck = card.rotate(q, k, pos)
    _close(cq, want_q)
    _close(ck, want_k)


def test_report_largest_difference():
    """Not a check: prints the largest |card - transformers| over this file's families (run with -s)."""
    families = "NeoX, Phi-3, Gemma 3, GPT-J, Llama 4, DeepSeek, Falcon"
    print(f"\nmax |card.rotate - transformers| ({families}): {MAX_DIFF[0]:.2e}")
