"""Figure values rounded to what the figure shows of them (its hover and text templates).

A value that a trace's hover shows as ``%{z:.3f}`` needs no more digits in the page than the ones
plotly.js shows; every template that shows it must show exactly what it showed before.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import numpy as np

from ._compact import _numeric, _plain

# d3-format as plotly.js uses it in hover and text templates: what a format shows of a number.
_FORMAT = re.compile(r"^(?:.?[<>=^])?[-+( ]?[$#]?0?\d*,?(?:\.(\d+))?~?([a-z%]?)$")
_TEMPLATE_FIELD = re.compile(r"%\{([A-Za-z_][\w.]*)(\[[^\]]*\])?(?::([^}]*))?\}")


def _shown(fmt: str | None) -> tuple[str, int] | None:
    """(kind, digits) that a d3 format shows: decimals ("f", "%": after scaling by 100) or
    significant digits ("sig"); ``None`` when it may show every digit."""
    if fmt is None:
        return None
    match = _FORMAT.match(fmt)
    if not match:
        return None
    precision, kind = match.groups()
    if kind == "" and precision is None:
        return None
    p = 6 if precision is None else int(precision)
    if kind == "f":
        return ("f", p)
    if kind == "%":
        return ("%", p)
    if kind == "e":
        return ("sig", p + 1)
    if kind in ("g", "r", "s", ""):
        return ("sig", max(p, 1))
    return None


def _formats(templates: list[Any], key: str) -> list[tuple[str, int]] | None:
    """Every way the templates show ``key``; ``None`` if one of them may show all its digits."""
    found = []
    for template in templates:
        if not isinstance(template, str):
            continue
        for name, index, fmt in _TEMPLATE_FIELD.findall(template):
            if name != key:
                continue
            shown = None if index else _shown(fmt or None)
            if shown is None:
                return None
            found.append(shown)
    return found


def _js_rounded(x: float, kind: str, digits: int) -> Decimal:
    """What ``toFixed`` / ``toPrecision`` keep of ``x``: its exact value rounded half away from zero."""
    if kind == "%":
        x = x * 100.0  # d3 scales first, in double precision
    exact = Decimal(x)
    if kind in ("f", "%"):
        return exact.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    if exact == 0:
        return exact
    return exact.quantize(Decimal(1).scaleb(exact.adjusted() - digits + 1), rounding=ROUND_HALF_UP)


def _round_shown(array: np.ndarray, formats: list[tuple[str, int]]) -> np.ndarray:
    """Each value rounded to what the finest of ``formats`` shows, where every format then shows
    exactly what it showed of the original value; any other value is kept as it is."""
    out = array.copy()
    flat, result = array.ravel(), out.ravel()
    finest = sorted(formats, key=lambda f: -f[1] if f[0] == "sig" else -(f[1] + (2 if f[0] == "%" else 0)))
    for i, x in enumerate(flat.tolist()):
        for kind, digits in finest:
            r = _js_rounded(x, kind, digits)
            candidate = float(r / 100 if kind == "%" else r)
            if candidate == x:
                break
            if all(_js_rounded(candidate, k, d) == _js_rounded(x, k, d) for k, d in formats):
                result[i] = candidate
                break
    return out


def _templates(trace: Mapping[str, Any], update: Mapping[str, Any], index: int) -> list[Any]:
    templates = []
    for key in ("hovertemplate", "texttemplate"):
        value = update[key][index] if isinstance(update.get(key), list) and index < len(update[key]) else None
        templates.append(value if value is not None else trace.get(key))
    return templates


def round_to_shown(fig: dict[str, Any]) -> None:
    """x, y and z rounded to what a trace's hover (and text) template shows of them (in place).

    Only where every template that shows a key gives it a fixed precision (``%{z:.3f}``,
    ``%{y:.4g}``) and the trace's hover is that template: a value shown with all its digits, or by
    plotly's default hover, is kept as it is.
    """
    data = [t for t in fig.get("data") or [] if isinstance(t, dict)]
    states: list[tuple[dict[str, Any], Mapping[str, Any]]] = [(trace, {}) for trace in data]  # (holder, update)
    for slider in (fig.get("layout") or {}).get("sliders") or []:
        for step in slider.get("steps") or []:
            args = step.get("args") or []
            if step.get("method") in ("update", "restyle") and len(args) in (1, 2) and isinstance(args[0], dict):
                states.append((args[0], args[0]))
    for holder, update in states:
        for key in ("x", "y", "z"):
            if update:
                values = holder.get(key)
                if not (isinstance(values, list) and len(values) == len(data)):
                    continue
                pairs = [(values, i, data[i], i) for i in range(len(data))]
            else:
                pairs = [(holder, key, holder, 0)] if key in holder else []
            for container, slot, trace, index in pairs:
                templates = _templates(trace, update, index)
                if not isinstance(templates[0], str):
                    continue  # plotly's default hover shows every digit
                formats = _formats(templates, key)
                if not formats:
                    continue
                array = _numeric(container[slot])
                if array is not None:
                    container[slot] = _plain(_round_shown(array, formats))
