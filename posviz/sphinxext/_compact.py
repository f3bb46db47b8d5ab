"""A figure as the page stores it: every array in its shortest exact form, each large value once.

The page script (``static/figures.js``) expands both forms (:data:`COMPACT_KEYS`) before plotly.js
sees the figure.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

_DTYPES = {"i1": "<i1", "u1": "<u1", "i2": "<i2", "u2": "<u2", "i4": "<i4", "u4": "<u4", "f4": "<f4", "f8": "<f8"}
_INTS = (("i1", np.int8), ("i2", np.int16), ("i4", np.int32))
_POWERS = [10.0**d for d in range(23)]  # exact doubles, as the page script's table
_SAME_MIN = 120  # a value at least this long (JSON characters) that the figure already holds is a reference
COMPACT_KEYS = ("posviz_decimals", "posviz_same")
"""The two forms the page script (``figures.js``) expands before plotly.js sees a figure:
``{"posviz_decimals": d, "ints": <typed array>}`` (the numbers ``ints / 10**d``; ``d`` a number or
a typed array of one per value) and
``{"posviz_same": [path]}`` (the value already stored at ``path`` in ``{"data", "layout"}``)."""


def _json_len(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")))


def _numeric(value: Any) -> np.ndarray | None:
    """A trace array (a JSON list of numbers, 1-D or 2-D, or a plotly typed array) as float64."""
    if isinstance(value, Mapping) and set(value) <= {"dtype", "bdata", "shape"} and value.get("dtype") in _DTYPES:
        shape = [int(n) for n in str(value.get("shape", "")).split(",") if n.strip()]
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=_DTYPES[value["dtype"]])
        array = array.reshape(shape) if shape else array
        return array.astype(np.float64)
    if not (isinstance(value, list) and value):
        return None
    if not all(isinstance(v, (int, float, list)) and not isinstance(v, bool) for v in value):
        return None
    if any(isinstance(v, list) for v in value) and not all(
        isinstance(v, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v) for v in value
    ):
        return None
    try:
        array = np.asarray(value, dtype=np.float64)
    except ValueError:  # ragged
        return None
    if array.ndim not in (1, 2) or array.size == 0 or not np.isfinite(array).all():
        return None
    return array


def _typed(ints: np.ndarray) -> dict[str, str] | None:
    """Integers as a plotly typed array of the smallest integer type that holds them."""
    top = np.abs(ints).max(initial=0)
    for name, dtype in _INTS:
        if top <= np.iinfo(dtype).max:
            spec = {"dtype": name, "bdata": base64.b64encode(ints.astype(dtype).tobytes()).decode("ascii")}
            if ints.ndim == 2:
                spec["shape"] = f"{ints.shape[0]},{ints.shape[1]}"
            return spec
    return None


def _typed_float(array: np.ndarray) -> dict[str, str]:
    spec = {"dtype": "f8", "bdata": base64.b64encode(array.astype("<f8").tobytes()).decode("ascii")}
    if array.ndim == 2:
        spec["shape"] = f"{array.shape[0]},{array.shape[1]}"
    return spec


def _plain(array: np.ndarray) -> list:
    """A JSON list with integral values written as integers (``1`` rather than ``1.0``)."""
    return np.vectorize(lambda v: int(v) if v.is_integer() and abs(v) < 2**53 else float(v), otypes=[object])(
        array
    ).tolist()


def _shortest(value: Any) -> Any:
    """One array in its shortest exact form: a JSON list, a plotly typed array, or decimal integers.

    plotly.py stores every numpy array as base64 float64 (11 characters a number), and a rounded
    value such as 0.123 takes 6 characters in JSON; as ``round(v * 10**3)`` in an int16 typed
    array it takes 2.7, and the page script divides by ``10**3`` again, which gives back exactly
    the same double (IEEE division is correctly rounded, like JSON's parsing of ``0.123``). Only a
    form that decodes to the identical numbers is used. Plotly.js reads typed arrays in the data
    and in a slider step's ``update``.
    """
    array = _numeric(value)
    if array is None:
        return value
    candidates = [value, _plain(array), _typed_float(array)]
    # each value as an integer m and its number of decimals d (v == m / 10**d exactly)
    decimals = np.full(array.shape, -1, dtype=np.int64)
    ints = np.zeros(array.shape, dtype=np.int64)
    for d in range(len(_POWERS)):
        scale = _POWERS[d]
        with np.errstate(over="ignore", invalid="ignore"):
            k = np.round(array * scale)
            exact = (decimals < 0) & (np.abs(k) < 2**31) & (k / scale == array)
        decimals[exact], ints[exact] = d, k[exact]
        if (decimals >= 0).all():
            break
    if (decimals >= 0).all():
        spec = _typed(ints)
        if spec is not None:
            if not decimals.any():
                candidates.append(spec)
            else:
                same = decimals.max()
                exact_same = np.round(array * _POWERS[same])
                if np.abs(exact_same).max() < 2**31 and np.array_equal(exact_same / _POWERS[same], array):
                    one = _typed(exact_same.astype(np.int64))
                    if one is not None:
                        candidates.append({"posviz_decimals": int(same), "ints": one})
                candidates.append({"posviz_decimals": _typed(decimals), "ints": spec})
    return min(candidates, key=_json_len)


def _same(value: Any, path: list[Any], seen: dict[str, list[Any]]) -> Any:
    """``value`` with every large part that an earlier path holds already replaced by a reference."""
    if isinstance(value, (list, dict)):
        text = json.dumps(value, separators=(",", ":"), sort_keys=True)
        is_array = isinstance(value, list) or bool(set(value) & {"bdata", *COMPACT_KEYS})
        if is_array and len(text) >= _SAME_MIN:
            if text in seen:
                return {"posviz_same": seen[text]}
            seen[text] = path
        if isinstance(value, dict) and not (set(value) & {"bdata", *COMPACT_KEYS}):
            return {k: _same(v, [*path, k], seen) for k, v in value.items()}
        if isinstance(value, list):
            return [_same(v, [*path, i], seen) for i, v in enumerate(value)]
    return value


def compact_figure(fig: dict[str, Any]) -> dict[str, Any]:
    """The figure as the page stores it: every
    array in its shortest exact form, and each large value stored once (the page script expands
    the references). Round first (:func:`._rounding.round_to_shown`): :func:`compact_figure`
    keeps every number it is given."""
    for trace in fig.get("data") or []:
        if isinstance(trace, dict):
            for key, value in trace.items():
                trace[key] = _shortest(value)
    for slider in (fig.get("layout") or {}).get("sliders") or []:
        for step in slider.get("steps") or []:
            args = step.get("args") or []
            if step.get("method") in ("update", "restyle") and args and isinstance(args[0], dict):
                for key, values in args[0].items():
                    if isinstance(values, list):
                        args[0][key] = [_shortest(v) for v in values]
    seen: dict[str, list[Any]] = {}
    return {key: _same(fig[key], [key], seen) if key in ("data", "layout") else fig[key] for key in fig}
