"""myst-nb render plugin for ``application/vnd.plotly.v1+json`` outputs."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np
import plotly.io as pio
from _plotly_utils.utils import to_typed_array_spec
from docutils import nodes
from myst_nb.core.render import MimeData, NbElementRenderer

PLOTLY_MIME = "application/vnd.plotly.v1+json"
_HTML_BUILDERS = ("html", "dirhtml", "singlehtml")


SHARED_TEMPLATE = "plotly"
"""The template that the page script (``posviz.sphinxext``'s ``figures.js``) holds once for every
figure: a figure that uses it exactly does not carry its own copy."""


@lru_cache(maxsize=1)
def _shared_template() -> str:
    return json.dumps(pio.templates[SHARED_TEMPLATE].to_plotly_json(), sort_keys=True, separators=(",", ":"))


_DTYPES = {"i1": "<i1", "u1": "<u1", "i2": "<i2", "u2": "<u2", "i4": "<i4", "u4": "<u4", "f4": "<f4", "f8": "<f8"}


def _json_len(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")))


def _shortest(value: Any) -> Any:
    """One array as the shorter of a JSON list and a Plotly typed array (smallest integer type).

    plotly.py stores every numpy array as base64 float64 (11 characters a number) even when it
    holds rounded values that JSON writes in 5; a slider state's integers (a list) are shorter as
    base64 int8 (1.3 characters a number). Plotly.js reads both forms, in the data and in a
    slider step's ``update``.
    """
    if isinstance(value, Mapping) and set(value) <= {"dtype", "bdata", "shape"} and value.get("dtype") in _DTYPES:
        shape = [int(n) for n in str(value.get("shape", "")).split(",") if n.strip()]
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=_DTYPES[value["dtype"]])
        array = array.reshape(shape) if shape else array
    elif (
        isinstance(value, list)
        and value
        and all(isinstance(v, (int, float, list)) and not isinstance(v, bool) for v in value)
    ):
        try:
            array = np.asarray(value, dtype=np.float64)
        except ValueError:  # ragged
            return value
        if array.ndim not in (1, 2) or not np.isfinite(array).all():
            return value
    else:
        return value
    candidates = [value]
    if np.isfinite(array).all():
        if np.array_equal(array, np.round(array)) and np.abs(array).max(initial=0) < 2**31:
            candidates.append(to_typed_array_spec(array.astype(np.int64)))
        else:
            candidates.append(array.tolist())
    return min(candidates, key=_json_len)


def _compact(fig: dict[str, Any]) -> None:
    """Every trace array and every slider state in its shortest form (in place)."""
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


def _text(value: Any) -> str:
    """Plotly rich text as plain text: tags dropped, ``<br>`` as a space, entities decoded."""
    if isinstance(value, Mapping):
        value = value.get("text")
    if not isinstance(value, str):
        return ""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", value.replace("<br>", " "))).split())


_KINDS = {"heatmap": "heat map", "scatter": "line chart", "bar": "bar chart"}


def describe_figure(figure: Mapping[str, Any]) -> tuple[str, str]:
    """A figure's text alternative: (a short name, a description of what it shows and how to use it).

    Both are read from the figure itself (title, panel titles, axes, colour bars, the named
    series, the slider's and the buttons' labels), so every figure has one and it says what is
    drawn in the state the page opens with.
    """
    layout = figure.get("layout") or {}
    data = [t for t in figure.get("data") or [] if isinstance(t, Mapping)]
    title = _text(layout.get("title"))
    kinds = []
    for trace in data:
        kind = trace.get("type", "scatter")
        if kind == "scatter" and "lines" not in str(trace.get("mode", "lines")):
            kind = "scatter plot"
        kind = _KINDS.get(kind, kind)
        if kind not in kinds:
            kinds.append(kind)
    axes = sorted(k for k in layout if re.fullmatch(r"[xy]axis\d*", k))
    panel_titles = [
        _text(a)
        for a in layout.get("annotations") or []
        if isinstance(a, Mapping) and a.get("xref", "paper") == "paper" and a.get("yref", "paper") == "paper"
    ]
    panels = len([k for k in axes if k.startswith("x")]) or 1
    parts = []
    what = " and ".join(kinds) or "chart"
    parts.append(
        f"Interactive {what}" + (f" in {panels} panels" if panels > 1 else "") + (f": {title}." if title else ".")
    )
    if panel_titles and panels > 1:
        parts.append("Panels: " + "; ".join(t for t in panel_titles if t) + ".")
    axis_titles = []
    for k in axes:
        t = _text((layout.get(k) or {}).get("title"))
        if t and t not in axis_titles:
            axis_titles.append(f"{k[0]} axis: {t}")
    if axis_titles:
        parts.append("; ".join(axis_titles) + ".")
    colours = []
    for trace in data:
        t = _text((trace.get("colorbar") or {}).get("title"))
        if t and t not in colours:
            colours.append(t)
    if colours:
        parts.append("Colour: " + "; ".join(colours) + ".")
    names = []
    for trace in data:
        n = _text(trace.get("name"))
        if n and n not in names and trace.get("showlegend", True) is not False:
            names.append(n)
    if names:
        parts.append("Series: " + "; ".join(names) + ".")
    for slider in layout.get("sliders") or []:
        steps = [_text(s.get("label")) for s in slider.get("steps") or []]
        if len(steps) > 1:
            prefix = _text((slider.get("currentvalue") or {}).get("prefix")).rstrip(": ")
            active = steps[slider.get("active", 0)] if 0 <= slider.get("active", 0) < len(steps) else steps[0]
            parts.append(
                f"A slider{f' ({prefix})' if prefix else ''} steps through {len(steps)} values, "
                f"{steps[0]} to {steps[-1]}; it opens at {active}."
            )
    for menu in layout.get("updatemenus") or []:
        labels = [_text(b.get("label")) for b in menu.get("buttons") or []]
        if labels:
            parts.append("Buttons: " + ", ".join(labels) + ".")
    name = title or f"Interactive {what}"
    return name, " ".join(parts)


def plotly_html(figure: Mapping[str, Any], key: str = "") -> str:
    """HTML for one figure: a ``div`` and an inline ``Plotly.newPlot`` script in a ``<figure>``.

    plotly.js must already be on the page; MathJax is not added and an animation does not
    start on load. The ``div`` id hashes the figure JSON and ``key`` (e.g. the output's cell
    and output index, so that two identical figures on one page still get distinct ids): the
    same figure always gives the same HTML, whatever the order of its keys.

    The figure's text alternative (:func:`describe_figure`) is the ``<figure>``'s accessible name
    and description, and a collapsed "Figure in words" caption any reader can open. A figure that
    uses plotly's default template exactly refers to it by name (``data-posviz-template``)
    instead of carrying it: the page script supplies it once for the whole site.
    """
    fig = dict(figure)
    config = fig.pop("config", None)
    # Keys sorted: a freshly executed output and the same output read back from the
    # execution cache (which sorts keys) must give the same HTML.
    canonical = json.dumps(fig, sort_keys=True, separators=(",", ":"))
    div_id = "plotly-" + hashlib.sha256(f"{canonical}\0{key}".encode()).hexdigest()[:16]
    fig = json.loads(canonical)
    _compact(fig)
    layout = fig.get("layout") or {}
    template = layout.get("template")
    shared = template is not None and json.dumps(template, sort_keys=True, separators=(",", ":")) == _shared_template()
    if shared:
        del layout["template"]
    name, description = describe_figure(fig)
    width = layout.get("width")
    out = pio.to_html(
        fig,
        config=config,
        auto_play=False,
        include_plotlyjs=False,
        include_mathjax=False,
        full_html=False,
        validate=False,
        div_id=div_id,
    )
    if shared:
        out = out.replace(
            f'<div id="{div_id}" class="plotly-graph-div"',
            f'<div id="{div_id}" class="plotly-graph-div" data-posviz-template="{SHARED_TEMPLATE}"',
            1,
        )
    if isinstance(width, (int, float)):  # the fixed width becomes a maximum: a phone's column is narrower
        out = re.sub(
            r'style="height:([^;"]+); width:\d+px;"',
            rf'style="height:\1; width:100%; max-width:{width}px;"',
            out,
            count=1,
        )
    caption = (
        f'<figcaption class="posviz-figure-words"><details><summary>Figure in words</summary>'
        f'<p id="{div_id}-words">{html.escape(description)}</p></details></figcaption>'
    )
    # The <figure> (role figure, which may hold the slider and buttons) is named and described;
    # role="img" on the plot would hide its controls and nest interactive content.
    return (
        f'<figure class="posviz-figure" aria-label="{html.escape(name)}" aria-describedby="{div_id}-words">'
        f"{out}{caption}</figure>"
    )


def plotly_nodes(data: Any) -> list[nodes.Element] | None:
    """A raw HTML node for a plotly output (a myst-nb ``MimeData``), ``None`` for anything else."""
    if data.mime_type != PLOTLY_MIME:
        return None
    content = data.content
    figure = json.loads(content) if isinstance(content, (str, bytes)) else content
    html = plotly_html(figure, key=f"{data.cell_index}-{data.output_index}")
    return [nodes.raw(text=html, format="html", classes=["output", "text_html", "posviz-plotly"])]


MIME_PRIORITY_OVERRIDES: list[tuple[str, str, int]] = [(builder, PLOTLY_MIME, 0) for builder in _HTML_BUILDERS]
"""What the book's ``nb_mime_priority_overrides`` must hold: plotly's mime type first for HTML
builders, ahead of the ``text/html`` and ``text/plain`` fallbacks in the same output."""


class PlotlyNbRenderer(NbElementRenderer):
    """myst-nb's element renderer, plus plotly's JSON mime bundle rendered as HTML.

    A *named* render plugin (entry point ``myst_nb.renderers: posviz-plotly``), so it acts only
    in a project whose configuration asks for it (``nb_render_plugin: posviz-plotly``, as the
    book's ``_config.yml`` does). Installing posviz changes nothing in any other project's docs.
    """

    def render_mime_type(self, data: MimeData) -> list[nodes.Element]:
        return plotly_nodes(data) or super().render_mime_type(data)

    def render_mime_type_inline(self, data: MimeData) -> list[nodes.Element]:
        return plotly_nodes(data) or super().render_mime_type_inline(data)
