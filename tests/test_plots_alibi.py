"""posviz.plots.alibi: the ALiBi chapter's figures hold the posviz numbers, and their controls change them."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

import posviz
from posviz.alibi import alibi_distance_weights, alibi_effective_window, alibi_window_mass
from posviz.plots.alibi import alibi_bias_figure, alibi_slopes_figure, alibi_window_figure, slope_label


def _step_data(fig, step: int) -> dict:
    """What slider step ``step`` writes into the traces (Plotly's ``update`` arguments)."""
    return fig.layout.sliders[0].steps[step].args[0]


def _as_array(value) -> np.ndarray:
    """Trace data as stored in a step: a list, an array or Plotly's base64 typed-array dict."""
    if isinstance(value, dict) and "bdata" in value:
        import base64

        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        return arr.reshape(value["shape"]) if "shape" in value else arr
    return np.asarray(value, dtype=float)


def _steps_differ(fig, key: str) -> None:
    steps = fig.layout.sliders[0].steps
    assert len(steps) >= 2
    first = json.dumps(_step_data(fig, 0)[key], default=str, sort_keys=True)
    assert any(json.dumps(_step_data(fig, s)[key], default=str, sort_keys=True) != first for s in range(1, len(steps)))


def test_slope_label():
    assert [slope_label(m) for m in (1.0, 0.5, 2**-8, 2**-2.5, 0.3, 0.0, 4.0)] == [
        "1",
        "1/2",
        "1/256",
        "2<sup>-2.5</sup>",
        "0.3",
        "0",
        "4",
    ]


def test_slopes_figure_holds_the_papers_slopes_and_windows():
    fig = alibi_slopes_figure(range(2, 17), active_heads=12)
    steps = fig.layout.sliders[0].steps
    assert len(steps) == 15 and fig.layout.sliders[0].active == 10 and steps[10].label == "12"
    _steps_differ(fig, "y")
    # the shown step (12 heads): 8 blue bars then 4 orange ones, the slopes of posviz.alibi_slopes(12)
    slopes = posviz.alibi_slopes(12, device="cpu", dtype=torch.float64).numpy()
    np.testing.assert_allclose(np.concatenate([fig.data[0].y, fig.data[1].y]), slopes)
    assert list(fig.data[0].x) == list(range(1, 9)) and list(fig.data[1].x) == list(range(9, 13))
    assert np.any(np.diff(np.concatenate([fig.data[0].y, fig.data[1].y])) > 0)  # not monotone
    windows = alibi_effective_window(torch.from_numpy(slopes), 0.9).numpy()
    np.testing.assert_allclose(np.concatenate([fig.data[2].y, fig.data[3].y]), windows)
    # step for 8 heads (index 6): all blue, 1/2 ... 1/256, no orange bar
    step = _step_data(fig, 6)
    np.testing.assert_allclose(_as_array(step["y"][0]), [2.0**-k for k in range(1, 9)])
    assert len(_as_array(step["y"][1])) == 0


def test_slopes_figure_views_switch_traces_and_axis():
    fig = alibi_slopes_figure()
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.args[0]["visible"] for b in buttons] == [[True, True, False, False], [False, False, True, True]]
    assert all(b.method == "update" for b in buttons)
    assert "slope" in buttons[0].args[1]["yaxis.title.text"] and "window" in buttons[1].args[1]["yaxis.title.text"]
    assert fig.layout.yaxis.type == "log" and "slope" in fig.layout.yaxis.title.text
    assert fig.layout.xaxis.title.text and "not monotone" in fig.layout.title.text


def test_slopes_figure_bad_arguments():
    with pytest.raises(ValueError, match="active_heads"):
        alibi_slopes_figure([8, 16], active_heads=12)
    with pytest.raises(ValueError, match="head_counts"):
        alibi_slopes_figure([])


def test_bias_figure_holds_the_bias_and_the_weights():
    fig = alibi_bias_figure(num_heads=8, length=10)
    assert len(fig.layout.sliders[0].steps) == 8 and len(fig.data) == 3
    _steps_differ(fig, "z")
    bias = posviz.alibi_bias(8, 10, device="cpu", dtype=torch.float64).numpy()
    future = np.triu(np.ones((10, 10), dtype=bool), k=1)
    for h in (0, 5):
        z = _as_array(_step_data(fig, h)["z"][0]).reshape(10, 10)
        np.testing.assert_allclose(z[~future], bias[h][~future])
        assert np.all(np.isnan(z[future]))
        # the m*j form: every row is mu_h * j
        z_code = _as_array(_step_data(fig, h)["z"][1]).reshape(10, 10)
        slope = float(posviz.alibi_slopes(8, device="cpu", dtype=torch.float64)[h])
        np.testing.assert_allclose(z_code[~future], (slope * np.arange(10)[None, :].repeat(10, 0))[~future])
    # weights: posviz.attention with zero q, k and the paper's bias, causal
    zeros = torch.zeros(8, 10, 2, dtype=torch.float64)
    weights = posviz.attention_weights(zeros, zeros, bias=torch.from_numpy(bias), causal=True).numpy()
    np.testing.assert_allclose(np.asarray(fig.data[2].z)[~future], weights[0][~future])
    assert "max |weights" in fig.layout.title.text
    assert fig.layout.updatemenus[0].buttons[0].label.startswith("bias")
    assert fig.data[0].colorbar.title.text == "bias" and fig.data[2].colorbar.title.text == "weight"


def test_window_figure_holds_weights_mass_and_window():
    lengths = (16, 300)
    fig = alibi_window_figure(num_heads=8, lengths=lengths, mass=0.9)
    assert len(fig.data) == 6 and len(fig.layout.sliders[0].steps) == 8
    _steps_differ(fig, "y")
    slopes = posviz.alibi_slopes(8, device="cpu", dtype=torch.float64)
    for h in (0, 7):
        step = _step_data(fig, h)
        for k, n in enumerate(lengths):
            # stored with 4 significant digits (weights below 1e-30, far off the axis, as 0)
            f32 = {"rtol": 5e-4, "atol": 1e-30}
            weights = alibi_distance_weights(slopes[h], n).numpy()
            np.testing.assert_allclose(_as_array(step["y"][3 * k]), weights, **f32)
            mass = alibi_window_mass(slopes[h], torch.arange(n), n).numpy()
            np.testing.assert_allclose(_as_array(step["y"][3 * k + 1]), mass, **f32)
            w = int(alibi_effective_window(slopes[h], 0.9, n))
            assert list(_as_array(step["x"][3 * k + 2])) == [w, w]
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == ["L = 16", "L = 300"]
    assert buttons[1].args[0]["visible"] == [False] * 3 + [True] * 3
    assert str(round(math.log(10) / 0.5, 1)) in fig.layout.title.text  # head 1: ln(10)/m = 4.6
    target = fig.layout.shapes[0]  # the line at the mass p sits in the bottom panel
    assert target.yref == "y2" and target.y0 == target.y1 == 0.9
