import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_relative_transformer_xl import _xl_inputs

import posviz

TRANSFORMERS = "transformers is a test extra (the reference implementation): pip install -e '.[test]'"


def test_relative_positions_formula(device):
    r = posviz.relative_positions(4, 6, device=device)
    assert r.dtype == torch.long and r.shape == (4, 6) and r.device.type == device.type
    for m in range(4):
        for n in range(6):
            assert r[m, n].item() == m - n  # query minus key


@settings(max_examples=30, deadline=None)
@given(q=st.integers(0, 40), k=st.integers(0, 40), lo=st.integers(-10, 0), hi=st.integers(0, 10))
def test_relative_positions_clip(q, k, lo, hi):
    r = posviz.relative_positions(q, k, (lo, hi), device="cpu")
    full = posviz.relative_positions(q, k, device="cpu")
    assert torch.equal(r, full.clamp(lo, hi))
    sym = posviz.relative_positions(q, k, hi, device="cpu")
    assert torch.equal(sym, full.clamp(-hi, hi))


@pytest.mark.parametrize(
    ("args", "err", "msg"),
    [
        ((-1,), ValueError, "query_len must be >= 0"),
        ((3, -2), ValueError, "key_len must be >= 0"),
        ((3, 3, -1), ValueError, "max_distance must be >= 0"),
        ((3, 3, (1, 4)), ValueError, "Rmin <= 0 <= Rmax"),
        ((3, 3, (0, 1, 2)), ValueError, r"\(Rmin, Rmax\)"),
        ((3, 3, 1.5), TypeError, "max_distance must be an integer"),
        ((10**6, 10**6), ValueError, "relative-position matrix .* needs"),
    ],
)
def test_relative_positions_bad_input(args, err, msg):
    with pytest.raises(err, match=msg):
        posviz.relative_positions(*args, device="cpu")


@settings(max_examples=60, deadline=None)
@given(
    bidirectional=st.booleans(),
    num_buckets=st.integers(4, 64),
    max_distance=st.integers(1, 1000),
)
def test_t5_bucket_identical_to_transformers(bidirectional, num_buckets, max_distance):
    pytest.importorskip("transformers", reason=TRANSFORMERS)
    from transformers.models.t5.modeling_t5 import T5Attention

    max_exact = (num_buckets // 2 if bidirectional else num_buckets) // 2
    rel = torch.arange(-3000, 3001)[None, :]
    kwargs = {"bidirectional": bidirectional, "num_buckets": num_buckets, "max_distance": max_distance}
    if max_distance <= max_exact:
        with pytest.raises(ValueError, match="max_distance must be > the number of exact buckets"):
            posviz.t5_relative_bucket(rel, **kwargs)
        return
    ours = posviz.t5_relative_bucket(rel, **kwargs)
    assert torch.equal(ours, T5Attention._relative_position_bucket(rel, **kwargs))
    per_direction = num_buckets // 2 if bidirectional else num_buckets
    assert ours.min() >= 0 and ours.max() < num_buckets
    if not bidirectional:  # every future key (key - query > 0) lands in bucket 0
        assert torch.all(ours[rel > 0] == 0)
    else:  # keys after the query use the upper half
        assert torch.all(ours[rel > 0] >= per_direction) and torch.all(ours[rel <= 0] < per_direction)


def test_t5_bucket_by_hand():
    """Default T5 (bidirectional, 32 buckets, 128): 8 exact buckets per side, then log-spaced."""
    rel = torch.tensor([0, -1, -7, -8, -12, -127, -128, -5000, 1, 7, 8, 5000])
    assert posviz.t5_relative_bucket(rel).tolist() == [0, 1, 7, 8, 9, 15, 15, 15, 17, 23, 24, 31]


@pytest.mark.parametrize(
    ("kwargs", "err", "msg"),
    [
        ({"num_buckets": 2}, ValueError, "num_buckets must be >= 4"),
        ({"num_buckets": 32, "max_distance": 8}, ValueError, "max_distance must be > the number of exact buckets"),
        ({"bidirectional": 1}, TypeError, "bidirectional must be a bool"),
    ],
)
def test_t5_bucket_bad_input(kwargs, err, msg):
    with pytest.raises(err, match=msg):
        posviz.t5_relative_bucket(torch.arange(-3, 3), **kwargs)
    with pytest.raises(TypeError, match="integer tensor"):
        posviz.t5_relative_bucket(torch.arange(3.0))


@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_bias_matches_transformers_compute_bias(bidirectional):
    pytest.importorskip("transformers", reason=TRANSFORMERS)
    from transformers import T5Config
    from transformers.models.t5.modeling_t5 import T5Attention

    config = T5Config(d_model=32, d_kv=8, num_heads=4, relative_attention_num_buckets=32,
                      relative_attention_max_distance=128, is_decoder=not bidirectional)
    ref = T5Attention(config, has_relative_attention_bias=True)
    ours = posviz.T5RelativeBias(4, num_buckets=32, max_distance=128, bidirectional=bidirectional)
    with torch.no_grad():
        ours.embedding.weight.copy_(ref.relative_attention_bias.weight)
    expected = ref.compute_bias(40, 300)[0]  # [h, q, k]
    torch.testing.assert_close(ours(40, 300), expected)


def test_t5_bias_module_validates_settings():
    with pytest.raises(ValueError, match="max_distance must be > the number of exact buckets"):
        posviz.T5RelativeBias(2, num_buckets=32, max_distance=4)
    with pytest.raises(ValueError, match="num_heads must be >= 1"):
        posviz.T5RelativeBias(0)


def shaw_by_hand(q, k, v, a_k, a_v, kmax, causal=False, mask=None):
    """Shaw et al.'s equations entry by entry; ``mask[m, n]`` False hides key n from query m, and a
    query with no visible key gets zero weights (the rule of posviz.attention and SDPA)."""
    lq, lk, d = q.shape[0], k.shape[0], q.shape[1]
    scores = torch.empty(lq, lk, dtype=q.dtype)
    for m in range(lq):
        for n in range(lk):
            r = max(-kmax, min(kmax, m - n))
            scores[m, n] = q[m] @ (k[n] + a_k[r + kmax]) / math.sqrt(d)
            if (causal and n > m) or (mask is not None and not mask[m, n]):
                scores[m, n] = -math.inf
    w = torch.zeros(lq, lk, dtype=q.dtype)
    for m in range(lq):
        if torch.isfinite(scores[m]).any():
            w[m] = torch.softmax(scores[m], -1)
    out = torch.zeros(lq, d, dtype=q.dtype)
    for m in range(lq):
        for n in range(lk):
            r = max(-kmax, min(kmax, m - n))
            out[m] += w[m, n] * (v[n] + a_v[r + kmax])
    return out, w


@pytest.mark.parametrize("causal", [False, True])
def test_shaw_matches_the_papers_equations(causal):
    d, kmax = 8, 3
    shaw = posviz.ShawRelativePosition(d, kmax).double()
    q, k, v = (torch.randn(9, d, dtype=torch.float64) for _ in range(3))
    out, w = shaw(q, k, v, causal=causal)
    ref_out, ref_w = shaw_by_hand(q, k, v, shaw.key_table.detach(), shaw.value_table.detach(), kmax, causal)
    torch.testing.assert_close(w, ref_w.detach())
    torch.testing.assert_close(out, ref_out.detach())


def test_shaw_with_zero_tables_is_plain_attention():
    shaw = posviz.ShawRelativePosition(16, 4)
    with torch.no_grad():
        shaw.key_table.zero_()
        shaw.value_table.zero_()
    q, k, v = (torch.randn(2, 3, 10, 16) for _ in range(3))
    torch.testing.assert_close(shaw(q, k, v), posviz.attention(q, k, v))


def _shaw_mask(lq: int, lk: int) -> torch.Tensor:
    """A mask (True = may attend) that keeps some keys per row, hides row 2 entirely and, for
    query 0, keeps only keys after it (so that causal hides all of row 0 too)."""
    mask = torch.rand(lq, lk, generator=torch.Generator().manual_seed(3)) > 0.4
    mask[1, :] = True
    mask[2, :] = False
    mask[0, :] = False
    mask[0, 3] = True
    return mask


@pytest.mark.parametrize("causal", [False, True])
def test_shaw_with_a_boolean_mask_is_the_papers_equations(causal):
    """A boolean mask in PyTorch's sense (True = may attend), one row fully hidden: the paper's
    equations with the hidden keys left out, zeros for the hidden row (not NaN), and the same
    weights as posviz.attention with the same mask when the tables are zero."""
    d, kmax, lq, lk = 8, 2, 7, 9
    shaw = posviz.ShawRelativePosition(d, kmax).double()
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(n, d, generator=g, dtype=torch.float64) for n in (lq, lk, lk))
    mask = _shaw_mask(lq, lk)
    out, w = shaw(q, k, v, bias=mask, causal=causal)
    ref_out, ref_w = shaw_by_hand(q, k, v, shaw.key_table.detach(), shaw.value_table.detach(), kmax, causal, mask)
    assert not torch.isnan(w).any() and not torch.isnan(out).any()
    torch.testing.assert_close(w, ref_w.detach())
    torch.testing.assert_close(out, ref_out.detach())
    assert torch.all(w[2] == 0) and torch.all(out[2] == 0)  # every key hidden: zero weights and output
    assert torch.all(w[~mask] == 0)  # nothing on a hidden key
    if causal:
        assert torch.all(w[0] == 0)  # the mask keeps key 3 only, which is in query 0's future
    else:
        assert w[0, 3] == 1
    with torch.no_grad():
        shaw.key_table.zero_()
        shaw.value_table.zero_()
    out0, w0 = shaw(q, k, v, bias=mask, causal=causal)
    plain_out, plain_w = posviz.attention(q, k, v, bias=mask, causal=causal)
    torch.testing.assert_close(w0, plain_w)
    torch.testing.assert_close(out0, plain_out)


def test_shaw_masked_row_has_zero_gradients_and_a_float_bias_is_added():
    d, kmax = 4, 2
    shaw = posviz.ShawRelativePosition(d, kmax).double()
    q, k, v = (torch.randn(5, d, dtype=torch.float64, requires_grad=True) for _ in range(3))
    mask = torch.ones(5, 5, dtype=torch.bool)
    mask[1] = False
    out, _ = shaw(q, k, v, bias=mask)
    out.sum().backward()
    for t in (q, k, v, shaw.key_table, shaw.value_table):
        assert torch.isfinite(t.grad).all()
    assert torch.all(q.grad[1] == 0)  # the hidden query does not move
    # a float bias of -inf on the same row: the same rule, the same result
    as_float = torch.zeros(5, 5, dtype=torch.float64).masked_fill(~mask, -math.inf)
    torch.testing.assert_close(shaw(q, k, v, bias=as_float), shaw(q, k, v, bias=mask))
    bias = torch.randn(5, 5, dtype=torch.float64)
    _, w = shaw(q, k, v, bias=bias)
    _, w_plain = shaw(q, k, v)
    torch.testing.assert_close(w, torch.softmax(torch.log(w_plain) + bias, -1))


@pytest.mark.parametrize(
    ("call", "err", "msg"),
    [
        (lambda s: s(torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4), causal="no"), TypeError,
         "causal must be True or False"),
        (lambda s: s(torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4), bias=[1.0]), TypeError,
         "bias must be a torch.Tensor"),
        (lambda s: s(torch.randn(2, 3, 4), torch.randn(2, 3, 4), torch.randn(5, 3, 4)), ValueError,
         "v's batch dimensions"),
        (lambda s: s(torch.randn(3, 4), torch.randn(3, 4), torch.randn(2, 4)), ValueError, "as many rows"),
        (lambda s: s(torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 5)), ValueError, "v.shape"),
        (lambda s: s(torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4), bias=torch.ones(2, 2)), ValueError,
         "do not broadcast"),
    ],
)
def test_shaw_bad_input(call, err, msg):
    with pytest.raises(err, match=msg):
        call(posviz.ShawRelativePosition(4, 2))


def test_shaw_is_length_free_and_checks_dims():
    shaw = posviz.ShawRelativePosition(4, 2, values=False)
    assert shaw.value_table is None
    out, w = shaw(torch.randn(50, 4), torch.randn(60, 4), torch.randn(60, 4))
    assert out.shape == (50, 4) and w.shape == (50, 60)
    assert shaw.index(3, 5).tolist() == [[2, 1, 0, 0, 0], [3, 2, 1, 0, 0], [4, 3, 2, 1, 0]]
    with pytest.raises(ValueError, match="head_dim=4"):
        shaw(torch.randn(5, 8), torch.randn(5, 8), torch.randn(5, 8))


@pytest.mark.parametrize(
    ("call", "err", "msg"),
    [
        (lambda: posviz.t5_relative_bucket(torch.tensor([True, False])), TypeError,
         "relative_position must be an integer tensor, got torch.bool"),
        (lambda: posviz.T5RelativeBias(2)("4"), TypeError, r"query_len must be an integer, got '4' \(str\)"),
        (lambda: posviz.T5RelativeBias(2)(3, 2.5), TypeError, "key_len must be an integer"),
        (lambda: posviz.T5RelativeBias(2)(-1), ValueError, "query_len must be >= 0"),
        (lambda: posviz.relative_positions(3, device="cuda:99"), ValueError, r"device 'cuda:99' is not available"),
        (lambda: posviz.transformer_xl_scores(**_xl_inputs(), base=10**400), ValueError,
         "base must be a finite number > 0.*beyond float64's range"),
    ],
)
def test_more_bad_input(call, err, msg):
    with pytest.raises(err, match=msg):
        call()
