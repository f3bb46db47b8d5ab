"""myst-nb render plugin for ``application/vnd.plotly.v1+json`` outputs."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache
from typing import Any

import numpy as np
import plotly.io as pio
from docutils import nodes
from myst_nb.core.render import MimeData, NbElementRenderer

from ..i18n import N_, translate, translate_figure
from ..selfcheck import MIME as SELFCHECK_MIME
from ..selfcheck import SelfCheck

PLOTLY_MIME = "application/vnd.plotly.v1+json"
_HTML_BUILDERS = ("html", "dirhtml", "singlehtml")


SHARED_TEMPLATE = "plotly"
"""The template that the page script (``posviz.sphinxext``'s ``figures.js``) holds once for every
figure: a figure that uses it exactly does not carry its own copy."""


@lru_cache(maxsize=1)
def _shared_template() -> str:
    return json.dumps(pio.templates[SHARED_TEMPLATE].to_plotly_json(), sort_keys=True, separators=(",", ":"))


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


def _round_to_shown(fig: dict[str, Any]) -> None:
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


def _compact(fig: dict[str, Any]) -> dict[str, Any]:
    """The figure as the page stores it: values rounded to what the figure shows of them, every
    array in its shortest exact form, and each large value stored once (the page script expands
    the references)."""
    _round_to_shown(fig)
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


def _text(value: Any) -> str:
    """Plotly rich text as plain text: tags dropped, ``<br>`` as a space, a subscript written
    ``L_max`` (not "L max"), entities decoded."""
    if isinstance(value, Mapping):
        value = value.get("text")
    if not isinstance(value, str):
        return ""
    value = re.sub(r"<sub>(.*?)</sub>", r"_\1", value.replace("<br>", " "))
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", value)).split())


_ESCAPED_SLASH = re.compile(r"(?<!\\)((?:\\\\)*)\\u002f")

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

    sep = _t("; ")
    layout = figure.get("layout") or {}
    data = [trace for trace in figure.get("data") or [] if isinstance(trace, Mapping)]
    title = _text(layout.get("title"))
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
        _text(a)
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
        text = _text((layout.get(k) or {}).get("title"))
        if text and text not in axis_titles:
            axis_titles.append(_t("{axis} axis: {title}", axis=k[0], title=text))
    if axis_titles:
        parts.append(sep.join(axis_titles) + _t("."))
    colours = []
    for trace in data:
        text = _text((trace.get("colorbar") or {}).get("title"))
        if text and text not in colours:
            colours.append(text)
    if colours:
        parts.append(_t("Colour: {titles}.", titles=sep.join(colours)))
    names = []
    for trace in data:
        n = _text(trace.get("name"))
        if n and n not in names and trace.get("showlegend", True) is not False:
            names.append(n)
    if names:
        parts.append(_t("Series: {names}.", names=sep.join(names)))
    for slider in layout.get("sliders") or []:
        steps = [_text(s.get("label")) for s in slider.get("steps") or []]
        if len(steps) > 1:
            prefix = _text((slider.get("currentvalue") or {}).get("prefix")).rstrip(": ：")
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
        labels = [_text(b.get("label")) for b in menu.get("buttons") or []]
        if labels:
            parts.append(_t("Buttons: {labels}.", labels=_t(", ").join(labels)))
    name = title or head
    return name, "".join(_t("{sentence} ", sentence=part) for part in parts).strip()


def plotly_html(figure: Mapping[str, Any], key: str = "", language: str = "en") -> str:
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
    fig = translate_figure(json.loads(json.dumps(figure)), language)  # a copy: the record is removed
    config = fig.pop("config", None)
    # Keys sorted: a freshly executed output and the same output read back from the
    # execution cache (which sorts keys) must give the same HTML.
    canonical = json.dumps(fig, sort_keys=True, separators=(",", ":"))
    div_id = "plotly-" + hashlib.sha256(f"{canonical}\0{key}".encode()).hexdigest()[:16]
    fig = json.loads(canonical)
    layout = fig.get("layout") or {}
    template = layout.get("template")
    shared = template is not None and json.dumps(template, sort_keys=True, separators=(",", ":")) == _shared_template()
    if shared:
        del layout["template"]
    name, description = describe_figure(fig, language)
    width = layout.get("width")
    fig = _compact(fig)
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
    # plotly writes every "/" of the JSON as \u002f (6 characters; base64 is full of them): only
    # "<" must be escaped inside a <script>, and it stays escaped (\u003c).
    out = _ESCAPED_SLASH.sub(r"\1/", out)
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
    words = html.escape(translate("Figure in words", language))
    caption = (
        f'<figcaption class="posviz-figure-words"><details><summary>{words}</summary>'
        f'<p id="{div_id}-words">{html.escape(description)}</p></details></figcaption>'
    )
    # The <figure> (role figure, which may hold the slider and buttons) is named and described;
    # role="img" on the plot would hide its controls and nest interactive content.
    return (
        f'<figure class="posviz-figure" aria-label="{html.escape(name)}" aria-describedby="{div_id}-words">'
        f"{out}{caption}</figure>"
    )


def plotly_nodes(data: Any, language: str = "en") -> list[nodes.Element] | None:
    """A raw HTML node for a plotly output (a myst-nb ``MimeData``), ``None`` for anything else.

    The figure is drawn in ``language`` (the edition's: :func:`posviz.i18n.translate_figure`)."""
    if data.mime_type != PLOTLY_MIME:
        return None
    content = data.content
    figure = json.loads(content) if isinstance(content, (str, bytes)) else content
    html = plotly_html(figure, key=f"{data.cell_index}-{data.output_index}", language=language)
    return [nodes.raw(text=html, format="html", classes=["output", "text_html", "posviz-plotly"])]


def selfcheck_nodes(data: Any, language: str = "en") -> list[nodes.Element] | None:
    """A self-check block (``posviz.selfcheck``'s data) as HTML in ``language``; ``None`` for anything else."""
    if data.mime_type != SELFCHECK_MIME:
        return None
    content = data.content
    block = SelfCheck.from_json(json.loads(content) if isinstance(content, (str, bytes)) else content, language)
    return [nodes.raw(text=block._repr_html_(), format="html", classes=["output", "text_html"])]


MIME_PRIORITY_OVERRIDES: list[tuple[str, str, int]] = [
    (builder, mime, 0) for builder in _HTML_BUILDERS for mime in (PLOTLY_MIME, SELFCHECK_MIME)
]
"""What the book's ``nb_mime_priority_overrides`` must hold: plotly's and the self-check's mime
types first for HTML builders, ahead of the ``text/html`` and ``text/plain`` fallbacks in the
same output."""


class PlotlyNbRenderer(NbElementRenderer):
    """myst-nb's element renderer, plus plotly's JSON mime bundle rendered as HTML.

    A *named* render plugin (entry point ``myst_nb.renderers: posviz-plotly``), so it acts only
    in a project whose configuration asks for it (``nb_render_plugin: posviz-plotly``, as the
    book's ``_config.yml`` does). Installing posviz changes nothing in any other project's docs.
    """

    @property
    def language(self) -> str:
        """The edition's language (Sphinx's ``language``), English outside Sphinx."""
        env = getattr(self.renderer, "sphinx_env", None)
        return _edition_language(getattr(getattr(env, "config", None), "language", None))

    def render_mime_type(self, data: MimeData) -> list[nodes.Element]:
        return (
            plotly_nodes(data, self.language) or selfcheck_nodes(data, self.language) or super().render_mime_type(data)
        )

    def render_mime_type_inline(self, data: MimeData) -> list[nodes.Element]:
        return plotly_nodes(data, self.language) or super().render_mime_type_inline(data)


def _edition_language(language: str | None) -> str:
    """posviz's figure language for a Sphinx ``language`` (English for any it does not draw in)."""
    if not language:
        return "en"
    name = language.replace("-", "_")
    return "zh_CN" if name.startswith("zh") else "en"
