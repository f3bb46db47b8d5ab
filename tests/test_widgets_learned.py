"""posviz.widgets.learned: the explorer builds, every control changes the figure, a bad value gives a message."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from posviz import sinusoidal_encoding
from posviz.learned import WindowMaxConfig, cosine_similarity_matrix, train_window_max
from posviz.widgets import Explorer
from posviz.widgets.learned import learned_explorer

CONFIG = WindowMaxConfig(steps=20, checkpoints=(0, 10, 20), probe=16)
GRID = {"max_lens": (8, 12), "dims": (4, 6), "seeds": (0, 1), "config": CONFIG, "max_len": 12, "dim": 6}


@pytest.fixture(scope="module")
def box() -> Explorer:
    return learned_explorer(**GRID)


def _snapshot(box: Explorer) -> list[np.ndarray]:
    return [np.asarray(trace.z, dtype=float) for trace in box.figure.data[:3]]


def _changed(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return any(x.shape != y.shape or not np.array_equal(x, y) for x, y in zip(a, b))


def test_builds_with_the_initial_values(box):
    assert isinstance(box, Explorer) and box.status.value == ""
    assert set(box.controls) == {"max_len", "dim", "seed", "step", "length", "base"}
    table, learned, sinusoidal = _snapshot(box)
    assert table.shape == (12, 6) and learned.shape == (12, 12) and sinusoidal.shape == (12, 12)
    # the middle panel is posviz's cosine similarity of the stored table, the right one the sinusoidal table's
    run = train_window_max(WindowMaxConfig(**{**CONFIG.__dict__, "max_len": 12, "dim": 6, "seed": 0}))
    np.testing.assert_allclose(learned, cosine_similarity_matrix(run.snapshots[-1].table).numpy(), atol=1e-6)
    np.testing.assert_allclose(
        sinusoidal, cosine_similarity_matrix(sinusoidal_encoding(12, 6, device="cpu")).numpy(), atol=1e-6
    )
    assert "step 20" in box.figure.data[3].text[0]


@pytest.mark.parametrize(
    ("name", "value"),
    [("step", 0), ("seed", 1), ("dim", 4), ("max_len", 8), ("length", 5), ("base", 10.0)],
)
def test_every_control_changes_the_figure(name, value):
    box = learned_explorer(**GRID)
    if name == "max_len":
        box.controls["length"].value = 8  # so that the smaller table can show every position asked for
    before = _snapshot(box)
    box.controls[name].value = value
    assert box.status.value == "", box.status.value
    assert _changed(before, _snapshot(box)), name


def test_positions_past_max_len_show_the_tables_error_and_keep_the_picture(box):
    box.controls["length"].value = 12
    before = _snapshot(box)
    box.controls["length"].value = 13  # the 12-row table has no row 12
    assert "IndexError" in box.status.value and "max_len=12" in box.status.value
    assert not _changed(before, _snapshot(box))
    box.controls["length"].value = 12  # back to a valid value: the message goes away
    assert box.status.value == ""


@pytest.mark.parametrize(
    ("settings"),
    [
        {"length": 1},
        {"base": 10.0},
        {"base": 1e6},
        {"step": 0},
        {"length": 8, "max_len": 8, "dim": 4},
    ],
)
def test_extreme_valid_values_give_a_picture(settings):
    box = learned_explorer(**GRID)
    for name, value in settings.items():
        box.controls[name].value = value
    assert box.status.value == ""
    table, learned, sinusoidal = _snapshot(box)
    assert np.isfinite(table).all() and np.isfinite(learned).all() and np.isfinite(sinusoidal).all()
    assert learned.shape == sinusoidal.shape == (box.controls["length"].value,) * 2


def test_step_zero_is_the_random_initial_table():
    box = learned_explorer(**GRID)
    box.controls["step"].value = 0
    table = _snapshot(box)[0]
    assert table.std() == pytest.approx(0.02, rel=0.4)


def test_reuses_given_runs():
    run = train_window_max(WindowMaxConfig(**{**CONFIG.__dict__, "max_len": 8, "dim": 4, "seed": 0}))
    with torch.no_grad():
        run.snapshots[-1].table.fill_(1.0)  # marks the run: the explorer must draw this one
    box = learned_explorer({(8, 4, 0): run}, max_lens=(8,), dims=(4,), seeds=(0,), config=CONFIG, max_len=8, dim=4)
    np.testing.assert_array_equal(_snapshot(box)[0], np.ones((8, 4)))


def test_bad_construction_arguments():
    with pytest.raises(ValueError, match="even"):
        learned_explorer(max_lens=(8,), dims=(3,), seeds=(0,), config=CONFIG, max_len=8, dim=3)
    with pytest.raises(ValueError, match="max_len"):
        learned_explorer(max_lens=(8,), dims=(4,), seeds=(0,), config=CONFIG, max_len=16, dim=4)
