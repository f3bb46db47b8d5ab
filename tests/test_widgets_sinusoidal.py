"""posviz.widgets.sinusoidal: every control recomputes the figure; bad values give a message."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import posviz
from posviz.widgets import Explorer
from posviz.widgets.sinusoidal import sinusoidal_explorer


@pytest.fixture
def box() -> Explorer:
    return sinusoidal_explorer(dim=16, base=10000.0, length=24, offset=5)


def _snapshot(box: Explorer) -> list[np.ndarray]:
    heat, curve, marks = box.figure.data
    return [np.asarray(heat.z), np.asarray(curve.y), np.asarray(marks.x), np.asarray(marks.y)]


def _changed(before: list[np.ndarray], after: list[np.ndarray]) -> bool:
    return any(a.shape != b.shape or not np.allclose(a, b) for a, b in zip(before, after))


def test_builds_with_the_posviz_numbers(box: Explorer) -> None:
    assert isinstance(box, Explorer) and box.status.value == ""
    assert set(box.controls) == {"dim", "base", "length", "offset"}
    heat, curve, marks = box.figure.data
    np.testing.assert_allclose(np.asarray(heat.z), posviz.sinusoidal_encoding(24, 16, device="cpu").numpy())
    k = torch.arange(-23, 24, dtype=torch.float64)
    np.testing.assert_allclose(np.asarray(curve.y), (posviz.sinusoidal_offset_similarity(k, 16) / 8).numpy())
    assert list(marks.x) == [-5, 5] and marks.y[0] == marks.y[1] == pytest.approx(curve.y[23 + 5])


@pytest.mark.parametrize(("name", "value"), [("dim", 32), ("base", 100.0), ("length", 40), ("offset", 11)])
def test_each_control_changes_the_figure(box: Explorer, name: str, value: object) -> None:
    before = _snapshot(box)
    box.controls[name].value = value
    assert box.status.value == ""
    assert _changed(before, _snapshot(box)), name


def test_values_follow_the_controls(box: Explorer) -> None:
    box.controls["base"].value = 100.0
    box.controls["dim"].value = 8
    box.controls["length"].value = 10
    np.testing.assert_allclose(
        np.asarray(box.figure.data[0].z), posviz.sinusoidal_encoding(10, 8, 100.0, device="cpu").numpy()
    )


def test_an_odd_dimension_shows_a_message_and_keeps_the_picture(box: Explorer) -> None:
    before = _snapshot(box)
    box.controls["dim"].value = 7  # the slider steps by 2, but code can set anything
    assert "ValueError" in box.status.value and "even" in box.status.value
    assert not _changed(before, _snapshot(box))
    box.controls["dim"].value = 8
    assert box.status.value == "" and np.asarray(box.figure.data[0].z).shape == (24, 8)


@pytest.mark.parametrize(
    "values",
    [
        {"dim": 2, "length": 1, "offset": 0},
        {"dim": 2, "length": 1, "offset": 1024, "base": 1e6},
        {"dim": 512, "length": 1024, "offset": 0, "base": 2.0},
    ],
)
def test_extreme_but_valid_values_give_a_picture(box: Explorer, values: dict) -> None:
    for name, value in values.items():
        box.controls[name].value = value
    assert box.status.value == ""
    heat, curve, marks = box.figure.data
    assert np.asarray(heat.z).shape == (values["length"], values["dim"])
    assert np.isfinite(np.asarray(curve.y)).all() and list(marks.x) == [-values["offset"], values["offset"]]
    assert np.asarray(curve.y).max() == pytest.approx(1.0)  # k = 0 is always drawn
