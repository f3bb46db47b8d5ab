"""posviz.widgets.relative: every control redraws; bad settings give a message, never an exception."""

from __future__ import annotations

import numpy as np
import pytest

import posviz
from posviz.widgets import Explorer
from posviz.widgets.relative import relative_explorer


@pytest.fixture
def box() -> Explorer:
    return relative_explorer()


def _z(box: Explorer) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(box.figure.data[0].z), np.asarray(box.figure.data[1].z)


def test_builds_with_posviz_numbers(box):
    assert set(box.controls) == {"length", "rmin", "rmax", "num_buckets", "max_distance", "bidirectional"}
    assert box.status.value == ""
    r, buckets = _z(box)
    np.testing.assert_array_equal(r, posviz.relative_positions(32, max_distance=(-8, 8)).numpy())
    expected = posviz.t5_relative_bucket(-posviz.relative_positions(32), num_buckets=32, max_distance=128)
    np.testing.assert_array_equal(buckets, expected.numpy())


@pytest.mark.parametrize(
    ("name", "value", "changes"),
    [
        ("length", 20, (0, 1)),
        ("rmin", -3, (0,)),
        ("rmax", 2, (0,)),
        ("num_buckets", 8, (1,)),
        ("max_distance", 9, (1,)),
        ("bidirectional", False, (1,)),
    ],
)
def test_each_control_redraws(box, name, value, changes):
    before = _z(box)
    box.controls[name].value = value
    assert box.status.value == ""
    after = _z(box)
    for i in changes:
        assert before[i].shape != after[i].shape or not np.array_equal(before[i], after[i]), (name, i)


def test_rmin_rmax_clip_asymmetrically(box):
    box.controls["rmin"].value = -2
    box.controls["rmax"].value = 5
    r, _ = _z(box)
    assert r.min() == -2 and r.max() == 5
    assert box.figure.data[0].zmin == -5 and box.figure.data[0].zmax == 5  # 0 stays white


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"max_distance": 8}, "max_distance must be &gt; the number of exact buckets"),
        ({"num_buckets": 2}, "num_buckets must be &gt;= 4"),
        ({"bidirectional": False, "num_buckets": 40, "max_distance": 10}, "exact buckets"),
    ],
)
def test_invalid_t5_settings_show_a_message_and_keep_the_picture(box, settings, message):
    *first, (last_name, last_value) = settings.items()
    for name, value in first:  # valid on their own
        box.controls[name].value = value
    assert box.status.value == ""
    before = _z(box)
    box.controls[last_name].value = last_value
    assert message in box.status.value
    np.testing.assert_array_equal(_z(box)[1], before[1])
    box.controls["max_distance"].value = 500  # a valid setting again: the message goes away
    box.controls["num_buckets"].value = 32
    assert box.status.value == ""


@pytest.mark.parametrize(
    "settings",
    [
        {"length": 1},
        {"length": 256},
        {"rmin": 0, "rmax": 0},
        {"rmin": -64, "rmax": 64},
        {"bidirectional": False, "num_buckets": 2, "max_distance": 2},
        {"num_buckets": 128, "max_distance": 1024},
        {"num_buckets": 4, "max_distance": 2},
    ],
)
def test_extreme_but_valid_settings_draw_a_picture(box, settings):
    for name, value in settings.items():
        box.controls[name].value = value
    assert box.status.value == ""
    r, buckets = _z(box)
    length = box.controls["length"].value
    assert r.shape == buckets.shape == (length, length)
    assert buckets.min() >= 0 and buckets.max() < box.controls["num_buckets"].value
