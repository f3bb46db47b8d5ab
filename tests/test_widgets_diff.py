"""posviz.widgets._diff: the part of an explorer's update that changes its figure, and an update
merged as Plotly merges it (tests/test_widgets.py: an explorer that hands Plotly only that part)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from posviz.widgets._diff import _changes, _merged, _same


def test_changes_keep_only_what_differs() -> None:
    held = {"x": np.array([0.0, np.nan]), "marker": {"color": "red", "size": 4}, "name": "a", "n": 1,
            "annotations": [{"text": "a"}, {"text": "b"}]}  # fmt: skip
    same = {"x": np.array([0.0, np.nan]), "marker": {"color": "red"}, "name": "a",
            "annotations": [{"text": "a"}, {"text": "b"}]}  # fmt: skip
    assert _changes(held, same) == {}
    update = {"x": [0.0, 1.0], "marker": {"color": "red", "size": 5}, "n": 1.0, "new": None,
              "annotations": [{"text": "a"}, {"text": "c"}]}  # fmt: skip
    assert _changes(held, update) == {
        "x": [0.0, 1.0],  # an array, whole
        "marker": {"size": 5},  # a nested object, key by key
        "n": 1.0,  # a float where an int was: not the same value for Plotly
        "new": None,
        "annotations": [{"text": "a"}, {"text": "c"}],  # a list of objects, whole
    }


_VALUES = st.one_of(
    st.integers(-3, 3), st.floats(allow_nan=True, allow_infinity=False, width=32), st.text(max_size=2), st.none(),
    st.lists(st.integers(0, 2), max_size=3), st.lists(st.floats(allow_nan=True, width=16), max_size=3).map(np.array),
)  # fmt: skip
_OBJECTS = st.recursive(
    st.dictionaries(st.sampled_from("abcd"), _VALUES, max_size=4),
    lambda inner: st.dictionaries(st.sampled_from("abcd"), st.one_of(_VALUES, inner), max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_OBJECTS, _OBJECTS)
def test_applying_the_changes_gives_what_applying_the_update_gives(held: dict, update: dict) -> None:
    assert _same(_merged(held, _changes(held, update)), _merged(held, update))
