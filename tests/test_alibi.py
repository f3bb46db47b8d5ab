import pytest
import torch

import posviz


def test_power_of_two_slopes_are_the_papers():
    torch.testing.assert_close(
        posviz.alibi_slopes(8, device="cpu", dtype=torch.float64),
        torch.tensor([2.0**-k for k in range(1, 9)], dtype=torch.float64),
    )
    # geometric: start 2^(-8/n), ratio 2^(-8/n)
    s = posviz.alibi_slopes(16, device="cpu", dtype=torch.float64)
    torch.testing.assert_close(s[0], torch.tensor(2 ** (-8 / 16), dtype=torch.float64))
    torch.testing.assert_close(s[1:] / s[:-1], torch.full((15,), 2 ** (-8 / 16), dtype=torch.float64))


def test_non_power_of_two_follows_the_authors_rule_and_is_not_monotone():
    six = posviz.alibi_slopes(6, device="cpu", dtype=torch.float64)
    torch.testing.assert_close(six, torch.tensor([1 / 4, 1 / 16, 1 / 64, 1 / 256, 1 / 2, 1 / 8], dtype=torch.float64))
    twelve = posviz.alibi_slopes(12, device="cpu", dtype=torch.float64)
    assert not torch.all(twelve[1:] < twelve[:-1])


@pytest.mark.parametrize("heads", [1, 2, 3, 5, 6, 8, 12, 16, 20, 32, 40])
def test_slopes_match_transformers_bloom(heads):
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    mask = torch.ones(1, 2)
    ref = build_alibi_tensor(mask, heads, torch.float32)[:, 0, 1]  # slope * position 1
    torch.testing.assert_close(posviz.alibi_slopes(heads, device="cpu"), ref)


def test_bias_formula(device):
    h, q, k = 4, 5, 7
    slopes = posviz.alibi_slopes(h, device=device)
    bias = posviz.alibi_bias(h, q, k, device=device)
    assert bias.shape == (h, q, k) and bias.device.type == device.type
    for hh in range(h):
        for i in range(q):
            for j in range(k):
                assert bias[hh, i, j].item() == pytest.approx(-slopes[hh].item() * abs(i - j))


def test_bias_with_custom_slopes_and_default_key_len():
    bias = posviz.alibi_bias(2, 3, slopes=torch.tensor([1.0, 0.5]), device="cpu")
    assert bias.shape == (2, 3, 3)
    assert bias[1, 2, 0].item() == -1.0


def test_bias_gives_same_attention_as_bloom_style_m_times_j():
    """Softmax ignores a per-row constant: -m(i-j) and +m*j give the same causal attention."""
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    h, n, d = 8, 12, 16
    q, k = torch.randn(h, n, d), torch.randn(h, n, d)
    ours = posviz.attention(q, k, bias=posviz.alibi_bias(h, n, device="cpu"), causal=True)[1]
    bloom_bias = build_alibi_tensor(torch.ones(1, n), h, torch.float32)  # [h, 1, n]: m_h * j
    theirs = posviz.attention(q, k, bias=bloom_bias, causal=True)[1]
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("args", "kwargs", "err", "msg"),
    [
        ((0, 4), {}, ValueError, "num_heads must be >= 1"),
        ((2, -1), {}, ValueError, "query_len must be >= 0"),
        ((2, 3, -4), {}, ValueError, "key_len must be >= 0"),
        ((2, 3), {"slopes": torch.ones(3)}, ValueError, r"slopes must have shape \[num_heads\]"),
        ((2, 3), {"slopes": [1.0, 2.0]}, TypeError, "slopes must be a torch.Tensor"),
        ((64, 10**6), {}, ValueError, "ALiBi bias .* needs"),
    ],
)
def test_bias_bad_input(args, kwargs, err, msg):
    with pytest.raises(err, match=msg):
        posviz.alibi_bias(*args, **kwargs, device="cpu")


def test_slopes_bad_input():
    with pytest.raises(ValueError, match="num_heads must be >= 1"):
        posviz.alibi_slopes(0)
    with pytest.raises(TypeError, match="num_heads must be an integer"):
        posviz.alibi_slopes(2.0)
