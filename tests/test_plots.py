"""posviz.plots: slider figures hold every state and switch with Plotly's ``update``."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
import torch

from posviz.plots import heatmap_trace, slider_figure


def _steps(n: int = 3) -> list[tuple[str, list[go.Scatter], dict[str, str]]]:
    return [(f"k={k}", [go.Scatter(y=[k, k + 1]), go.Bar(y=[10 * k])], {"title.text": f"step {k}"}) for k in range(n)]


def test_initial_state_is_the_active_step() -> None:
    fig = slider_figure(_steps(), slider_label="k", active=1)
    assert list(fig.data[0].y) == [1, 2] and list(fig.data[1].y) == [10]
    assert fig.layout.title.text == "step 1"
    (slider,) = fig.layout.sliders
    assert slider.active == 1
    assert slider.currentvalue.prefix == "k: "
    assert [step.label for step in slider.steps] == ["k=0", "k=1", "k=2"]


def test_each_step_updates_every_trace_and_its_layout() -> None:
    fig = slider_figure(_steps(), slider_label="k")
    step = fig.layout.sliders[0].steps[2]
    assert step.method == "update"
    data, layout = step.args
    assert [list(y) for y in data["y"]] == [[2, 3], [20]]
    assert "type" not in data and "visible" not in data
    assert layout == {"title.text": "step 2"}
    assert not fig.frames  # nothing to auto-play in any renderer


def test_traces_can_be_computed_lazily() -> None:
    fig = slider_figure([("a", lambda: [go.Scatter(y=[1])]), ("b", lambda: [go.Scatter(y=[2])])], slider_label="s")
    assert list(fig.data[0].y) == [1]
    assert [list(y) for y in fig.layout.sliders[0].steps[1].args[0]["y"]] == [[2]]


def test_a_property_missing_from_a_step_is_reset() -> None:
    fig = slider_figure([("a", [go.Scatter(y=[1], name="first")]), ("b", [go.Scatter(y=[2])])], slider_label="s")
    assert fig.layout.sliders[0].steps[1].args[0]["name"] == [None]


def test_views_are_a_second_independent_control() -> None:
    fig = slider_figure(_steps(), slider_label="k", views=[("line", [0]), ("bars", [1]), ("both", [0, 1])])
    assert [trace.visible for trace in fig.data] == [True, False]
    (menu,) = fig.layout.updatemenus
    assert [b.label for b in menu.buttons] == ["line", "bars", "both"]
    assert [b.args[0]["visible"] for b in menu.buttons] == [[True, False], [False, True], [True, True]]
    assert all("visible" not in step.args[0] for step in fig.layout.sliders[0].steps)


def test_deterministic() -> None:
    assert pio.to_json(slider_figure(_steps(), slider_label="k")) == pio.to_json(
        slider_figure(_steps(), slider_label="k")
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"steps": []}, "must not be empty"),
        ({"steps": [("a", [go.Scatter()]), ("b", [])]}, "types"),
        ({"steps": [("a", [go.Scatter()]), ("b", [go.Bar()])]}, "types"),
        ({"steps": [("a", [go.Scatter()])], "active": 1}, "active"),
        ({"steps": [("a", [go.Scatter()])], "active": True}, "active"),
        ({"steps": [("a", [go.Scatter()])], "views": [("v", [1])]}, "names traces"),
        ({"steps": [("a",)]}, "must be"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        slider_figure(slider_label="x", **kwargs)


def test_heatmap_trace_takes_tensors() -> None:
    trace = heatmap_trace(torch.arange(6.0, requires_grad=True).reshape(2, 3))
    assert isinstance(trace, go.Heatmap)
    np.testing.assert_array_equal(trace.z, [[0, 1, 2], [3, 4, 5]])


def test_heatmap_trace_takes_bfloat16() -> None:
    np.testing.assert_array_equal(heatmap_trace(torch.ones(2, 2, dtype=torch.bfloat16)).z, np.ones((2, 2)))


def test_heatmap_trace_symmetric_scale_and_overrides() -> None:
    trace = heatmap_trace(np.eye(2), symmetric=True, zmin=-2)
    assert trace.zmid == 0 and trace.reversescale and trace.zmin == -2


def test_heatmap_trace_rejects_non_matrices() -> None:
    with pytest.raises(ValueError, match="2-D"):
        heatmap_trace(np.zeros(3))


def test_a_property_the_same_in_every_step_is_stored_once() -> None:
    steps = [(str(k), [go.Scatter(x=[0, 1, 2], y=[k, k, k], name="same", line={"color": "red"})]) for k in range(3)]
    fig = slider_figure(steps, slider_label="k")
    for step in fig.layout.sliders[0].steps:
        assert set(step.args[0]) == {"y"}  # x, name and line live in the trace only
    assert list(fig.data[0].x) == [0, 1, 2] and fig.data[0].name == "same"


def test_heatmap_trace_keeps_integers() -> None:
    assert np.asarray(heatmap_trace(np.ones((2, 2), dtype=np.int8)).z).dtype == np.int8
    assert np.asarray(heatmap_trace([[1, 2], [3, 4.5]]).z).dtype == np.float64
