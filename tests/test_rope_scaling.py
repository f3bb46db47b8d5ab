"""RoPE scaling rules against transformers' own code, on many random small configs, and their defining properties.

Two comparisons per config: posviz's float64 ladder against ``transformers``' own functions run
in float64 (their module's ``torch`` seen through a shim that maps ``torch.float``/``float32`` to
float64: the same code, without float32 noise, must agree to 1e-12), and posviz's float32 ladder
against ``transformers``' float32 ``inv_freq`` (within ``ULPS`` float32 ulp of the unscaled
:math:`\\theta_i`: transformers rounds the exponent ``2i/d`` to float32 before ``base ** ...``).
"""

import math
import random
import types
from unittest import mock

import pytest
import torch

import posviz


@pytest.fixture
def hf():
    """Skip (with a reason) when the test extra is absent; the properties below run without it."""
    transformers = pytest.importorskip("transformers", reason="the reference tests need the test extra (transformers)")
    transformers.logging.set_verbosity_error()  # configs with unusual factors warn; the values are what we compare


reference = pytest.mark.usefixtures("hf")

TYPES = ["linear", "dynamic", "yarn", "llama3", "longrope"]
N_CONFIGS = 120  # per type
ULPS = 8  # float32 ulp of the unscaled theta_i; the measured maxima are printed (pytest -s)
EPS32 = torch.finfo(torch.float32).eps


def random_config(kind: str, rng: random.Random) -> tuple[int, float, dict, int, int | None]:
    """(dim, base, rope_parameters, max_position_embeddings, seq_len) of one random small config."""
    half = rng.randint(2 if kind == "dynamic" else 1, 48)
    dim = 2 * half
    base = rng.choice([10000.0, 500000.0, 1e6, 10.0 ** rng.uniform(1.5, 7)])
    max_pos = rng.randint(16, 200_000)
    rp: dict = {"rope_type": kind, "rope_theta": base}
    if kind != "longrope" or rng.random() < 0.5:
        rp["factor"] = rng.choice([rng.uniform(1, 64), float(rng.choice([2, 4, 8, 16, 32]))])
    if kind in ("yarn", "llama3", "longrope"):
        rp["original_max_position_embeddings"] = rng.randint(16, max_pos)
    if kind == "yarn":
        if rng.random() < 0.5:
            rp["beta_fast"] = rng.uniform(8, 64)
        if rng.random() < 0.5:
            rp["beta_slow"] = rng.uniform(0.25, 4)
        if rng.random() < 0.5:
            rp["truncate"] = rng.random() < 0.5
        if rng.random() < 0.3:
            rp["mscale"], rp["mscale_all_dim"] = rng.uniform(0.5, 1.5), rng.choice([1.0, rng.uniform(0.5, 1.5)])
        if rng.random() < 0.15:
            rp["attention_factor"] = rng.uniform(0.5, 2.0)
        if rng.random() < 0.15:  # factor None: the ratio of the two lengths (transformers requires the key)
            rp["factor"] = None
    if kind == "llama3":
        low = rng.uniform(0.5, 2)
        high = low if rng.random() < 0.15 else low + rng.uniform(0.5, 8)  # equal: Llama 4 Scout's step
        rp["low_freq_factor"], rp["high_freq_factor"] = low, high
    if kind == "longrope":
        rp["short_factor"] = [rng.uniform(1, 2) for _ in range(half)]
        rp["long_factor"] = [rng.uniform(1, 40) for _ in range(half)]
        if rng.random() < 0.15:
            rp["attention_factor"] = rng.uniform(0.5, 2.0)
    seq_len = rng.choice([None, rng.randint(1, max_pos), rng.randint(max_pos, 3 * max_pos)])
    return dim, base, rp, max_pos, seq_len


def hf_config(dim: int, rp: dict, max_pos: int):
    from transformers import LlamaConfig

    return LlamaConfig(
        hidden_size=2 * dim, num_attention_heads=2, head_dim=dim, max_position_embeddings=max_pos,
        rope_parameters=dict(rp),
    )


class _Float64Torch(types.ModuleType):
    """``torch`` with ``float``/``float32`` meaning float64: runs transformers' float32 code in float64."""

    def __getattr__(self, name):
        return torch.float64 if name in ("float", "float32") else getattr(torch, name)


def hf_inv_freq(kind: str, dim: int, rp: dict, max_pos: int, seq_len, *, float64: bool):
    from transformers import modeling_rope_utils as hf_rope

    config = hf_config(dim, rp, max_pos)
    if not float64:
        return hf_rope.ROPE_INIT_FUNCTIONS[kind](config, "cpu", seq_len=seq_len)
    with (
        mock.patch.object(hf_rope, "torch", _Float64Torch("torch")),
        mock.patch.object(torch.Tensor, "float", torch.Tensor.double),  # longrope's arange(...).float()
    ):
        return hf_rope.ROPE_INIT_FUNCTIONS[kind](config, "cpu", seq_len=seq_len)


def ours(dim, base, rp, max_pos, seq_len, dtype):
    scaling = dict(rp, max_position_embeddings=max_pos)  # the config's field, pasted into the mapping
    return posviz.rope_frequencies(dim, base, scaling=scaling, seq_len=seq_len, device="cpu", dtype=dtype)


def agreement(kind: str, seed: int = 0) -> dict:
    rng = random.Random(f"{kind}-{seed}")
    worst = {"rel64": 0.0, "ulps32": 0.0, "abs32": 0.0, "factor": 0.0, "n": 0}
    seen: dict[str, int] = {}  # how often each branch of the rule was exercised
    for _ in range(N_CONFIGS):
        dim, base, rp, max_pos, seq_len = random_config(kind, rng)
        ref64, factor64 = hf_inv_freq(kind, dim, rp, max_pos, seq_len, float64=True)
        ref32, factor32 = hf_inv_freq(kind, dim, rp, max_pos, seq_len, float64=False)
        assert ref64.dtype == torch.float64 and ref32.dtype == torch.float32
        got64 = ours(dim, base, rp, max_pos, seq_len, torch.float64)
        got32 = ours(dim, base, rp, max_pos, seq_len, torch.float32)
        plain = posviz.rope_frequencies(dim, base, device="cpu", dtype=torch.float64)
        worst["rel64"] = max(worst["rel64"], ((got64 - ref64).abs() / ref64).max().item())
        diff32 = (got32.double() - ref32.double()).abs()
        worst["ulps32"] = max(worst["ulps32"], (diff32 / (EPS32 * plain)).max().item())
        worst["abs32"] = max(worst["abs32"], diff32.max().item())
        mine = posviz.rope_attention_factor(dict(rp, max_position_embeddings=max_pos), seq_len=seq_len)
        assert factor32 == factor64
        worst["factor"] = max(worst["factor"], abs(mine - factor32))
        worst["n"] += 1
        for branch in branches(kind, dim, base, rp, max_pos, seq_len, got64, plain):
            seen[branch] = seen.get(branch, 0) + 1
    worst["seen"] = seen
    return worst


BRANCHES = {
    "linear": {"scaled"},
    "dynamic": {"plain (seq_len <= max)", "grown (seq_len > max)"},
    "yarn": {"ramp interior", "truncate=False", "mscale", "attention_factor", "factor None", "beta set"},
    "llama3": {"all three bands", "step (high == low)"},
    "longrope": {"short", "long", "attention_factor", "factor None"},
}


def branches(kind, dim, base, rp, max_pos, seq_len, theta, plain) -> set[str]:
    """Which parts of the rule a config exercises (so that a rule's test cannot pass on one branch only)."""
    out = set()
    ratio = theta / plain
    if kind == "linear":
        out.add("scaled")
    if kind == "dynamic":
        out.add("grown (seq_len > max)" if seq_len is not None and seq_len > max_pos else "plain (seq_len <= max)")
    if kind == "yarn":
        factor = rp["factor"] or max_pos / rp["original_max_position_embeddings"]
        inside = (ratio < 1 - 1e-9) & (ratio > 1 / factor + 1e-9)
        out |= {"ramp interior"} if bool(inside.any()) else set()
        out |= {"truncate=False"} if rp.get("truncate") is False else set()
        out |= {"mscale"} if rp.get("mscale") else set()
        out |= {"attention_factor"} if rp.get("attention_factor") else set()
        out |= {"factor None"} if rp.get("factor", 0) is None else set()
        out |= {"beta set"} if "beta_fast" in rp or "beta_slow" in rp else set()
    if kind == "llama3":
        kept, divided = ratio == 1, (ratio - 1 / rp["factor"]).abs() < 1e-12
        if rp["high_freq_factor"] == rp["low_freq_factor"]:
            out |= {"step (high == low)"} if kept.any() and divided.any() and (kept | divided).all() else set()
        elif kept.any() and divided.any() and (~kept & ~divided).any():
            out.add("all three bands")
    if kind == "longrope":
        out.add("long" if seq_len is not None and seq_len > rp["original_max_position_embeddings"] else "short")
        out |= {"attention_factor"} if rp.get("attention_factor") else set()
        out |= {"factor None"} if "factor" not in rp else set()
    return out


@reference
@pytest.mark.parametrize("kind", TYPES)
def test_matches_transformers_on_random_configs(kind, capsys):
    worst = agreement(kind)
    with capsys.disabled():  # the measured agreement, shown with pytest -s (the numbers the notes quote)
        print(
            f"\n{kind:9s} {worst['n']} configs: float64 max rel {worst['rel64']:.1e}, float32 max "
            f"{worst['ulps32']:.1f} ulp of theta_i (max abs {worst['abs32']:.1e}), attention factor max diff "
            f"{worst['factor']:.1e}; branches {worst['seen']}"
        )
    assert worst["n"] == N_CONFIGS
    assert all(worst["seen"].get(b, 0) >= 5 for b in BRANCHES[kind]), worst["seen"]  # every branch, often
    assert worst["rel64"] < 1e-12, worst  # the same formula
    # transformers' float32 rounding only; llama3's smooth factor (r - f_low) / (f_high - f_low) in float32
    # amplifies the rounding of r by about f_high / (f_high - f_low), up to 20 here
    assert worst["ulps32"] <= (3 * ULPS if kind == "llama3" else ULPS), worst
    assert worst["factor"] == 0.0, worst  # the attention factor: the same Python float expression


@reference
def test_plain_ladder_matches_transformers_default():
    from transformers import LlamaConfig

    rng = random.Random(5)
    for _ in range(40):
        dim, base = 2 * rng.randint(1, 64), 10.0 ** rng.uniform(1, 7)
        config = LlamaConfig(hidden_size=2 * dim, num_attention_heads=2, head_dim=dim, rope_theta=base)
        from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

        ref = LlamaRotaryEmbedding(config).inv_freq
        got = posviz.rope_frequencies(dim, base, device="cpu", dtype=torch.float64)
        assert ((got - ref.double()).abs() / (EPS32 * got)).max() <= ULPS
        # pasting a default-type mapping changes nothing
        assert torch.equal(posviz.rope_frequencies(dim, base, scaling={"rope_type": "default"}), got.float())


# --- What transformers' dynamic_rope_update does at run time ------------------------------------


@reference
def test_dynamic_ntk_follows_the_rotary_module_as_the_sequence_grows_and_resets():
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    dim, base, max_pos, factor = 16, 10000.0, 64, 4.0
    rp = {"rope_type": "dynamic", "factor": factor, "rope_theta": base}
    module = LlamaRotaryEmbedding(hf_config(dim, rp, max_pos))
    scaling = dict(rp, max_position_embeddings=max_pos)
    x = torch.zeros(1)
    longest = 0
    for length in (40, 100, 300, 150, 30, 90):  # grows, stays (150 < 300), resets (30 < 64), grows again
        module(x, torch.arange(length)[None])
        longest = length if length < max_pos else max(longest, length)
        expected = posviz.rope_frequencies(dim, base, scaling=scaling, seq_len=longest or None)
        torch.testing.assert_close(module.inv_freq, expected, rtol=ULPS * EPS32, atol=0)
    # decoding: one position at a time, seq_len = position + 1 grows every step
    module(x, torch.tensor([[500]]))
    expected = posviz.rope_frequencies(dim, base, scaling=scaling, seq_len=501)
    torch.testing.assert_close(module.inv_freq, expected, rtol=ULPS * EPS32, atol=0)
    assert not torch.allclose(expected, posviz.rope_frequencies(dim, base, scaling=scaling, seq_len=300))


@reference
def test_longrope_switches_like_phi3():
    from transformers import Phi3Config
    from transformers.models.phi3.modeling_phi3 import Phi3RotaryEmbedding

    rng = random.Random(3)
    dim, original, max_pos = 16, 32, 128
    rp = {
        "rope_type": "longrope", "rope_theta": 10000.0,
        "short_factor": [rng.uniform(1, 2) for _ in range(dim // 2)],
        "long_factor": [rng.uniform(2, 20) for _ in range(dim // 2)],
    }
    config = Phi3Config(
        hidden_size=2 * dim, num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=max_pos,
        original_max_position_embeddings=original, rope_parameters=dict(rp),
    )
    module = Phi3RotaryEmbedding(config)
    scaling = dict(rp, original_max_position_embeddings=original, max_position_embeddings=max_pos)
    for length in (original, original + 1, 5):
        cos, _ = module(torch.zeros(1), torch.arange(length)[None])
        theta = posviz.rope_frequencies(dim, scaling=scaling, seq_len=length)
        torch.testing.assert_close(module.inv_freq, theta, rtol=ULPS * EPS32, atol=0)
        factor = posviz.rope_attention_factor(scaling, seq_len=length)
        assert factor == module.attention_scaling == math.sqrt(1 + math.log(max_pos / original) / math.log(original))
        angle = torch.arange(length)[:, None] * theta.double()
        torch.testing.assert_close(cos[0], (torch.cat((angle, angle), -1).cos() * factor).float(), atol=1e-5, rtol=0)
    long = posviz.rope_frequencies(dim, scaling=scaling, seq_len=original + 1)
    short = posviz.rope_frequencies(dim, scaling=scaling, seq_len=original)
    torch.testing.assert_close(long * torch.tensor(rp["long_factor"]), short * torch.tensor(rp["short_factor"]))


@reference
def test_deepseek_v3_yarn_attention_factor_and_softmax_scale():
    from transformers import DeepseekV3Config
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3RotaryEmbedding, yarn_apply_mscale

    for mscale, mscale_all_dim in [(1.0, 1.0), (0.707, 1.0), (1.0, 0.0)]:
        rp = {
            "rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 64, "beta_fast": 32,
            "beta_slow": 1, "mscale": mscale, "mscale_all_dim": mscale_all_dim, "rope_theta": 10000.0,
        }
        config = DeepseekV3Config(
            hidden_size=64, num_attention_heads=2, num_key_value_heads=2, qk_rope_head_dim=16, qk_nope_head_dim=16,
            v_head_dim=16, kv_lora_rank=16, q_lora_rank=16, max_position_embeddings=2560, rope_parameters=dict(rp),
        )
        module = DeepseekV3RotaryEmbedding(config)
        scaling = dict(rp, max_position_embeddings=2560)
        assert posviz.rope_attention_factor(scaling) == module.attention_scaling
        theta = posviz.rope_frequencies(16, scaling=scaling)
        torch.testing.assert_close(module.inv_freq, theta, rtol=ULPS * EPS32, atol=0)
        softmax = (16 + 16) ** -0.5 * (posviz.yarn_mscale(40.0, mscale_all_dim) ** 2 if mscale_all_dim else 1.0)
        assert yarn_apply_mscale(config.rope_parameters, (16 + 16) ** -0.5) == pytest.approx(softmax, rel=1e-15)
    assert posviz.rope_attention_factor({"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 64}) \
        == pytest.approx(0.1 * math.log(40.0) + 1)


# --- Partial rotary against GPT-NeoX, Phi and GPT-J -----------------------------------------------


@reference
def test_partial_rotary_matches_gpt_neox():
    from transformers import GPTNeoXConfig
    from transformers.models.gpt_neox.modeling_gpt_neox import GPTNeoXRotaryEmbedding, apply_rotary_pos_emb

    g = torch.Generator().manual_seed(0)
    for head_dim, share, base in [(32, 0.25, 10000.0), (64, 0.5, 500.0), (24, 1.0, 10000.0), (40, 0.4, 1e6)]:
        config = GPTNeoXConfig(
            hidden_size=2 * head_dim, num_attention_heads=2, rope_parameters={"rope_type": "default",
            "rope_theta": base, "partial_rotary_factor": share},
        )
        rotary_dim = int(head_dim * share)
        q, k = torch.randn(2, 2, 19, head_dim, generator=g), torch.randn(2, 2, 19, head_dim, generator=g)
        pos = torch.arange(3, 22)[None].expand(2, -1)
        cos, sin = GPTNeoXRotaryEmbedding(config)(q, pos)
        q_ref, k_ref = apply_rotary_pos_emb(q, k, cos, sin)
        for x, ref in ((q, q_ref), (k, k_ref)):
            got = posviz.apply_rope(x, pos[:, None, :], base, layout="half", rotary_dim=rotary_dim)
            torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)
            assert torch.equal(got[..., rotary_dim:], x[..., rotary_dim:])  # the tail passes through, bit for bit


@reference
def test_partial_rotary_matches_phi():
    from transformers import PhiConfig
    from transformers.models.phi.modeling_phi import PhiRotaryEmbedding, apply_rotary_pos_emb

    g = torch.Generator().manual_seed(1)
    head_dim, share = 32, 0.5
    config = PhiConfig(hidden_size=2 * head_dim, num_attention_heads=2, partial_rotary_factor=share)
    rotary_dim = int(head_dim * config.rope_parameters["partial_rotary_factor"])
    q, k = torch.randn(1, 2, 33, head_dim, generator=g), torch.randn(1, 2, 33, head_dim, generator=g)
    pos = torch.arange(33)[None]
    cos, sin = PhiRotaryEmbedding(config)(q, pos)
    q_rot, k_rot = apply_rotary_pos_emb(q[..., :rotary_dim], k[..., :rotary_dim], cos, sin)  # PhiAttention.forward
    q_ref, k_ref = torch.cat((q_rot, q[..., rotary_dim:]), -1), torch.cat((k_rot, k[..., rotary_dim:]), -1)
    base = config.rope_parameters["rope_theta"]
    torch.testing.assert_close(posviz.apply_rope(q, None, base, layout="half", rotary_dim=rotary_dim), q_ref)
    torch.testing.assert_close(posviz.apply_rope(k, None, base, layout="half", rotary_dim=rotary_dim), k_ref)


@reference
def test_partial_rotary_matches_gpt_j():
    from transformers.models.gptj.modeling_gptj import apply_rotary_pos_emb, create_sinusoidal_positions

    g = torch.Generator().manual_seed(2)
    for head_dim, rotary_dim in [(32, 8), (16, 16), (48, 20)]:
        table = create_sinusoidal_positions(64, rotary_dim)
        x = torch.randn(2, 23, 3, head_dim, generator=g)  # GPT-J: [batch, seq, heads, head_dim] here
        pos = torch.arange(5, 28)[None].expand(2, -1)
        sin, cos = torch.split(table[pos], rotary_dim // 2, dim=-1)
        ref = torch.cat((apply_rotary_pos_emb(x[..., :rotary_dim], sin, cos), x[..., rotary_dim:]), -1)
        got = posviz.apply_rope(x.transpose(1, 2), pos[:, None, :], rotary_dim=rotary_dim).transpose(1, 2)
        torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)


@reference
def test_scaled_llama_rotation_with_attention_factor():
    """cos/sin of a YaRN Llama (attention_scaling included) through apply_rope(frequencies=, attention_factor=)."""
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

    dim, max_pos = 32, 4096
    rp = {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 512, "rope_theta": 10000.0}
    module = LlamaRotaryEmbedding(hf_config(dim, rp, max_pos))
    q = torch.randn(1, 2, 40, dim, generator=torch.Generator().manual_seed(4))
    pos = torch.arange(40)[None] * 13  # up to 507: transformers' float32 angles are good to ~3e-5 there
    cos, sin = module(q, pos)
    ref, _ = apply_rotary_pos_emb(q, q, cos, sin)
    scaling = dict(rp, max_position_embeddings=max_pos)
    theta = posviz.rope_frequencies(dim, scaling=scaling)
    got = posviz.apply_rope(
        q, pos[:, None, :], layout="half", frequencies=theta, attention_factor=posviz.rope_attention_factor(scaling)
    )
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-4)
