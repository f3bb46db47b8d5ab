"""posviz.widgets.alibi: every control redraws, extremes give a picture, bad values give a message."""

from __future__ import annotations

import math
import statistics
import time

import numpy as np
import pytest
import torch

import posviz
from posviz.alibi import alibi_distance_weights, alibi_effective_window
from posviz.widgets import Explorer
from posviz.widgets.alibi import MAX_LENGTH, alibi_explorer


def _snapshot(box: Explorer) -> list:
    return [
        np.nan_to_num(np.asarray(box.figure.data[0].z, dtype=float), nan=99.0).tolist(),
        np.asarray(box.figure.data[2].y, dtype=float).tolist(),
        list(box.figure.data[3].x),
        box.figure.data[2].name,
        box.figure.data[0].colorbar.title.text,
        list(box.figure.data[1].y),
    ]


def test_builds_with_the_posviz_numbers():
    box = alibi_explorer(num_heads=8, head=4, length=100)
    assert isinstance(box, Explorer) and box.status.value == ""
    assert set(box.controls) == {"num_heads", "head", "length", "scale"}
    m = posviz.alibi_slopes(8, device="cpu", dtype=torch.float64)[3]  # 1/16
    np.testing.assert_allclose(box.figure.data[2].y, alibi_distance_weights(m, 100).numpy())
    w = int(alibi_effective_window(m, 0.9, 100))
    assert list(box.figure.data[3].x) == [w, w] and f"w = {w}" in box.figure.data[3].name
    bias = np.asarray(box.figure.data[0].z, dtype=float)
    assert bias.shape == (24, 24) and bias[5, 2] == pytest.approx(-3 / 16) and np.isnan(bias[2, 5])


@pytest.mark.parametrize(("name", "value"), [("num_heads", 16), ("head", 1), ("length", 40), ("scale", 4.0)])
def test_each_control_changes_the_figure(name, value):
    box = alibi_explorer()
    before = _snapshot(box)
    box.controls[name].value = value
    assert box.status.value == "", box.status.value
    assert _snapshot(box) != before


def test_twelve_heads_start_with_the_eight_head_slopes():
    box = alibi_explorer(num_heads=8, head=4)
    y = list(box.figure.data[2].y)
    box.controls["num_heads"].value = 12
    assert list(box.figure.data[2].y) == y  # heads 1-8 of 12 are the 8-head slopes ...
    assert box.figure.data[0].colorbar.title.text == "bias, head 4 of 12"  # ... but the title follows
    assert box.figure.data[1].name == "the other 11 heads"  # ... and so do the other heads' curves


@pytest.mark.parametrize("heads", [9, 7, 16, 1])
def test_one_head_more_or_less_changes_the_curves(heads):
    """Head 4 of 8 keeps its slope at 7 or 9 heads: the grey curves of the other heads show the change."""
    box = alibi_explorer(num_heads=8, head=4, length=256)
    before = (list(box.figure.data[1].x), list(box.figure.data[1].y))
    box.controls["num_heads"].value = heads
    assert box.status.value == ""
    others = [float(m) for k, m in enumerate(posviz.alibi_slopes(heads, dtype=torch.float64)) if k != min(4, heads) - 1]
    assert box.figure.data[1].visible is bool(others)
    if others:
        assert (list(box.figure.data[1].x), list(box.figure.data[1].y)) != before
        starts = [y for y, previous in zip(box.figure.data[1].y, [None, *box.figure.data[1].y]) if previous is None]
        starts = [y for y in starts if y is not None]  # each curve's a(0)
        expected = alibi_distance_weights(torch.tensor(others, dtype=torch.float64), 256)[:, 0].tolist()
        assert starts == pytest.approx(expected)


def test_head_slider_follows_the_number_of_heads():
    box = alibi_explorer(num_heads=8, head=8)
    box.controls["num_heads"].value = 3
    assert box.controls["head"].max == 3 and box.controls["head"].value == 3
    assert box.status.value == ""
    # 3 heads: slopes 1/16, 1/256, 1/4 (the authors' rule); head 3 is 1/4
    assert "1/4" in box.figure.data[2].name


@pytest.mark.parametrize(
    "values",
    [
        {"num_heads": 1, "head": 1, "length": 1},
        {"length": 1, "scale": 2.0**-6},
        {"num_heads": 64, "head": 64, "length": 4096, "scale": 16.0},
        {"length": 2, "scale": 16.0},
    ],
)
def test_extreme_but_valid_values_give_a_picture(values):
    box = alibi_explorer()
    for name, value in values.items():
        box.controls[name].value = value
    assert box.status.value == "", box.status.value
    length = box.controls["length"].value
    y = np.asarray(box.figure.data[2].y, dtype=float)
    assert y.shape == (length,) and np.all(np.isfinite(y)) and y.sum() == pytest.approx(1.0)
    w = box.figure.data[3].x[0]
    assert 0 <= w <= length - 1


def test_bad_values_show_a_message_and_keep_the_last_figure():
    box = alibi_explorer()
    before = _snapshot(box)
    box.controls["length"].max = MAX_LENGTH + 10
    box.controls["length"].value = MAX_LENGTH + 1
    assert "ValueError" in box.status.value and "length must be" in box.status.value
    assert _snapshot(box) == before
    box.controls["length"].value = 64  # recovers, and the message goes away
    assert box.status.value == "" and len(box.figure.data[2].y) == 64
    # a zero slope (below the log slider's range) is still a picture: uniform weights
    assert box.update(num_heads=8, head=1, length=10, scale=0.0)[2]["y"].tolist() == pytest.approx([0.1] * 10)
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="slope scale must be a finite number >= 0"):
            box.update(num_heads=8, head=1, length=10, scale=bad)


@pytest.mark.slow
def test_an_update_is_fast():
    box = alibi_explorer()
    times = []
    for value in [256, 512, 1024, 2048, 512, 128] * 3:
        start = time.perf_counter()
        box.controls["length"].value = value
        times.append(time.perf_counter() - start)
    assert statistics.median(times) < 0.2  # 50 ms on the authors' machine; loose for shared CI
