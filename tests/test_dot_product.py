import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import posviz


@pytest.mark.parametrize("causal", [False, True])
def test_matches_scaled_dot_product_attention(causal, device):
    q, k, v = (torch.randn(2, 4, 16, 8, dtype=torch.float64, device=device) for _ in range(3))
    out, w = posviz.attention(q, k, v, causal=causal)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    torch.testing.assert_close(out, ref)
    assert w.shape == (2, 4, 16, 16) and w.device.type == device.type


def test_bias_and_scale_match_sdpa():
    h, n, d = 4, 12, 8
    q, k, v = (torch.randn(h, n, d, dtype=torch.float64) for _ in range(3))
    bias = posviz.alibi_bias(h, n, device="cpu", dtype=torch.float64)
    out, _ = posviz.attention(q, k, v, bias=bias, scale=1.0)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=1.0)
    torch.testing.assert_close(out, ref)


def test_rectangular_causal_is_top_left_aligned():
    q, k = torch.randn(3, 4), torch.randn(5, 4)
    w = posviz.attention_weights(q, k, causal=True)
    assert torch.all(w[0, 1:] == 0) and torch.all(w[2, 3:] == 0) and torch.all(w[2, :3] > 0)


@settings(max_examples=30, deadline=None)
@given(lq=st.integers(1, 20), lk=st.integers(1, 20), d=st.integers(1, 16), causal=st.booleans(), seed=st.integers(0, 9))
def test_rows_sum_to_one_and_causal_zeros(lq, lk, d, causal, seed):
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(lq, d, generator=g), torch.randn(lk, d, generator=g)
    w = posviz.attention_weights(q, k, causal=causal)
    torch.testing.assert_close(w.sum(-1), torch.ones(lq))
    if causal:
        assert torch.all(w.triu(1) == 0)


def test_without_position_attention_is_permutation_equivariant():
    n, d = 10, 16
    x = torch.randn(n, d)
    wq, wk, wv = (torch.randn(d, d) for _ in range(3))
    perm = torch.randperm(n)
    out, _ = posviz.attention(x @ wq, x @ wk, x @ wv)
    out_p, _ = posviz.attention(x[perm] @ wq, x[perm] @ wk, x[perm] @ wv)
    torch.testing.assert_close(out_p, out[perm], rtol=1e-5, atol=1e-5)
    pe = posviz.sinusoidal_encoding(n, d, device="cpu")
    xp, xpp = x + pe, x[perm] + pe
    out, _ = posviz.attention(xp @ wq, xp @ wk, xp @ wv)
    out_p, _ = posviz.attention(xpp @ wq, xpp @ wk, xpp @ wv)
    assert not torch.allclose(out_p, out[perm], atol=1e-3)


def test_causal_mask():
    assert posviz.causal_mask(2, 3).tolist() == [[False, True, True], [False, False, True]]


@pytest.mark.parametrize(
    ("call", "err", "msg"),
    [
        (lambda: posviz.attention_weights(torch.randn(3, 4), torch.randn(3, 5)), ValueError, "same last dim"),
        (lambda: posviz.attention(torch.randn(3, 4), torch.randn(3, 4), torch.randn(2, 4)), ValueError, "as many rows"),
        (lambda: posviz.attention_weights(torch.randn(2, 3, 4), torch.randn(5, 3, 4)), ValueError, "do not broadcast"),
        (lambda: posviz.attention_weights(torch.randn(3, 4), torch.randn(3, 4), bias=torch.randn(2, 2)), ValueError,
         "do not broadcast"),
        (lambda: posviz.attention_weights(torch.randn(4), torch.randn(4)), ValueError, r"shape \[..., Lq, d\]"),
        (lambda: posviz.attention_weights(torch.ones(3, 4, dtype=torch.long), torch.randn(3, 4)), TypeError,
         "floating"),
        (lambda: posviz.attention_weights("q", torch.randn(3, 4)), TypeError, "q must be a torch.Tensor"),
        (lambda: posviz.attention_weights(torch.randn(3, 4), torch.randn(3, 4), bias=[1.0]), TypeError,
         "bias must be"),
        (lambda: posviz.attention_weights(torch.randn(3, 4), torch.randn(3, 4), bias=torch.ones(3, 3).long()),
         TypeError, "boolean mask"),
        (lambda: posviz.attention_weights(torch.randn(3, 4), torch.randn(3, 4), scale="x"), TypeError,
         "scale must be a real number"),
        (lambda: posviz.attention_weights(torch.randn(3, 4), torch.randn(3, 4), scale=float("nan")), ValueError,
         "scale must be a finite number"),
        (lambda: posviz.attention_weights(torch.randn(3, 4), torch.randn(3, 4, dtype=torch.float64)), TypeError,
         "q and k must have the same dtype"),
        (lambda: posviz.attention(torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4, dtype=torch.float64)),
         TypeError, "v must have q's dtype"),
        (lambda: posviz.attention(torch.randn(3, 4), torch.randn(3, 4), "v"), TypeError, "v must be a torch.Tensor"),
        (lambda: posviz.attention_weights(torch.randn(3, 4), torch.randn(3, 4, device="meta")), ValueError,
         "same device"),
        (lambda: posviz.attention_weights(torch.randn(1, 4).expand(10**6, 4), torch.randn(1, 4).expand(10**6, 4)),
         ValueError, r"attention map of shape \[1000000, 1000000\].* needs .* TiB"),
    ],
)
def test_bad_input(call, err, msg):
    with pytest.raises(err, match=msg):
        call()


# --- attention_scores and self_attention (chapter "Why position matters") ---


@pytest.mark.parametrize("causal", [False, True])
def test_attention_scores_formula(causal):
    q, k = torch.randn(2, 5, 8, dtype=torch.float64), torch.randn(2, 7, 8, dtype=torch.float64)
    bias = torch.randn(5, 7, dtype=torch.float64)
    from posviz.dot_product import attention_scores

    s = attention_scores(q, k, bias=bias, causal=causal)
    expected = torch.einsum("bmd,bnd->bmn", q, k) / 8**0.5 + bias  # s_mn = q_m.k_n / sqrt(d) + B_mn
    if causal:
        future = torch.arange(7)[None, :] > torch.arange(5)[:, None]
        assert torch.all(s[:, future] == float("-inf"))
        expected = expected.masked_fill(future, float("-inf"))
    torch.testing.assert_close(s, expected)


def test_softmax_of_the_scores_is_the_attention_weights():
    from posviz.dot_product import attention_scores

    q, k = torch.randn(6, 4), torch.randn(9, 4)
    for scale in (None, 1.0, 0.1):
        w = posviz.attention_weights(q, k, scale=scale, causal=True)
        torch.testing.assert_close(torch.softmax(attention_scores(q, k, scale=scale, causal=True), -1), w)
        _, w2 = posviz.attention(q, k, torch.randn(9, 3), scale=scale, causal=True)
        torch.testing.assert_close(w2, w)


def test_default_scale_is_one_over_sqrt_d():
    """Vaswani et al.'s footnote 4: with Var(q.k) = d, dividing by sqrt(d) gives unit variance."""
    from posviz.dot_product import attention_scores

    q, k = torch.randn(5, 64, dtype=torch.float64), torch.randn(7, 64, dtype=torch.float64)
    torch.testing.assert_close(attention_scores(q, k), attention_scores(q, k, scale=1.0) / 8.0, rtol=0, atol=1e-15)


def test_self_attention_matches_linear_layers_and_sdpa():
    from posviz.dot_product import self_attention

    L, d, dk, dv = 7, 8, 6, 5
    x = torch.randn(2, L, d, dtype=torch.float64)
    p = posviz.sinusoidal_encoding(L, d, device="cpu", dtype=torch.float64)
    lin = {n: torch.nn.Linear(d, m, bias=False, dtype=torch.float64) for n, m in (("q", dk), ("k", dk), ("v", dv))}
    out, w = self_attention(x, lin["q"].weight, lin["k"].weight, lin["v"].weight, position=p, causal=True)
    with torch.no_grad():
        h = x + p  # x_m + p_m
        ref = F.scaled_dot_product_attention(lin["q"](h), lin["k"](h), lin["v"](h), is_causal=True)
    torch.testing.assert_close(out, ref)
    assert out.shape == (2, L, dv) and w.shape == (2, L, L)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 12), d=st.integers(1, 8).map(lambda h: 2 * h), seed=st.integers(0, 99))
def test_self_attention_is_permutation_equivariant_only_without_position(n, d, seed):
    from posviz.dot_product import self_attention

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    w = torch.randn(3, d, d, generator=g, dtype=torch.float64)
    perm = torch.roll(torch.arange(n), 1)  # a shuffle that moves every token
    out, weights = self_attention(x, *w)
    out_p, weights_p = self_attention(x[perm], *w)
    torch.testing.assert_close(out_p, out[perm])  # o'_m = o_{pi(m)}
    torch.testing.assert_close(weights_p, weights[perm][:, perm])  # a'_mn = a_{pi(m) pi(n)}
    pe = posviz.sinusoidal_encoding(n, d, device="cpu", dtype=torch.float64)
    out, _ = self_attention(x, *w, position=pe)
    out_p, _ = self_attention(x[perm], *w, position=pe)
    assert (out_p - out[perm]).abs().max() > 1e-6


def test_self_attention_rope_rotates_queries_and_keys():
    from posviz.dot_product import self_attention

    L, d = 6, 8
    x, w = torch.randn(L, d, dtype=torch.float64), torch.randn(3, d, d, dtype=torch.float64)
    out, weights = self_attention(x, *w, rope_base=100.0)
    r = torch.stack([posviz.rope_rotation_matrix(m, d, 100.0, device="cpu", dtype=torch.float64) for m in range(L)])
    q = torch.einsum("mij,mj->mi", r, x @ w[0].T)  # R_m W_q x_m
    k = torch.einsum("mij,mj->mi", r, x @ w[1].T)
    torch.testing.assert_close(weights, torch.softmax(q @ k.T / d**0.5, -1))
    torch.testing.assert_close(out, weights @ (x @ w[2].T))
    # one token repeated: s_mn - s_mm = log(a_mn / a_mm) depends on m and n only through n - m
    _, w_same = self_attention(x[:1].expand(L, d), *w, rope_base=100.0)
    rel = (w_same / w_same.diagonal()[:, None]).log()  # [m, n] -> s_mn - s_mm
    torch.testing.assert_close(rel[1:, 1:], rel[:-1, :-1])
    assert rel[0, 1:].std() > 1e-3  # and does depend on the offset
    with pytest.raises(ValueError, match="rope_base must be a finite number > 0"):
        self_attention(x, *w, rope_base=0.0)


def test_self_attention_without_position_ignores_order_of_a_set():
    from posviz.dot_product import self_attention

    x, w = torch.randn(3, 4), torch.randn(3, 4, 4)
    out, _ = self_attention(x, *w)
    out_rev, _ = self_attention(x.flip(0), *w)
    torch.testing.assert_close(out_rev.flip(0), out)


@pytest.mark.parametrize(
    ("call", "err", "msg"),
    [
        (lambda f: f(torch.randn(3, 4), torch.randn(4, 4), torch.randn(4, 5), torch.randn(4, 4)), ValueError,
         r"w_k must have shape \[d_out, 4\]"),
        (lambda f: f(torch.randn(3, 4), torch.randn(4), torch.randn(4, 4), torch.randn(4, 4)), ValueError, "w_q"),
        (lambda f: f(torch.ones(3, 4, dtype=torch.long), *torch.randn(3, 4, 4)), TypeError, "x must be a floating"),
        (lambda f: f(torch.randn(3, 4), *torch.randn(3, 4, 4), position=torch.randn(5, 4)), ValueError,
         "position must broadcast"),
        (lambda f: f(torch.randn(3, 4), *torch.randn(3, 4, 4), position=[0.0]), TypeError, "position must be"),
        (lambda f: f("x", *torch.randn(3, 4, 4)), TypeError, "x must be a torch.Tensor"),
    ],
)
def test_self_attention_bad_input(call, err, msg):
    from posviz.dot_product import self_attention

    with pytest.raises(err, match=msg):
        call(self_attention)


def test_attention_scores_bad_input():
    from posviz.dot_product import attention_scores

    with pytest.raises(ValueError, match="same last dim"):
        attention_scores(torch.randn(3, 4), torch.randn(3, 5))
    with pytest.raises(TypeError, match="k must be a torch.Tensor"):
        attention_scores(torch.randn(3, 4), None)


# --- masks in PyTorch's sense, as scaled_dot_product_attention (True = may attend) ---------------


@pytest.mark.parametrize("causal", [False, True])
def test_boolean_mask_matches_sdpa(causal):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 9, 8, generator=g, dtype=torch.float64) for _ in range(3))
    mask = torch.rand(9, 9, generator=g) > 0.4
    mask |= torch.eye(9, dtype=torch.bool)  # every row keeps a key, also under the causal mask
    out, w = posviz.attention(q, k, v, bias=mask, causal=causal)
    full = mask & ~posviz.causal_mask(9, 9) if causal else mask
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=full)
    torch.testing.assert_close(out, ref)
    assert torch.all(w[..., ~full] == 0)  # no weight on a masked key
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, 9, dtype=torch.float64))


def test_boolean_mask_broadcasts_per_head_and_is_not_added():
    q, k, v = (torch.randn(4, 6, 8, dtype=torch.float64) for _ in range(3))
    mask = torch.ones(4, 6, 6, dtype=torch.bool)
    mask[1, :, 0] = False
    out, w = posviz.attention(q, k, v, bias=mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    torch.testing.assert_close(w[0], posviz.attention_weights(q[0], k[0]))  # all True = no mask, not +1
    assert torch.all(w[1, :, 0] == 0)


def test_a_row_with_every_key_masked_gets_zeros_as_in_sdpa():
    q, k, v = (torch.randn(3, 4, dtype=torch.float64) for _ in range(3))
    mask = torch.tensor([[True, False, False], [False, False, False], [True, True, True]])
    out, w = posviz.attention(q, k, v, bias=mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    assert torch.all(w[1] == 0) and not torch.isnan(w).any()


def test_boolean_mask_in_scores_is_minus_infinity():
    q, k = torch.randn(2, 4), torch.randn(3, 4)
    mask = torch.tensor([[True, False, True], [False, True, True]])
    s = posviz.attention_scores(q, k, bias=mask)
    assert torch.all(torch.isinf(s[~mask])) and torch.all(torch.isfinite(s[mask]))
    torch.testing.assert_close(s[mask], posviz.attention_scores(q, k)[mask])


def test_float_bias_is_cast_to_the_scores_dtype():
    q, k, v = (torch.randn(5, 4) for _ in range(3))
    bias = posviz.alibi_bias(1, 5, dtype=torch.float64)[0]
    out, w = posviz.attention(q, k, v, bias=bias)
    assert out.dtype == w.dtype == torch.float32
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=bias.float()))
    per_head = posviz.alibi_bias(3, 5, dtype=torch.float64)  # broadcasts the scores to [3, 5, 5]
    out, w = posviz.attention(q, k, v, bias=per_head)
    assert out.dtype == w.dtype == torch.float32 and w.shape == (3, 5, 5)


def test_a_bias_on_another_device_is_moved_to_the_scores_device(monkeypatch):
    """The README's example: q on the CPU, the bias built elsewhere. Checked with the meta device."""
    q = torch.randn(2, 5, 4, device="meta")
    bias = posviz.alibi_bias(2, 5)  # torch's default device: the CPU
    assert bias.device.type == "cpu"
    out, w = posviz.attention(q, q, q, bias=bias)
    assert out.device.type == w.device.type == "meta"
    mask = torch.ones(5, 5, dtype=torch.bool)
    assert posviz.attention_weights(q, q, bias=mask).device.type == "meta"


def test_attention_is_the_function_and_the_module_has_another_name():
    import importlib

    import posviz.dot_product as module

    assert callable(posviz.attention) and posviz.attention is module.attention
    assert importlib.import_module("posviz").attention is module.attention
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("posviz.attention")


def test_v_is_required():
    with pytest.raises(TypeError):
        posviz.attention(torch.randn(3, 4), torch.randn(3, 4))  # weights alone: attention_weights


# --- one mask rule for every attention path: a query with no key left gets zeros ---------------


def test_zero_row_rule_counts_the_causal_mask():
    """The mask keeps only keys after query 0: with causal=True query 0 has no key left, although
    its mask row is not all False. Zeros (as SDPA gives), no NaN, zero gradients."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 5, 4, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(3))
    mask = torch.ones(5, 5, dtype=torch.bool)
    mask[0] = torch.tensor([False, True, True, False, False])
    out, w = posviz.attention(q, k, v, bias=mask, causal=True)
    assert not torch.isnan(w).any() and not torch.isnan(out).any()
    assert torch.all(w[:, 0] == 0) and torch.all(out[:, 0] == 0)
    full = mask & ~posviz.causal_mask(5, 5)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=full))
    torch.testing.assert_close(w[:, 1:].sum(-1), torch.ones(2, 4, dtype=torch.float64))
    out.sum().backward()
    assert torch.isfinite(q.grad).all() and torch.all(q.grad[:, 0] == 0)
    assert torch.isfinite(k.grad).all() and torch.isfinite(v.grad).all()
    torch.testing.assert_close(posviz.attention_weights(q, k, bias=mask, causal=True), w)


@pytest.mark.parametrize("causal", [False, True])
def test_a_float_bias_with_a_minus_infinity_row_gives_zeros_like_a_mask(causal):
    q, k, v = (torch.randn(3, 6, 4, dtype=torch.float64) for _ in range(3))
    mask = torch.rand(6, 6, generator=torch.Generator().manual_seed(1)) > 0.3
    mask[2] = False
    mask[4] = False
    as_float = torch.zeros(6, 6, dtype=torch.float64).masked_fill(~mask, -torch.inf)
    out_f, w_f = posviz.attention(q, k, v, bias=as_float, causal=causal)
    out_b, w_b = posviz.attention(q, k, v, bias=mask, causal=causal)
    assert not torch.isnan(w_f).any()
    assert torch.all(w_f[:, 2] == 0) and torch.all(out_f[:, 4] == 0)
    torch.testing.assert_close(w_f, w_b)
    torch.testing.assert_close(out_f, out_b)
    sdpa_mask = as_float.masked_fill(posviz.causal_mask(6, 6), -torch.inf) if causal else as_float
    torch.testing.assert_close(out_f, F.scaled_dot_product_attention(q, k, v, attn_mask=sdpa_mask))
    # and the gradients: zero for the empty rows, finite everywhere (softmax's 0/0 would give NaN)
    q.requires_grad_(True)
    bias = as_float.clone().requires_grad_(True)
    out, _ = posviz.attention(q, k, v, bias=bias, causal=causal)
    out.sum().backward()
    assert torch.isfinite(q.grad).all() and torch.all(q.grad[:, [2, 4]] == 0)
    assert torch.isfinite(bias.grad).all()


def test_a_nan_score_stays_nan():
    """The zero-row rule is for rows with no key, not a way of hiding NaN inputs."""
    q, k = torch.randn(3, 4), torch.randn(3, 4)
    q[1, 0] = float("nan")
    w = posviz.attention_weights(q, k)
    assert torch.isnan(w[1]).all() and not torch.isnan(w[[0, 2]]).any()


@pytest.mark.parametrize(
    ("call", "err", "msg"),
    [
        (lambda: posviz.attention(torch.randn(2, 3, 4), torch.randn(2, 3, 4), torch.randn(5, 3, 4)), ValueError,
         r"v's batch dimensions \[5\] .* do not broadcast with the weights' \[2\]"),
        (lambda: posviz.attention(torch.randn(3, 0), torch.randn(3, 0), torch.randn(3, 2)), ValueError,
         "head size d >= 1"),
        (lambda: posviz.attention_weights(torch.randn(3, 0), torch.randn(3, 0), scale=1.0), ValueError,
         "head size d >= 1"),
        (lambda: posviz.attention(torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4), causal="no"), TypeError,
         r"causal must be True or False, got 'no' \(str\)"),
        (lambda: posviz.attention_weights(torch.randn(3, 4), torch.randn(3, 4), causal=1), TypeError,
         "causal must be True or False"),
        (lambda: posviz.attention_scores(torch.randn(3, 4), torch.randn(3, 4), causal=None), TypeError,
         "causal must be True or False"),
        (lambda: posviz.self_attention(torch.randn(3, 4), *torch.randn(3, 4, 4), causal="yes"), TypeError,
         "causal must be True or False"),
    ],
)
def test_more_bad_input(call, err, msg):
    with pytest.raises(err, match=msg):
        call()


def test_v_batch_dims_broadcast_with_the_weights():
    q, k = torch.randn(2, 1, 5, 4), torch.randn(2, 1, 5, 4)
    v = torch.randn(3, 5, 6)  # broadcasts with the weights' [2, 1]: output [2, 3, 5, 6]
    out, w = posviz.attention(q, k, v)
    assert out.shape == (2, 3, 5, 6) and w.shape == (2, 1, 5, 5)
    torch.testing.assert_close(out, w @ v)
