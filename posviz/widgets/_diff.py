"""What an explorer's update changes in its figure (posviz.widgets): the part of an update that
differs from what the figure holds (:func:`_changes`), and an update merged as Plotly merges it
(:func:`_merged`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np


def _merged(base: dict[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` updated as Plotly updates a figure: nested properties merged, others replaced."""
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def _same(a: object, b: object) -> bool:
    """``a`` and ``b`` are the same value as Plotly stores it (arrays element by element, NaN
    equal to NaN; an int is not a float); when unsure, not the same."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype.kind != b.dtype.kind:
            return False
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:  # a value whose == is no boolean
        return False


_MISSING = object()


def _changes(held: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """The part of ``update`` that changes ``held``: nested objects (``layout.xaxis``, a trace's
    ``marker``) compared key by key, anything else (an array, a list of annotations) whole.
    Merged into ``held`` (:func:`_merged`), it gives what ``update`` gives."""
    out: dict[str, Any] = {}
    for key, value in update.items():
        old = held.get(key, _MISSING)
        if isinstance(value, Mapping) and isinstance(old, Mapping):
            inner = _changes(old, value)
            if inner:
                out[key] = inner
        elif not _same(old, value):
            out[key] = value
    return out
