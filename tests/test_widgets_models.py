"""posviz.widgets.models: the scaling explorer recomputes from every control and never raises."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from posviz import rope_frequencies
from posviz.plots.models import rule_frequencies
from posviz.widgets import Explorer
from posviz.widgets.models import models_explorer, scaling_state


def _data(box: Explorer) -> str:
    return json.dumps([trace.to_plotly_json() for trace in box.figure.data], sort_keys=True, default=str)


def test_explorer_builds_with_every_control() -> None:
    box = models_explorer()
    assert isinstance(box, Explorer)
    assert set(box.controls) == {"rule", "factor", "context", "base", "dim"}
    assert box.status.value == ""
    assert len(box.figure.data[0].x) == 64


@pytest.mark.parametrize(
    ("name", "value"), [("rule", "llama3"), ("factor", 32.0), ("context", 4096), ("base", 10000.0), ("dim", 64)]
)
def test_each_control_changes_the_figure(name: str, value: object) -> None:
    box = models_explorer()
    before = _data(box)
    box.controls[name].value = value
    assert box.status.value == "", box.status.value
    assert _data(box) != before


def test_drawn_numbers_are_the_rule_frequencies() -> None:
    box = models_explorer(rule="ntk", factor=4.0, context=4096, base=10000.0, dim=32)
    theta = rope_frequencies(32, 10000.0, device="cpu", dtype=torch.float64)
    expected = rule_frequencies("ntk", 32, 10000.0, 4.0, 4096) / theta
    np.testing.assert_allclose(np.asarray(box.figure.data[0].y), expected.numpy())
    np.testing.assert_allclose(np.asarray(box.figure.data[2].y), (2 * math.pi / theta).numpy())
    np.testing.assert_allclose(np.asarray(box.figure.data[5].y), [4 * 4096] * 2)
    assert "NTK" in box.figure.layout.title.text


def test_by_parts_rules_keep_the_count_of_turning_pairs() -> None:
    # llama3 and YaRN interpolate exactly the slow pairs, so lambda' <= sL iff lambda <= L; PI also
    for rule in ("pi", "llama3", "yarn"):
        state = scaling_state(rule, 8.0, 8192, 500000.0, 128)
        assert state["turned_scaled"] == state["turned"], rule
    ntk = scaling_state("ntk", 8.0, 8192, 500000.0, 128)
    assert ntk["turned_scaled"] + ntk["never_scaled"] == 64


def test_a_bad_value_shows_a_message_and_keeps_the_figure() -> None:
    box = models_explorer()
    before = _data(box)
    box.controls["dim"].value = 63
    assert "d must be an even integer" in box.status.value
    assert _data(box) == before
    box.controls["dim"].value = 64
    assert box.status.value == ""


def test_unknown_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="rule must be one of"):
        models_explorer(rule="longrope")
