"""posviz.plots.attention: the chapter's slider figures hold what posviz computes."""

from __future__ import annotations

import math

import numpy as np
import plotly.io as pio
import pytest
import torch

import posviz
from posviz.dot_product import attention_scores, self_attention
from posviz.plots.attention import (
    DEFAULT_SENTENCE,
    METHOD_LABELS,
    permutation_figure,
    permutation_gap,
    position_kwargs,
    random_qk,
    scale_figure,
    toy_embeddings,
    toy_projections,
)


def _step_data(fig, index: int) -> list[np.ndarray]:
    return [np.asarray(z, dtype=float) for z in fig.layout.sliders[0].steps[index].args[0]["z"]]


# --- scale_figure ---


def test_scale_figure_has_one_step_per_dimension_and_steps_differ() -> None:
    dims = (2, 16, 256)
    fig = scale_figure(dims, length=6, active=0)
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == ["2", "16", "256"]
    assert len(fig.data) == 2
    first, last = _step_data(fig, 0), _step_data(fig, 2)
    assert not np.allclose(first[0], last[0]) and not np.allclose(first[1], last[1])
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), first[0])  # the active step is drawn


@pytest.mark.parametrize("index", [0, 3])
def test_scale_figure_panels_are_posviz_attention_with_and_without_the_scale(index: int) -> None:
    dims = (4, 32, 128, 1024)
    fig = scale_figure(dims, length=8, seed=3)
    d = dims[index]
    q, k = random_qk(8, d, seed=3)
    scaled, unscaled = _step_data(fig, index)
    np.testing.assert_allclose(scaled, posviz.attention_weights(q, k).numpy())
    np.testing.assert_allclose(unscaled, posviz.attention_weights(q, k, scale=1.0).numpy())
    # the unscaled panel is the softmax of sqrt(d) times the scaled scores (written independently)
    np.testing.assert_allclose(unscaled, torch.softmax(attention_scores(q, k) * math.sqrt(d), -1).numpy())
    title = fig.layout.sliders[0].steps[index].args[1]["title.text"]
    assert title.startswith(f"d = {d}:")
    assert f"{scaled.max(-1).mean():.2f} with ÷√d" in title and f"{unscaled.max(-1).mean():.2f} without" in title


def test_scale_figure_unscaled_attention_saturates_at_large_d() -> None:
    fig = scale_figure((2, 2048), length=10)
    scaled, unscaled = _step_data(fig, 1)
    assert unscaled.max(-1).mean() > 0.9 > scaled.max(-1).mean()


def test_scale_figure_is_deterministic() -> None:
    assert pio.to_json(scale_figure((2, 8), length=4)) == pio.to_json(scale_figure((2, 8), length=4))


@pytest.mark.parametrize(
    ("kwargs", "err", "msg"),
    [
        ({"dims": (8,)}, ValueError, "at least 2"),
        ({"dims": (8, 0)}, ValueError, r"dims\[i\] must be >= 1"),
        ({"dims": (8, 16), "length": 1}, ValueError, r"length must be in \[2, 64\]"),
        ({"dims": (8, 16), "seed": -1}, ValueError, "seed must be >= 0"),
    ],
)
def test_scale_figure_bad_arguments(kwargs: dict, err: type, msg: str) -> None:
    with pytest.raises(err, match=msg):
        scale_figure(**kwargs)


# --- permutation_figure ---


def test_permutation_figure_steps_views_and_labels() -> None:
    fig = permutation_figure(count=12)
    steps = fig.layout.sliders[0].steps
    assert len(steps) == 12 and len(fig.data) == 12
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == list(METHOD_LABELS.values())
    assert [t.visible for t in fig.data] == [True] * 3 + [False] * 9
    assert buttons[2].args[0]["visible"] == [False] * 6 + [True] * 3 + [False] * 3
    orders = [tuple(s.args[1]["yaxis.ticktext"]) for s in steps]
    assert len(set(orders)) == 12 and orders[0] == DEFAULT_SENTENCE
    assert all(sorted(o) == sorted(DEFAULT_SENTENCE) for o in orders)
    assert not np.allclose(_step_data(fig, 1)[1], _step_data(fig, 2)[1])


def test_permutation_figure_data_is_self_attention_of_the_shuffled_sentence() -> None:
    fig = permutation_figure(dim=8, seed=0, base=10000.0)
    words = list(DEFAULT_SENTENCE)
    x = toy_embeddings(words, 8).double()
    w = [t.double() for t in toy_projections(8)]
    pe = posviz.sinusoidal_encoding(len(words), 8, device="cpu", dtype=torch.float64)
    step = fig.layout.sliders[0].steps[3]
    shuffled = list(step.args[1]["yaxis.ticktext"])
    perm = [words.index(word) for word in shuffled]
    z = [np.asarray(a, dtype=float) for a in step.args[0]["z"]]
    out, _ = self_attention(x, *w)
    out_p, weights_p = self_attention(x[perm], *w)
    np.testing.assert_allclose(z[0], weights_p.numpy())
    np.testing.assert_allclose(z[1], out_p.numpy())
    np.testing.assert_allclose(z[2], (out_p - out[perm]).numpy())
    out, _ = self_attention(x, *w, position=pe)
    out_p, _ = self_attention(x[perm], *w, position=pe)
    np.testing.assert_allclose(z[4], out_p.numpy())
    np.testing.assert_allclose(z[5], (out_p - out[perm]).numpy())
    out, _ = self_attention(x, *w, rope_base=10000.0)
    out_p, _ = self_attention(x[perm], *w, rope_base=10000.0)
    np.testing.assert_allclose(z[8], (out_p - out[perm]).numpy())
    slope = 0.5  # ALiBi, one head, symmetric -slope * |m - n| (written independently)
    bias = -slope * (torch.arange(6.0)[:, None] - torch.arange(6.0)[None, :]).abs().double()
    out, _ = self_attention(x, *w, bias=bias)
    out_p, weights_p = self_attention(x[perm], *w, bias=bias)
    np.testing.assert_allclose(z[9], weights_p.numpy())
    np.testing.assert_allclose(z[11], (out_p - out[perm]).numpy())


def test_permutation_figure_differences_vanish_only_without_position() -> None:
    fig = permutation_figure(count=8)
    for i, step in enumerate(fig.layout.sliders[0].steps):
        z = [np.asarray(a, dtype=float) for a in step.args[0]["z"]]
        gaps = [np.abs(z[j]).max() for j in (2, 5, 8, 11)]
        assert gaps[0] < 1e-12  # no position: o'_m = o_pi(m)
        order = list(step.args[1]["yaxis.ticktext"])
        if i == 0:  # the identity shuffle changes nothing
            assert max(gaps) < 1e-12
        elif order == list(DEFAULT_SENTENCE)[::-1]:  # a symmetric bias -slope*|m - n| cannot see a reversal
            assert gaps[3] < 1e-12 and min(gaps[1:3]) > 0.05
        else:  # every other shuffle changes the outputs once position is in, wherever it enters
            assert min(gaps[1:]) > 0.05
        shown = [f"{g:.1e}" if g < 1e-3 else f"{g:.2f}" for g in gaps]
        title = step.args[1]["title.text"]
        assert f"no position {shown[0]} · sinusoidal {shown[1]} · RoPE {shown[2]} · ALiBi {shown[3]}" in title


def test_permutation_figure_is_deterministic() -> None:
    assert pio.to_json(permutation_figure(count=3)) == pio.to_json(permutation_figure(count=3))


@pytest.mark.parametrize(
    ("kwargs", "err", "msg"),
    [
        ({"words": ["a", "a", "b"]}, ValueError, "distinct"),
        ({"words": ["a"]}, ValueError, "at least 2"),
        ({"dim": 7}, ValueError, "dim must be a positive even integer"),
        ({"dim": 1000}, ValueError, r"dim must be in \[2, 64\]"),
        ({"count": 1}, ValueError, r"count must be in \[2, 40\]"),
        ({"base": 0}, ValueError, "base must be a finite number > 0"),
        ({"alibi_slope": -1.0}, ValueError, r"alibi_slope: slopes must be finite and >= 0"),
        ({"alibi_slope": "0.5"}, TypeError, "alibi_slope: slopes must be a torch.Tensor or a real number"),
    ],
)
def test_permutation_figure_bad_arguments(kwargs: dict, err: type, msg: str) -> None:
    with pytest.raises(err, match=msg):
        permutation_figure(**kwargs)


# --- toy helpers ---


def test_toy_embeddings_give_a_word_the_same_vector_in_every_sentence() -> None:
    a = toy_embeddings(["dog", "bites", "man"], 8)
    b = toy_embeddings(["man", "bites", "dog"], 8)
    torch.testing.assert_close(a[0], b[2], rtol=0, atol=0)
    assert not torch.allclose(a[0], a[2])
    assert not torch.allclose(a, toy_embeddings(["dog", "bites", "man"], 8, seed=1))
    with pytest.raises(TypeError, match="words must be a sequence of strings"):
        toy_embeddings("dog", 8)


def test_toy_projections_have_variance_one_over_dim() -> None:
    w = torch.stack(toy_projections(256))
    assert w.shape == (3, 256, 256) and abs(w.var().item() * 256 - 1) < 0.02


def test_permutation_gap() -> None:
    x = torch.randn(9, 16)
    w = toy_projections(16)
    perm = torch.randperm(9)
    assert permutation_gap(x, *w, perm) < 1e-5
    assert permutation_gap(x, *w, perm, position=posviz.sinusoidal_encoding(9, 16, device="cpu")) > 1e-2
    assert permutation_gap(x, *w, torch.arange(9).flip(0), causal=True) > 1e-2  # the mask knows the order
    with pytest.raises(ValueError, match="perm must be a permutation of 0..8"):
        permutation_gap(x, *w, [0, 0, 1, 2, 3, 4, 5, 6, 7])


def test_position_kwargs_put_position_in_three_places() -> None:
    assert position_kwargs("none", 5, 8) == {}
    torch.testing.assert_close(
        position_kwargs("sinusoidal", 5, 8, base=100.0)["position"],
        posviz.sinusoidal_encoding(5, 8, 100.0, device="cpu"),
    )
    assert position_kwargs("rope", 5, 8, base=500.0) == {"rope_base": 500.0}
    bias = position_kwargs("alibi", 4, 8, alibi_slope=0.25)["bias"]
    assert bias.shape == (4, 4) and bias[3, 0].item() == -0.75 and bias[0, 3].item() == -0.75
    with pytest.raises(ValueError, match="method must be one of"):
        position_kwargs("learned", 5, 8)
    # slope 0 is allowed, as posviz.alibi.check_slopes allows it: no bias at all
    assert position_kwargs("alibi", 4, 8, alibi_slope=0)["bias"].abs().max().item() == 0.0
    with pytest.raises(ValueError, match=r"alibi_slope: slopes must be finite and >= 0"):
        position_kwargs("alibi", 4, 8, alibi_slope=float("inf"))
    with pytest.raises(ValueError, match="dim must be a positive even integer"):
        position_kwargs("sinusoidal", 5, 7)


@pytest.mark.parametrize("method", ["sinusoidal", "rope", "alibi"])
def test_every_place_breaks_permutation_equivariance(method: str) -> None:
    x, w = torch.randn(7, 8), toy_projections(8)
    perm = torch.arange(7).roll(2)
    assert permutation_gap(x, *w, perm) < 1e-5
    assert permutation_gap(x, *w, perm, **position_kwargs(method, 7, 8)) > 1e-2
