"""posviz.plots.learned: each figure builds, its slider steps hold different data, and the data is posviz's."""

from __future__ import annotations

import numpy as np
import plotly.io as pio
import pytest
import torch

from posviz import sinusoidal_encoding
from posviz.learned import (
    WindowMaxConfig,
    cosine_similarity_matrix,
    learned_table_parameters,
    mean_by_offset,
    train_window_max,
)
from posviz.plots.learned import (
    DIMS,
    KNOWN_TABLES,
    LENGTHS,
    learned_attention_figure,
    learned_cost_figure,
    learned_similarity_figure,
    learned_table_figure,
)

CONFIG = WindowMaxConfig(max_len=12, dim=8, steps=40, checkpoints=(0, 10, 20, 40), probe=32)


@pytest.fixture(scope="module")
def run():
    return train_window_max(CONFIG)


def _steps(fig):
    (slider,) = fig.layout.sliders
    return slider.steps


def _different(a, b) -> bool:
    return not np.array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float))


def test_cost_figure_line_is_rows_times_width():
    fig = learned_cost_figure()
    steps = _steps(fig)
    assert len(steps) == len(DIMS) >= 2
    for step, d in zip(steps, DIMS):
        line = step.args[0]["y"][0]
        np.testing.assert_array_equal(line, [learned_table_parameters(n, d) for n in LENGTHS])
    assert _different(steps[0].args[0]["y"][0], steps[-1].args[0]["y"][0])
    # the published tables are the same markers in every step
    assert list(fig.data[1].y) == [learned_table_parameters(n, d) for _, n, d, _ in KNOWN_TABLES]
    assert fig.layout.sliders[0].active == DIMS.index(768)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text


def test_cost_figure_rejects_an_active_dim_not_offered():
    with pytest.raises(ValueError, match="active_dim"):
        learned_cost_figure(active_dim=100)


def test_table_figure_shows_each_snapshot(run):
    fig = learned_table_figure(run)
    steps = _steps(fig)
    assert [s.label for s in steps] == ["0", "10", "20", "40"]
    for step, snap in zip(steps, run.snapshots):
        np.testing.assert_allclose(step.args[0]["z"][0], snap.table.double().numpy(), atol=5e-4)
    assert _different(steps[0].args[0]["z"][0], steps[-1].args[0]["z"][0])
    assert [b.label for b in fig.layout.updatemenus[0].buttons] == [
        "one colour scale for all steps",
        "each step rescaled",
    ]
    # the first view shares one colour range across steps, the second rescales each step
    assert len({s.args[0]["zmax"][0] for s in steps}) == 1
    assert len({s.args[0]["zmax"][1] for s in steps}) > 1
    assert fig.data[0].colorbar.title.text and fig.layout.xaxis.title.text and fig.layout.yaxis.title.text


def test_similarity_figure_is_posviz_cosine_and_profile(run):
    fig = learned_similarity_figure(run)
    steps = _steps(fig)
    assert len(steps) == len(run.snapshots)
    last = steps[-1].args[0]
    sim = cosine_similarity_matrix(run.snapshots[-1].table)
    np.testing.assert_allclose(last["z"][0], sim.double().numpy(), atol=5e-4)
    np.testing.assert_allclose(last["y"][2], mean_by_offset(sim).double().numpy(), atol=5e-4)
    sin = cosine_similarity_matrix(sinusoidal_encoding(CONFIG.max_len, CONFIG.dim, device="cpu"))
    np.testing.assert_allclose(last["z"][1], sin.double().numpy(), atol=5e-4)
    assert _different(steps[0].args[0]["z"][0], last["z"][0])
    assert fig.layout.sliders[0].active == len(steps) - 1
    assert [b.args[0]["visible"] for b in fig.layout.updatemenus[0].buttons] == [
        [True, False, True, True],
        [False, True, True, True],
    ]


def test_similarity_figure_base_changes_the_sinusoidal_map(run):
    a = learned_similarity_figure(run, base=10000.0)
    b = learned_similarity_figure(run, base=10.0)
    assert _different(a.data[1].z, b.data[1].z)
    np.testing.assert_array_equal(a.data[0].z, b.data[0].z)


def test_attention_figure_shows_the_stored_maps(run):
    fig = learned_attention_figure(run)
    steps = _steps(fig)
    assert len(steps) == len(run.snapshots)
    for step, snap in zip(steps, run.snapshots):
        np.testing.assert_allclose(step.args[0]["z"][0], snap.positional_attention.double().numpy(), atol=5e-4)
        np.testing.assert_allclose(step.args[0]["z"][1], snap.attention.double().numpy(), atol=5e-4)
    assert _different(steps[0].args[0]["z"][0], steps[-1].args[0]["z"][0])
    assert fig.layout.coloraxis.cmax == 0.5


def test_figures_need_snapshots():
    empty = train_window_max(WindowMaxConfig(max_len=4, dim=2, steps=0, checkpoints=(), probe=2))
    for make in (learned_table_figure, learned_similarity_figure, learned_attention_figure):
        with pytest.raises(ValueError, match="snapshots"):
            make(empty)


def test_similarity_needs_an_even_dim():
    odd = train_window_max(WindowMaxConfig(max_len=4, dim=3, steps=0, checkpoints=(0,), probe=2))
    with pytest.raises(ValueError, match="even"):
        learned_similarity_figure(odd)


def test_figures_are_deterministic():
    a, b = train_window_max(CONFIG), train_window_max(CONFIG)
    for make in (learned_table_figure, learned_similarity_figure, learned_attention_figure):
        assert pio.to_json(make(a)) == pio.to_json(make(b))
    assert pio.to_json(learned_cost_figure()) == pio.to_json(learned_cost_figure())


def test_attention_rows_sum_to_one(run):
    fig = learned_attention_figure(run, decimals=6)
    z = np.asarray(fig.data[0].z)
    np.testing.assert_allclose(z.sum(-1), 1.0, atol=1e-4)
    assert torch.is_tensor(run.snapshots[0].positional_attention)
