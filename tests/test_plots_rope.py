"""posviz.plots.rope: the RoPE chapter's slider figures hold posviz's numbers, one state per step."""

from __future__ import annotations

import json

import numpy as np
import plotly.io as pio
import pytest
import torch

import posviz
from posviz.plots.rope import (
    base_label,
    rope_angle_figure,
    rope_decay_figure,
    rope_rotation_figure,
    rope_score_matrix_figure,
)


def _step_data(fig, step: int, key: str, trace: int) -> np.ndarray:
    """What slider step ``step`` writes into property ``key`` of trace ``trace``."""
    return np.asarray(fig.layout.sliders[0].steps[step].args[0][key][trace], dtype=float)


def _steps_differ(fig, key: str, trace: int) -> None:
    steps = fig.layout.sliders[0].steps
    assert len(steps) >= 2
    first = _step_data(fig, 0, key, trace)
    assert any(not np.array_equal(first, _step_data(fig, s, key, trace)) for s in range(1, len(steps)))


def test_rotation_figure_draws_apply_rope() -> None:
    d, base, pairs, offset = 16, 100.0, (0, 3, 7), 2
    q, k = torch.randn(d, dtype=torch.float64), torch.randn(d, dtype=torch.float64)
    positions = [2, 3, 5, 9]
    fig = rope_rotation_figure(q, k, dim=d, base=base, pairs=pairs, positions=positions, offset=offset)
    assert len(fig.layout.sliders[0].steps) == 4 and len(fig.data) == 4 * len(pairs)
    for s, m in enumerate(positions):
        rq = posviz.apply_rope(q[None], torch.tensor([float(m)]), base)[0]
        rk = posviz.apply_rope(k[None], torch.tensor([float(m - offset)]), base)[0]
        for c, i in enumerate(pairs):
            qx, qy = _step_data(fig, s, "x", 4 * c + 2), _step_data(fig, s, "y", 4 * c + 2)
            kx, ky = _step_data(fig, s, "x", 4 * c + 3), _step_data(fig, s, "y", 4 * c + 3)
            np.testing.assert_allclose([qx[1], qy[1]], [rq[2 * i], rq[2 * i + 1]], atol=1e-5)
            np.testing.assert_allclose([kx[1], ky[1]], [rk[2 * i], rk[2 * i + 1]], atol=1e-5)
            assert qx[0] == qy[0] == 0  # arrows start at the origin
    _steps_differ(fig, "x", 2)
    assert fig.layout.sliders[0].steps[3].args[1]["title.text"].startswith("Query at m = 9")


def test_rotation_figure_half_layout_draws_half_pairs() -> None:
    d = 8
    q, k = torch.randn(d, dtype=torch.float64), torch.randn(d, dtype=torch.float64)
    fig = rope_rotation_figure(q, k, dim=d, pairs=(1,), positions=[3, 4], offset=1, layout="half")
    rq = posviz.apply_rope(q[None], torch.tensor([4.0]), layout="half")[0]
    np.testing.assert_allclose(
        [_step_data(fig, 1, "x", 2)[1], _step_data(fig, 1, "y", 2)[1]], [rq[1], rq[1 + d // 2]], atol=1e-5
    )


def test_rotation_figure_default_pairs_have_unit_length_and_keep_their_angle() -> None:
    fig = rope_rotation_figure()
    steps = fig.layout.sliders[0].steps
    for c in range(4):
        dots = []
        for s in range(len(steps)):
            q = complex(*(v[1] for v in (_step_data(fig, s, "x", 4 * c + 2), _step_data(fig, s, "y", 4 * c + 2))))
            k = complex(*(v[1] for v in (_step_data(fig, s, "x", 4 * c + 3), _step_data(fig, s, "y", 4 * c + 3))))
            assert abs(q) == pytest.approx(1, abs=1e-4) and abs(k) == pytest.approx(1, abs=1e-4)
            dots.append((q * k.conjugate()).real)
        assert max(dots) - min(dots) < 1e-4  # the relative property, pair by pair


def test_angle_figure_draws_rope_angles() -> None:
    bases, positions = (100.0, 10000.0), (1, 8, 64)
    fig = rope_angle_figure(dim=32, bases=bases, positions=positions)
    assert len(fig.data) == len(bases) + 1
    for s, m in enumerate(positions):
        for j, b in enumerate(bases):
            expected = posviz.rope.rope_angles(torch.tensor(float(m), dtype=torch.float64), 32, b).numpy()
            np.testing.assert_allclose(_step_data(fig, s, "y", j), expected, rtol=1e-4)
    np.testing.assert_allclose(_step_data(fig, 2, "y", 2), [2 * np.pi] * 2)  # the one-turn line
    _steps_differ(fig, "y", 0)
    menu = fig.layout.updatemenus[0]
    assert [b.label for b in menu.buttons] == ["all bases", "base 100", "base 10 000"]
    assert menu.buttons[2].args[0]["visible"] == [False, True, True]


def test_score_matrix_figure_draws_rope_scores_and_is_toeplitz() -> None:
    d, length, bases = 16, 12, (10.0, 10000.0)
    q, k = torch.randn(d, dtype=torch.float64), torch.randn(d, dtype=torch.float64)
    fig = rope_score_matrix_figure(q, k, dim=d, length=length, bases=bases)
    for s, b in enumerate(bases):
        for t, layout in enumerate(("interleaved", "half")):
            z = _step_data(fig, s, "z", t)
            expected = posviz.rope.rope_scores(q.expand(length, d), k.expand(length, d), base=b, layout=layout)
            np.testing.assert_allclose(z, expected.numpy(), rtol=1e-3, atol=1e-3)
            for off in range(-length + 1, length):
                diagonal = np.diagonal(z, offset=off)
                assert np.ptp(diagonal) < 1e-2 * max(1.0, np.abs(z).max())
    assert not np.allclose(_step_data(fig, 1, "z", 0), _step_data(fig, 1, "z", 1))  # layouts differ
    _steps_differ(fig, "z", 0)
    assert fig.data[0].zmin == -fig.data[0].zmax  # one colour scale, centred, for every state
    assert fig.layout.updatemenus[0].buttons[0].label.startswith("interleaved")


def test_decay_figure_draws_rope_mean_partial_sum() -> None:
    dims, bases = (8, 64), (100.0, 10000.0)
    fig = rope_decay_figure(dims=dims, bases=bases, max_distance=50)
    r = torch.arange(0, 51, dtype=torch.float64)
    for s, d in enumerate(dims):
        for j, b in enumerate(bases):
            expected = posviz.rope_mean_partial_sum(r, d, b).numpy()
            np.testing.assert_allclose(_step_data(fig, s, "y", j), expected, rtol=1e-3)
        assert fig.layout.sliders[0].steps[s].args[1]["yaxis.range"][1] == pytest.approx(1.05 * (d / 2 + 1) / 2)
    _steps_differ(fig, "y", 1)
    assert fig.layout.updatemenus[0].buttons[0].label == "base 10 000"  # the usual base is shown first


@pytest.mark.parametrize(
    "build", [rope_rotation_figure, rope_angle_figure, rope_score_matrix_figure, rope_decay_figure]
)
def test_figures_are_deterministic_and_labelled(build) -> None:
    a, b = build(), build()
    assert pio.to_json(a) == pio.to_json(b)
    layout = json.loads(a.to_json())["layout"]
    assert a.layout.sliders[0].currentvalue.prefix
    assert 400 <= layout["height"] <= 700
    assert "$" not in a.to_json()  # no MathJax inside Plotly (the page typesets with CHTML)
    steps = layout["sliders"][0]["steps"]
    assert 2 <= len(steps) <= 20
    assert all(step["args"][1].get("title.text") for step in steps)  # every state names itself


def test_base_label() -> None:
    assert base_label(10000.0) == "10 000" and base_label(500000) == "500 000" and base_label(31.6227) == "31.6"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: rope_rotation_figure(dim=8, pairs=(4,)), r"pairs must be .* in \[0, 3\]"),
        (lambda: rope_rotation_figure(dim=8, pairs=(0,), positions=[3]), "at least 2 positions"),
        (lambda: rope_rotation_figure(torch.randn(6), dim=8, pairs=(0,)), r"q must be a tensor of shape \[8\]"),
        (lambda: rope_angle_figure(positions=(0, 1)), "all > 0"),
        (lambda: rope_angle_figure(bases=()), "bases must not be empty"),
        (lambda: rope_score_matrix_figure(length=1), "length must be an integer >= 2"),
        (lambda: rope_decay_figure(max_distance=0), "max_distance must be an integer >= 1"),
        (lambda: rope_decay_figure(dims=(7,)), "dim must be a positive even integer"),
    ],
)
def test_bad_arguments(call, message) -> None:
    with pytest.raises(ValueError, match=message):
        call()
