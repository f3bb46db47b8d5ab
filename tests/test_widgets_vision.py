"""posviz.widgets.vision: the patch explorer recomputes from every control and never raises."""

from __future__ import annotations

import json

import numpy as np
import pytest

from posviz.plots.vision import patch_similarity
from posviz.widgets import Explorer
from posviz.widgets.vision import vision_explorer, vision_state


def _data(box: Explorer) -> str:
    return json.dumps([trace.to_plotly_json() for trace in box.figure.data], sort_keys=True, default=str)


def test_explorer_builds_with_every_control() -> None:
    box = vision_explorer(grid=10, row=3, col=4)
    assert isinstance(box, Explorer)
    assert set(box.controls) == {"method", "grid", "train_grid", "row", "col"}
    assert box.status.value == ""
    assert np.asarray(box.figure.data[0].z).shape == (10, 10)
    assert (list(box.figure.data[1].x), list(box.figure.data[1].y)) == ([4], [3])


@pytest.mark.parametrize(
    ("name", "value"), [("method", "swin-bias"), ("grid", 12), ("train_grid", 4), ("row", 2), ("col", 9)]
)
def test_each_control_changes_the_figure(name: str, value: object) -> None:
    box = vision_explorer(method="learned", grid=10, train_grid=6, row=5, col=5)
    before = _data(box)
    box.controls[name].value = value
    assert box.status.value == "", box.status.value
    assert _data(box) != before


def test_drawn_numbers_are_patch_similarity() -> None:
    box = vision_explorer(method="rope-axial", grid=9, train_grid=4, row=2, col=7)
    expected = patch_similarity("rope-axial", 9, train_grid=4)[2 * 9 + 7].reshape(9, 9)
    np.testing.assert_allclose(np.asarray(box.figure.data[0].z), expected.numpy(), atol=1e-4)
    (shape,) = box.figure.layout.shapes  # the training grid outlined
    assert (shape.x1, shape.y1, shape.visible) == (3.5, 3.5, True)
    box.controls["col"].value = 1
    box.controls["grid"].value = 4
    assert box.status.value == ""
    assert box.figure.layout.shapes[0].visible is False  # not past the training grid: no outline


def test_a_bad_value_shows_a_message_and_keeps_the_figure() -> None:
    box = vision_explorer(grid=8, row=7, col=7)
    before = _data(box)
    box.controls["grid"].value = 5  # row 7 is now outside the grid
    assert "row must be in [0, 4]" in box.status.value
    assert _data(box) == before
    box.controls["row"].value = 1
    box.controls["col"].value = 1
    assert box.status.value == ""
    with pytest.raises(ValueError, match="method must be one of"):
        vision_explorer(method="nope")
    with pytest.raises(ValueError, match="col"):
        vision_state("sincos-2d", 4, 4, 0, 4)
