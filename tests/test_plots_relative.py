"""posviz.plots.relative: each figure has working slider steps holding posviz's own numbers."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
import torch

import posviz
from posviz.plots import relative as P


def _steps(fig: go.Figure) -> list:
    return list(fig.layout.sliders[0].steps)


def _assert_steps_differ(fig: go.Figure, key: str = "z") -> None:
    steps = _steps(fig)
    assert len(steps) >= 2
    first, last = steps[0].args[0][key], steps[-1].args[0][key]
    assert any(not np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(first, last))


@pytest.fixture(scope="module")
def clipped() -> go.Figure:
    return P.clipped_positions_figure(length=10, clips=(0, 2, 5, 9), active=1)


def test_clipped_positions_figure_holds_relative_positions(clipped):
    assert len(clipped.data) == 2 and [b.label for b in clipped.layout.updatemenus[0].buttons][1].startswith("Shaw")
    _assert_steps_differ(clipped)
    for step, k in enumerate((0, 2, 5, 9)):
        book, shaw = _steps(clipped)[step].args[0]["z"]
        expected = posviz.relative_positions(10, max_distance=k, device="cpu").numpy()
        np.testing.assert_array_equal(book, expected)  # clip(m - n, -k, k)
        np.testing.assert_array_equal(shaw, -expected)  # Shaw's clip(n - m, k): the mirror
    np.testing.assert_array_equal(clipped.data[0].z, posviz.relative_positions(10, max_distance=2).numpy())
    assert _steps(clipped)[3].args[1]["title.text"].endswith("19 table rows")


def test_clipped_positions_figure_bad_length():
    with pytest.raises(ValueError, match="length must be >= 1"):
        P.clipped_positions_figure(length=0)


@pytest.fixture(scope="module")
def xl() -> go.Figure:
    return P.transformer_xl_terms_figure(length=6, shifts=(0, 3, 40), d_model=8, d_head=4, seed=3)


def test_transformer_xl_figure_holds_both_expansions(xl):
    assert len(xl.data) == 8
    _assert_steps_differ(xl)
    x = P.xl_demo_inputs(6, d_model=8, d_head=4, seed=3)
    e = x["e"]
    xl_terms = posviz.relative.transformer_xl_scores(e, e, x["w_q"], x["w_k"], x["w_k_r"], x["u"], x["v"])
    for step, s in enumerate((0, 3, 40)):
        z = _steps(xl)[step].args[0]["z"]
        pe = posviz.sinusoidal_encoding(s + 6, 8, device="cpu")[s:]
        absolute = posviz.relative.absolute_score_terms(e, e, pe, pe, x["w_q"], x["w_k"])
        for i in range(4):
            np.testing.assert_allclose(z[i], absolute[i].numpy(), rtol=1e-6)
            np.testing.assert_allclose(z[4 + i], xl_terms[i].numpy(), rtol=1e-6)  # the same at every shift
        assert list(_steps(xl)[step].args[0]["x"][0]) == list(range(s, s + 6))
    first, last = _steps(xl)[0].args[0]["z"], _steps(xl)[2].args[0]["z"]
    np.testing.assert_allclose(first[0], last[0])  # (a) content-content does not see positions
    assert not np.allclose(first[3], last[3])  # absolute (d) moves with the shift
    views = xl.layout.updatemenus[0].buttons
    assert [b.args[0]["visible"] for b in views] == [[True] * 4 + [False] * 4, [False] * 4 + [True] * 4]


@pytest.fixture(scope="module")
def buckets() -> go.Figure:
    return P.t5_bucket_figure(settings=((8, 64), (32, 128), (64, 512)), max_offset=1000)


def test_t5_bucket_figure_holds_t5_buckets(buckets):
    assert len(buckets.data) == 4 and buckets.layout.sliders[0].active == 1
    _assert_steps_differ(buckets, "y")
    for step, (b, d) in enumerate(((8, 64), (32, 128), (64, 512))):
        args = _steps(buckets)[step].args[0]
        for trace, (bidirectional, sign) in enumerate(((True, -1), (True, 1), (False, -1), (False, 1))):
            x, y = np.asarray(args["x"][trace]), np.asarray(args["y"][trace])
            # the drawn step line ("hv") takes the value of the last kept point at or before each distance
            dist = np.arange(1, 1001)
            drawn = y[np.searchsorted(x, dist, side="right") - 1]
            expected = posviz.t5_relative_bucket(
                torch.from_numpy(sign * dist), bidirectional=bidirectional, num_buckets=b, max_distance=d
            ).numpy()
            np.testing.assert_array_equal(drawn, expected)
    assert buckets.data[2].name.startswith("key before") and "masked" in buckets.data[3].name


def test_demo_bias_table():
    table = P.demo_t5_bias_table(8, 32)
    assert table.shape == (32, 8)
    assert torch.count_nonzero(table[:, 0]) == 0  # head 0: no bias
    assert table[3, 1].item() == pytest.approx(-0.75) and table[16 + 3, 2].item() == pytest.approx(-1.5)
    assert table[16 + 1, 6].item() == -10 and table[1, 7].item() == -10 and table[0, 7].item() == 0
    with pytest.raises(ValueError, match="num_heads must be >= 3"):
        P.demo_t5_bias_table(2)


@pytest.fixture(scope="module")
def t5_attention() -> go.Figure:
    return P.t5_attention_figure(length=12, num_heads=4, head_dim=8, seed=1)


def test_t5_attention_figure(t5_attention):
    assert len(t5_attention.data) == 3 and len(_steps(t5_attention)) == 4
    _assert_steps_differ(t5_attention)
    t5 = posviz.T5RelativeBias(4)
    with torch.no_grad():
        t5.embedding.weight.copy_(P.demo_t5_bias_table(4, 32))
        bias = t5(12)
    for h in range(4):
        plain, biased, drawn_bias = _steps(t5_attention)[h].args[0]["z"]
        np.testing.assert_allclose(drawn_bias, bias[h].numpy())
        np.testing.assert_allclose(np.asarray(plain).sum(1), 1, rtol=1e-5)
        np.testing.assert_allclose(np.asarray(biased).sum(1), 1, rtol=1e-5)
    plain0, biased0, _ = _steps(t5_attention)[0].args[0]["z"]
    np.testing.assert_allclose(plain0, biased0, rtol=1e-5)  # head 0 has no bias
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(4, 12, 8, generator=g), torch.randn(4, 12, 8, generator=g)
    expected = posviz.attention_weights(q, k, bias=bias)
    np.testing.assert_allclose(_steps(t5_attention)[2].args[0]["z"][1], expected[2].numpy(), rtol=1e-5)


def test_figures_are_deterministic():
    assert pio.to_json(P.transformer_xl_terms_figure(length=4, shifts=(0, 1))) == pio.to_json(
        P.transformer_xl_terms_figure(length=4, shifts=(0, 1))
    )
    assert pio.to_json(P.t5_attention_figure(length=6, num_heads=3)) == pio.to_json(
        P.t5_attention_figure(length=6, num_heads=3)
    )
