"""posviz.widgets.rope: the RoPE explorer recomputes from every control and never raises."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import posviz
from posviz.widgets import Explorer
from posviz.widgets.rope import rope_explorer


def _data(box: Explorer) -> str:
    return json.dumps([trace.to_plotly_json() for trace in box.figure.data], sort_keys=True, default=str)


def test_explorer_builds_with_every_control() -> None:
    box = rope_explorer()
    assert isinstance(box, Explorer)
    assert set(box.controls) == {"dim", "base", "length", "position", "offset", "layout"}
    assert box.status.value == ""
    heatmap = box.figure.data[4]
    assert np.asarray(heatmap.z).shape == (48, 48)


@pytest.mark.parametrize(
    ("name", "value"),
    [("dim", 32), ("base", 100.0), ("length", 20), ("position", 30), ("offset", 9), ("layout", "half")],
)
def test_each_control_changes_the_figure(name: str, value: object) -> None:
    box = rope_explorer()
    before = _data(box)
    box.controls[name].value = value
    assert box.status.value == "", box.status.value
    assert _data(box) != before


def test_scores_come_from_rope_scores() -> None:
    box = rope_explorer()
    box.controls["length"].value = 10
    box.controls["layout"].value = "half"
    z = np.asarray(box.figure.data[4].z)
    assert len(box.figure.data[1].x) == len(box.figure.data[2].x) == 9  # 3 arrows: origin, tip, gap
    from posviz.plots.rope import _unit_pairs  # the explorer's seeded vectors (pairs of length 1)

    qv, kv = _unit_pairs(64, 0, 0, "interleaved"), _unit_pairs(64, 0, 1, "interleaved")
    expected = posviz.rope.rope_scores(qv.expand(10, 64), kv.expand(10, 64), layout="half")
    np.testing.assert_allclose(z, expected.numpy(), atol=1e-12)
    bound = np.asarray(box.figure.data[6].y)
    np.testing.assert_allclose(bound, posviz.rope_mean_partial_sum(torch.arange(10.0, dtype=torch.float64), 64).numpy())


def test_query_and_key_arrows_follow_m_and_n() -> None:
    box = rope_explorer(position=7, offset=3)
    q_tip = complex(box.figure.data[1].x[1], box.figure.data[1].y[1])
    k_tip = complex(box.figure.data[2].x[1], box.figure.data[2].y[1])
    from posviz.plots.rope import _unit_pairs

    rq = posviz.apply_rope(_unit_pairs(64, 0, 0, "interleaved")[None], torch.tensor([7.0]))[0]
    rk = posviz.apply_rope(_unit_pairs(64, 0, 1, "interleaved")[None], torch.tensor([4.0]))[0]
    assert q_tip == pytest.approx(complex(rq[0], rq[1])) and k_tip == pytest.approx(complex(rk[0], rk[1]))
    assert list(box.figure.data[5].x) == [4] and list(box.figure.data[5].y) == [7]  # the marked cell (m, n)


def test_a_bad_value_shows_a_message_and_keeps_the_figure() -> None:
    box = rope_explorer()
    before = _data(box)
    box.controls["dim"].value = 7  # odd: typed into the slider's box
    assert "ValueError" in box.status.value and "even" in box.status.value
    assert _data(box) == before
    box.controls["dim"].value = 8
    assert box.status.value == "" and _data(box) != before


@pytest.mark.parametrize(
    "values",
    [
        {"dim": 2},
        {"base": 1.0},
        {"base": 1e7},
        {"length": 2},
        {"length": 256, "dim": 256},
        {"position": 4096},
        {"offset": -256},
        {"offset": 256, "length": 2},
        {"position": 0, "offset": 5},
    ],
)
def test_extreme_but_valid_values_give_a_picture(values: dict) -> None:
    box = rope_explorer()
    for name, value in values.items():
        box.controls[name].value = value
    assert box.status.value == "", box.status.value
    z = np.asarray(box.figure.data[4].z)
    assert z.shape == (box.controls["length"].value,) * 2 and np.isfinite(z).all()
    bound = np.asarray(box.figure.data[6].y, dtype=float)
    assert np.isfinite(bound).all() and len(bound) >= 2
    for arrows in box.figure.data[1:3]:
        assert all(v is None or np.isfinite(v) for v in arrows.x)


def test_a_cell_outside_the_matrix_is_not_marked() -> None:
    box = rope_explorer(position=0, offset=5)  # the key would sit at n = -5
    assert list(box.figure.data[5].x) == [] and box.status.value == ""
