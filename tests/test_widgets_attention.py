"""posviz.widgets.attention: the explorer recomputes with posviz and never raises (no frontend)."""

from __future__ import annotations

import numpy as np
import pytest

from posviz.widgets import Explorer
from posviz.widgets.attention import attention_explorer, attention_state


def _z(box: Explorer) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(box.figure.data[0].z, dtype=float), np.asarray(box.figure.data[1].z, dtype=float)


def test_the_explorer_builds_with_the_initial_state() -> None:
    box = attention_explorer(length=10, dim=8, method="none")
    assert isinstance(box, Explorer) and box.status.value == ""
    assert set(box.controls) == {"length", "dim", "seed", "temperature", "method", "base", "slope"}
    weights, diff = _z(box)
    state = attention_state(10, 8, 0, 1.0, "none", 1e4, 0.5)
    np.testing.assert_allclose(weights, state.weights.numpy(), rtol=1e-6)
    np.testing.assert_allclose(diff, state.difference.numpy())
    assert box.figure.data[2].value == pytest.approx(state.gap) and state.gap < 1e-5
    assert box.controls["base"].disabled and box.controls["slope"].disabled


@pytest.mark.parametrize(
    ("name", "value", "method"),
    [
        ("length", 20, "none"),
        ("dim", 32, "none"),
        ("seed", 5, "none"),
        ("temperature", 0.2, "none"),
        ("method", "sinusoidal", "none"),
        ("method", "rope", "none"),
        ("method", "alibi", "none"),
        ("base", 100.0, "sinusoidal"),
        ("base", 100.0, "rope"),
        ("slope", 2.0**-4, "alibi"),
    ],
)
def test_each_control_changes_the_figure(name: str, value: object, method: str) -> None:
    box = attention_explorer(method=method)
    before = [*_z(box), box.figure.data[2].title.text]
    box.controls[name].value = value
    assert box.status.value == ""
    after = [*_z(box), box.figure.data[2].title.text]
    changed = [a.shape != b.shape or not np.allclose(a, b) for a, b in zip(before[:2], after[:2])]
    assert any(changed) and before[2] != after[2]
    values = {n: c.value for n, c in box.controls.items()}
    np.testing.assert_allclose(after[0], attention_state(**values).weights.numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    ("method", "base_used", "slope_used"), [("sinusoidal", True, False), ("rope", True, False), ("alibi", False, True)]
)
def test_position_makes_the_shuffle_visible(method: str, base_used: bool, slope_used: bool) -> None:
    box = attention_explorer(method="none")
    assert box.figure.data[2].value < 1e-5
    box.controls["method"].value = method
    assert box.figure.data[2].value > 1e-2
    assert box.controls["base"].disabled is not base_used and box.controls["slope"].disabled is not slope_used
    box.controls["method"].value = "none"
    assert box.controls["base"].disabled and box.controls["slope"].disabled


@pytest.mark.parametrize(
    "values",
    [
        {"length": 1},
        {"length": 128, "dim": 256},
        {"dim": 2},
        {"temperature": 10**-1.3},
        {"temperature": 10**1.3},
        {"method": "sinusoidal", "base": 1.0},
        {"method": "sinusoidal", "base": 1e6, "length": 128},
        {"method": "rope", "base": 1.0, "length": 128},
        {"method": "alibi", "slope": 2.0, "length": 128},
        {"method": "alibi", "slope": 2.0**-8},
    ],
)
def test_extreme_but_valid_values_give_a_picture(values: dict) -> None:
    box = attention_explorer()
    for name, value in values.items():
        box.controls[name].value = value
    assert box.status.value == ""
    weights, diff = _z(box)
    length = box.controls["length"].value
    assert weights.shape == (length, length) and np.isfinite(weights).all() and np.isfinite(diff).all()
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-5)


def test_a_bad_value_shows_a_message_and_keeps_the_picture() -> None:
    box = attention_explorer(method="sinusoidal", dim=16)
    before = _z(box)
    box.controls["dim"].value = 7  # odd: the sinusoidal table needs (sin, cos) pairs
    assert "ValueError" in box.status.value and "dim must be a positive even integer" in box.status.value
    np.testing.assert_array_equal(_z(box)[1], before[1])
    box.controls["method"].value = "rope"  # RoPE needs pairs too
    assert "dim" in box.status.value and "even" in box.status.value
    box.controls["method"].value = "alibi"  # an odd d is fine with a bias or without position
    assert box.status.value == "" and _z(box)[1].shape == (12, 7)


@pytest.mark.parametrize(
    ("kwargs", "err", "msg"),
    [
        ({"temperature": 0.0}, ValueError, "temperature must be a finite number > 0"),
        ({"method": "learned"}, ValueError, "method must be one of"),
        ({"length": 0}, ValueError, r"length must be in \[1, 512\]"),
        ({"method": "alibi", "slope": -0.5}, ValueError, r"alibi_slope: slopes must be finite and >= 0"),
    ],
)
def test_attention_state_bad_arguments(kwargs: dict, err: type, msg: str) -> None:
    values = {"length": 4, "dim": 4, "seed": 0, "temperature": 1.0, "method": "none", "base": 1e4, "slope": 0.5}
    values.update(kwargs)
    with pytest.raises(err, match=msg):
        attention_state(**values)


def test_alibi_slope_zero_is_attention_without_position() -> None:
    """The explorer takes the slopes posviz.alibi.check_slopes takes: 0 is no bias at all."""
    values = {"length": 6, "dim": 4, "seed": 3, "temperature": 1.0, "base": 1e4}
    none = attention_state(method="none", slope=0.5, **values)
    flat = attention_state(method="alibi", slope=0.0, **values)
    tilted = attention_state(method="alibi", slope=0.5, **values)
    np.testing.assert_allclose(np.asarray(flat.weights), np.asarray(none.weights), rtol=0, atol=0)
    assert not np.allclose(np.asarray(tilted.weights), np.asarray(none.weights))
