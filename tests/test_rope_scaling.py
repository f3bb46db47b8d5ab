"""RoPE scaling rules against transformers' own code, on many random small configs, and their defining properties.

Two comparisons per config: posviz's float64 ladder against ``transformers``' own functions run
in float64 (their module's ``torch`` seen through a shim that maps ``torch.float``/``float32`` to
float64: the same code, without float32 noise, must agree to 1e-12), and posviz's float32 ladder
against ``transformers``' float32 ``inv_freq`` (within ``ULPS`` float32 ulp of the unscaled
:math:`\\theta_i`: transformers rounds the exponent ``2i/d`` to float32 before ``base ** ...``).
"""

import functools
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


# --- Defining properties, for any rule -----------------------------------------------------------

RULES = [
    None,
    {"rope_type": "linear", "factor": 4.0},
    {"rope_type": "dynamic", "factor": 2.0, "max_position_embeddings": 64},
    {"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 64},
    {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
     "original_max_position_embeddings": 64},
    {"rope_type": "longrope", "short_factor": [1.0, 1.5, 2.0, 3.0], "long_factor": [1.0, 4.0, 9.0, 20.0],
     "original_max_position_embeddings": 64},
]


@pytest.mark.parametrize("scaling", RULES, ids=lambda s: "none" if s is None else s["rope_type"])
@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_scores_depend_only_on_the_offset_under_every_rule(scaling, layout):
    g = torch.Generator().manual_seed(7)
    theta = posviz.rope_frequencies(8, scaling=scaling, seq_len=300, dtype=torch.float64)
    q, k = torch.randn(10, 12, generator=g, dtype=torch.float64), torch.randn(10, 12, generator=g, dtype=torch.float64)
    pos = torch.arange(10) * 7

    def scores(shift):
        rq = posviz.apply_rope(q, pos + shift, layout=layout, rotary_dim=8, frequencies=theta, attention_factor=1.3)
        rk = posviz.apply_rope(k, pos + shift, layout=layout, rotary_dim=8, frequencies=theta, attention_factor=1.3)
        return rq @ rk.T

    torch.testing.assert_close(scores(0), scores(1234), rtol=0, atol=1e-9)


@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_linear_scaling_is_position_interpolation(layout):
    """PI (Chen et al., 2023): theta_i / s at position m is theta_i at position m / s."""
    factor, x = 4.0, torch.randn(2, 50, 16, dtype=torch.float64)
    theta = posviz.rope_frequencies(16, scaling={"rope_type": "linear", "factor": factor}, dtype=torch.float64)
    plain = posviz.rope_frequencies(16, dtype=torch.float64)
    torch.testing.assert_close(theta, plain / factor, rtol=1e-15, atol=0)
    scaled = posviz.apply_rope(x, layout=layout, frequencies=theta)
    interpolated = posviz.apply_rope(x, torch.arange(50, dtype=torch.float64) / factor, layout=layout)
    torch.testing.assert_close(scaled, interpolated, rtol=0, atol=1e-12)


def test_ntk_aware_base_and_dynamic_ntk():
    d, base, s = 16, 10000.0, 8.0
    new = posviz.ntk_aware_base(base, s, d)
    assert new == pytest.approx(base * s ** (d / (d - 2)), rel=1e-15)
    theta = posviz.rope_frequencies(d, new, dtype=torch.float64)
    plain = posviz.rope_frequencies(d, base, dtype=torch.float64)
    assert theta[0] == plain[0] == 1.0  # the fastest pair is left alone
    assert theta[-1].item() == pytest.approx(plain[-1].item() / s, rel=1e-12)  # the slowest is interpolated by s
    # dynamic with factor 1 is the lab's rope-ntk: base * (L / L_train)^(d/(d-2)) for L > L_train
    lab = {"rope_type": "dynamic", "factor": 1.0, "max_position_embeddings": 128}
    got = posviz.rope_frequencies(d, base, scaling=lab, seq_len=1024, dtype=torch.float64)
    want = posviz.rope_frequencies(d, posviz.ntk_aware_base(base, 8.0, d), dtype=torch.float64)
    torch.testing.assert_close(got, want)
    assert torch.equal(posviz.rope_frequencies(d, base, scaling=lab, seq_len=128), posviz.rope_frequencies(d, base))
    # dynamic: the effective factor s * L / L_max - (s - 1)
    dyn = {"rope_type": "dynamic", "factor": 4.0, "max_position_embeddings": 100}
    got = posviz.rope_frequencies(d, base, scaling=dyn, seq_len=250, dtype=torch.float64)
    want = posviz.rope_frequencies(d, posviz.ntk_aware_base(base, 4.0 * 2.5 - 3.0, d), dtype=torch.float64)
    torch.testing.assert_close(got, want, rtol=1e-14, atol=0)
    # d = 2: the one pair has theta_0 = 1 whatever the base
    assert posviz.rope_frequencies(2, base, scaling=dyn, seq_len=10**6).tolist() == [1.0]


def test_yarn_ramp_keeps_fast_pairs_and_interpolates_slow_ones():
    d, base, length, s = 64, 10000.0, 4096, 16.0
    gamma = posviz.yarn_ramp(d, base, length, dtype=torch.float64)
    low, high = posviz.yarn_correction_range(d, base, length)
    assert (low, high) == (math.floor(d * math.log(length / (32 * 2 * math.pi)) / (2 * math.log(base))),
                           math.ceil(d * math.log(length / (2 * math.pi)) / (2 * math.log(base))))
    turns = length * posviz.rope_frequencies(d, base, dtype=torch.float64) / (2 * math.pi)
    assert torch.all(gamma[turns > 32] == 1) and torch.all(gamma[turns < 1] == 0)
    assert torch.all(gamma[1:] <= gamma[:-1])  # monotone: faster pairs are kept more
    theta = posviz.rope_frequencies(d, base, scaling={"rope_type": "yarn", "factor": s,
                                                     "original_max_position_embeddings": length}, dtype=torch.float64)
    plain = posviz.rope_frequencies(d, base, dtype=torch.float64)
    torch.testing.assert_close(theta, (1 - gamma) * plain / s + gamma * plain, rtol=1e-15, atol=0)
    assert posviz.yarn_mscale(s) == pytest.approx(0.1 * math.log(s) + 1) and posviz.yarn_mscale(0.5) == 1.0
    untruncated = posviz.yarn_correction_range(d, base, length, truncate=False)
    assert untruncated[0] > low and untruncated[1] < high


@reference
def test_llama3_bands_and_continuity_at_their_edges():
    d, base, length, low, high, s = 128, 500000.0, 8192, 1.0, 4.0, 8.0
    theta = posviz.rope_frequencies(d, base, dtype=torch.float64)
    wavelength = 2 * math.pi / theta
    mu = posviz.llama3_ramp(d, base, length, low, high, dtype=torch.float64)
    assert torch.all(mu[wavelength < length / high] == 1) and torch.all(mu[wavelength > length / low] == 0)
    mid = (wavelength >= length / high) & (wavelength <= length / low)
    assert mid.any()
    torch.testing.assert_close(mu[mid], (length / wavelength[mid] - low) / (high - low), rtol=1e-14, atol=0)
    # a pair placed exactly on each band edge: transformers' where-branches and the clamp agree
    turns_all = length * theta / (2 * math.pi)
    i = int(torch.nonzero((turns_all > 3) & (turns_all < 10))[0])
    turns = turns_all[i].item()
    for rp in ({"low_freq_factor": turns, "high_freq_factor": turns + 2.0},
               {"low_freq_factor": turns - 2.0, "high_freq_factor": turns}):
        rp.update(rope_type="llama3", factor=s, original_max_position_embeddings=length, rope_theta=base)
        ref, _ = hf_inv_freq("llama3", d, rp, 4 * length, None, float64=True)
        got = posviz.rope_frequencies(d, base, scaling=rp, dtype=torch.float64)
        torch.testing.assert_close(got, ref, rtol=1e-12, atol=0)


def test_attention_factor_is_one_for_rules_without_one():
    for scaling in [None, RULES[1], RULES[2], RULES[4], {"type": "default"}]:
        assert posviz.rope_attention_factor(scaling) == 1.0
        assert posviz.rope_attention_factor(scaling, seq_len=10**6) == 1.0
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64, "attention_factor": 0.9}
    assert posviz.rope_attention_factor(yarn) == 0.9


# --- Bad mappings --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scaling", "err", "msg"),
    [
        ("linear", TypeError, "scaling must be None or a mapping"),
        ({"rope_type": "ntk-by-parts"}, ValueError, r"rope_type'\] must be one of"),
        ({"rope_type": "linear", "factor": 2, "low_freq_factor": 1}, ValueError, "does not read"),
        ({"rope_type": "linear"}, ValueError, r"needs scaling\['factor'\]"),
        ({"rope_type": "linear", "factor": 0}, ValueError, r"scaling\['factor'\] must be a finite number > 0"),
        ({"rope_type": "linear", "factor": "2"}, TypeError, r"scaling\['factor'\] must be a real number"),
        ({"rope_type": "linear", "type": "dynamic", "factor": 2}, ValueError, "keep one"),
        ({"rope_type": "dynamic", "factor": 2}, ValueError, "max_position_embeddings"),
        ({"rope_type": "yarn", "factor": 2}, ValueError, "original_max_position_embeddings"),
        ({"rope_type": "yarn", "factor": 2, "original_max_position_embeddings": 8, "beta_fast": 1, "beta_slow": 2},
         ValueError, "beta_fast'] must be > "),
        ({"rope_type": "yarn", "factor": 2, "original_max_position_embeddings": 8, "truncate": 1}, TypeError,
         "truncate"),
        ({"rope_type": "llama3", "factor": 8, "original_max_position_embeddings": 8, "low_freq_factor": 4,
          "high_freq_factor": 2}, ValueError, "high_freq_factor'] must be >="),
        ({"rope_type": "llama3", "factor": 8, "original_max_position_embeddings": 8, "low_freq_factor": 1},
         ValueError, "high_freq_factor"),
        ({"rope_type": "longrope", "short_factor": [1.0] * 4, "long_factor": [1.0] * 3,
          "original_max_position_embeddings": 8}, ValueError, r"long_factor'\] must have one factor per rotated pair"),
        ({"rope_type": "longrope", "short_factor": [1.0, -1.0, 1.0, 1.0], "long_factor": [1.0] * 4,
          "original_max_position_embeddings": 8}, ValueError, r"short_factor'\]\[1\] must be a finite number > 0"),
        ({"rope_type": "longrope", "short_factor": "1,1", "long_factor": [1.0] * 4,
          "original_max_position_embeddings": 8}, TypeError, "list of numbers"),
        ({"rope_type": "linear", "factor": 2, "rope_theta": 500000.0}, ValueError,
         r"pass base=scaling\['rope_theta'\]"),
        ({"rope_type": "linear", "factor": 2, "max_position_embeddings": 0}, ValueError, "max_position_embeddings"),
    ],
)
def test_bad_scaling(scaling, err, msg):
    with pytest.raises(err, match=msg):
        posviz.rope_frequencies(8, scaling=scaling, seq_len=100)


def test_bad_arguments():
    with pytest.raises(ValueError, match="seq_len must be >= 1"):
        posviz.rope_frequencies(8, scaling=RULES[2], seq_len=0)
    with pytest.raises(TypeError, match="seq_len must be an integer"):
        posviz.rope_attention_factor(RULES[1], seq_len=1.5)
    with pytest.raises(ValueError, match="base must be > 1 with a scaling rule"):
        posviz.rope_frequencies(8, 0.5, scaling=RULES[1])
    with pytest.raises(ValueError, match="dim must be an even integer >= 4"):
        posviz.ntk_aware_base(10000.0, 2.0, 5)
    with pytest.raises(ValueError, match="dim must be >= 4"):
        posviz.ntk_aware_base(10000.0, 2.0, 2)
    with pytest.raises(ValueError, match="base must be > 1 for YaRN"):
        posviz.yarn_ramp(8, 1.0, 64)
    with pytest.raises(ValueError, match="LongRoPE's attention factor reads"):
        posviz.rope_attention_factor({"rope_type": "longrope", "short_factor": [1.0], "long_factor": [1.0],
                                      "original_max_position_embeddings": 8})
    # the legacy key and pasted configs with their own harmless fields
    legacy = {"type": "linear", "factor": 2.0, "rope_theta": 10000.0, "partial_rotary_factor": 0.5}
    torch.testing.assert_close(posviz.rope_frequencies(8, scaling=legacy), posviz.rope_frequencies(8) / 2)


@pytest.fixture
def restore_defaults():
    device, dtype = torch.get_default_device(), torch.get_default_dtype()
    yield
    torch.set_default_device(device)
    torch.set_default_dtype(dtype)


BUILDERS = {
    "yarn_ramp": lambda **kw: posviz.yarn_ramp(16, 10000.0, 256, **kw),
    "llama3_ramp": lambda **kw: posviz.llama3_ramp(16, 10000.0, 256, 1.0, 4.0, **kw),
    **{
        f"rope_frequencies[{s['rope_type']}]": functools.partial(posviz.rope_frequencies, 8, scaling=s)
        for s in RULES[1:]
    },
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_builders_follow_torchs_default_device_and_dtype(name, restore_defaults):
    assert BUILDERS[name]().device.type == "cpu" and BUILDERS[name]().dtype == torch.float32
    torch.set_default_dtype(torch.float64)
    assert BUILDERS[name]().dtype == torch.float64
    torch.set_default_device("meta")  # a device other than the CPU, present on every machine
    assert BUILDERS[name]().device.type == "meta"
    exact = BUILDERS[name](device="cpu", dtype=torch.float64)
    assert torch.equal(BUILDERS[name](device="cpu", dtype=torch.bfloat16), exact.to(torch.bfloat16))  # rounded once


@reference
def test_pasted_configs_of_other_families():
    """A Qwen2-VL config's rope_parameters (M-RoPE: legacy type 'mrope', read as the default ladder)."""
    from transformers import Qwen2VLTextConfig

    config = Qwen2VLTextConfig(
        hidden_size=64, num_attention_heads=2, rope_scaling={"type": "mrope", "mrope_section": [4, 6, 6]},
    )
    pasted = dict(config.rope_parameters)
    assert pasted.get("type") == "mrope" and pasted["rope_type"] == "default"  # what transformers leaves there
    base = pasted["rope_theta"]
    torch.testing.assert_close(posviz.rope_frequencies(32, base, scaling=pasted), posviz.rope_frequencies(32, base))
    assert posviz.rope_attention_factor(pasted) == 1.0
