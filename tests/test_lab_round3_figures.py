"""posviz.lab.round3_figures: FIRE's input against the distance, a slider over the query."""

from __future__ import annotations

import math

import pytest
import torch

from posviz.distance_bias import fire_normalized_distance
from posviz.lab.round3_figures import fire_input_figure


def _steps(fig):
    return fig.layout.sliders[0].steps


def test_every_step_draws_fire_input_for_its_query_and_the_unnormalised_log_distance():
    queries = (8, 63, 200, 1023)
    fig = fire_input_figure(64, threshold=16.0, c=0.1, queries=queries)
    assert len(_steps(fig)) == len(queries)
    u = fire_normalized_distance(1024, c=0.1, threshold=16.0, eps=0.0, dtype=torch.float64)
    for step, i in zip(_steps(fig), queries):
        data = step.args[0]
        fire_x, fire_y = data["x"][0], data["y"][0]
        raw_y = data["y"][1]
        assert list(fire_x) == list(range(i + 1))
        assert fire_y == pytest.approx([u[i, i - r].item() for r in range(i + 1)])  # u(i, i - r)
        assert raw_y == pytest.approx([math.log(0.1 * r + 1) / math.log(0.1 * 63 + 1) for r in range(i + 1)])
        assert max(fire_y) <= 1 + 1e-12  # progressive interpolation: inside the training range
        assert (max(raw_y) > 1.01) == (i > 63)  # the raw distance leaves it past the training length
        assert str(i) in step.args[1]["title.text"]


def test_the_slider_changes_the_drawing():
    fig = fire_input_figure(64)
    ys = [tuple(step.args[0]["y"][1]) for step in _steps(fig)]
    assert len(set(ys)) == len(ys)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"train_len": 1}, "train_len"),
        ({"threshold": 0.0}, "threshold"),
        ({"c": -1.0}, "c"),
        ({"queries": ()}, "queries"),
        ({"queries": (4, 0)}, "queries"),
    ],
)
def test_bad_input_names_the_argument(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        fire_input_figure(**kwargs)
