"""RoPE scaling rules: their defining properties, bad mappings and arguments, devices and dtypes.

The comparisons with ``transformers``' own code are in ``test_rope_scaling.py``; the few
reference checks here reuse its helpers.
"""

import functools
import math

import pytest
import torch
from test_rope_scaling import hf, hf_inv_freq, reference  # noqa: F401  (hf: the fixture behind reference)

import posviz

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
