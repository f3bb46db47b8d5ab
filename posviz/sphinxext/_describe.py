"""A figure's text alternative, read from the figure itself, in the edition's language."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..i18n import N_, plain_text, tidy, translate


def _text(value: Any, language: str = "en") -> str:
    """Plotly rich text as plain text (:func:`posviz.i18n.plain_text`): tags dropped, ``<br>`` as a
    space (before a subtitle line, a clause break), a subscript on a symbol written ``L_max``
    (not "L max"), entities decoded."""
    if isinstance(value, Mapping):
        value = value.get("text")
    if not isinstance(value, str):
        return ""
    return plain_text(value, language)


_KINDS = {"heatmap": N_("heat map"), "scatter": N_("line chart"), "bar": N_("bar chart")}


def describe_figure(figure: Mapping[str, Any], language: str = "en") -> tuple[str, str]:
    """A figure's text alternative: (a short name, a description of what it shows and how to use it).

    Both are read from the figure itself (title, panel titles, axes, colour bars, the named
    series, the slider's and the buttons' labels), so every figure has one and it says what is
    drawn in the state the page opens with. The sentences around them are in ``language``
    (posviz's figure catalog, :mod:`posviz.i18n`).
    """

    def _t(msgid: str, **fields: Any) -> str:
        return translate(msgid, language, **fields)

    def _text_in(value: Any) -> str:
        return _text(value, language)

    sep = _t("; ")
    layout = figure.get("layout") or {}
    data = [trace for trace in figure.get("data") or [] if isinstance(trace, Mapping)]
    title = _text_in(layout.get("title"))
    kinds = []
    for trace in data:
        kind = trace.get("type", "scatter")
        if kind == "scatter" and "lines" not in str(trace.get("mode", "lines")):
            kind = N_("scatter plot")
        kind = _t(_KINDS.get(kind, kind))
        if kind not in kinds:
            kinds.append(kind)
    axes = sorted(k for k in layout if re.fullmatch(r"[xy]axis\d*", k))
    panel_titles = [
        _text_in(a)
        for a in layout.get("annotations") or []
        if isinstance(a, Mapping) and a.get("xref", "paper") == "paper" and a.get("yref", "paper") == "paper"
    ]
    panels = len([k for k in axes if k.startswith("x")]) or 1
    parts = []
    what = _t(" and ").join(kinds) or _t("chart")
    head = (
        _t("Interactive {what} in {panels} panels", what=what, panels=panels)
        if panels > 1
        else _t("Interactive {what}", what=what)
    )
    parts.append(_t("{head}: {title}.", head=head, title=title) if title else _t("{head}.", head=head))
    if panel_titles and panels > 1:
        parts.append(_t("Panels: {titles}.", titles=sep.join(p for p in panel_titles if p)))
    axis_titles = []
    for k in axes:
        text = _text_in((layout.get(k) or {}).get("title"))
        if text and text not in axis_titles:
            axis_titles.append(_t("{axis} axis: {title}", axis=k[0], title=text))
    if axis_titles:
        parts.append(sep.join(axis_titles) + _t("."))
    colours = []
    for trace in data:
        text = _text_in((trace.get("colorbar") or {}).get("title"))
        if text and text not in colours:
            colours.append(text)
    if colours:
        parts.append(_t("Colour: {titles}.", titles=sep.join(colours)))
    names = []
    for trace in data:
        n = _text_in(trace.get("name"))
        if n and n not in names and trace.get("showlegend", True) is not False:
            names.append(n)
    if names:
        parts.append(_t("Series: {names}.", names=sep.join(names)))
    for slider in layout.get("sliders") or []:
        steps = [_text_in(s.get("label")) for s in slider.get("steps") or []]
        if len(steps) > 1:
            prefix = _text_in((slider.get("currentvalue") or {}).get("prefix")).rstrip(": ：")
            active = steps[slider.get("active", 0)] if 0 <= slider.get("active", 0) < len(steps) else steps[0]
            fields = {"count": len(steps), "first": steps[0], "last": steps[-1], "active": active}
            parts.append(
                _t(
                    "A slider ({prefix}) steps through {count} values, {first} to {last}; it opens at {active}.",
                    prefix=prefix,
                    **fields,
                )
                if prefix
                else _t("A slider steps through {count} values, {first} to {last}; it opens at {active}.", **fields)
            )
    for menu in layout.get("updatemenus") or []:
        labels = [_text_in(b.get("label")) for b in menu.get("buttons") or []]
        if labels:
            parts.append(_t("Buttons: {labels}.", labels=_t(", ").join(labels)))
    name = title or head
    # pieces joined by the language's spacing rules (no space between Chinese characters or
    # before full-width punctuation)
    words = "".join(_t("{sentence} ", sentence=part) for part in parts)
    return tidy(name, language), tidy(words, language)
