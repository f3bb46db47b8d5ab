"""Plotly figures from a results dictionary (the JSON written by ``python -m posviz.lab``).

Every control is a Plotly ``updatemenus`` button or a slider over precomputed states
(:func:`posviz.plots.slider_figure`), so the figures work in a static page with no kernel. The
book builds its figures from the committed JSON (:func:`posviz.lab.load_published`) with these
functions; the CLI also writes three of them as HTML into its output folder. By concern: this
module (perplexity against length, paired differences, training curves, the HTML files),
:mod:`posviz.lab.cost_figures` (costs), :mod:`posviz.lab.slider_figures` (one length at a time),
:mod:`posviz.lab._style` (what they share).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import plotly.graph_objects as go

from ..i18n import tr, translatable
from ._style import (
    _PAPER_SET,
    METHOD_COLORS,
    _color,
    _errors,
    _hover,
    _label,
    _length_axis,
    _subtitle,
    _ticks_125,
)
from .cost_figures import cost_figure
from .results import validate_results
from .slider_figures import inference_at_length_figure, perplexity_at_length_figure
from .tables import spread_words

ONE_SEED_SYMBOL = "x-thin-open"
"""The paired-difference marker of a difference measured with one seed (no spread to compare with)."""
SPREAD_SYMBOLS = {True: "circle-open", False: "circle", None: ONE_SEED_SYMBOL}
"""Marker per :func:`posviz.lab.inside_spread` verdict: inside (open), outside (filled), one seed."""

__all__ = [
    "METHOD_COLORS",
    "ONE_SEED_SYMBOL",
    "SPREAD_SYMBOLS",
    "cost_figure",
    "inference_at_length_figure",
    "paired_difference_figure",
    "perplexity_at_length_figure",
    "perplexity_figure",
    "training_curve_figure",
    "write_figures",
]


@translatable
def perplexity_figure(results: dict, *, methods: list[str] | None = None, log_y: bool = True) -> go.Figure:
    """Held-out perplexity vs evaluation length, one line per method (mean over seeds, min–max bars).

    Buttons switch the y axis between log and linear and choose which methods are shown (all,
    trained only, the ALiBi paper's Figure 1 set, or one at a time). A dotted line marks the
    training length; ``learned`` has no points past its table ("cannot run", in the hover text
    of the JSON, never a number).
    """
    validate_results(results)
    lengths = results["eval_lengths"]
    train_len = results["train_len"]
    names = [m for m in (methods or results["method_order"]) if m in results["methods"]]
    fig = go.Figure()
    for name in names:
        m = results["methods"][name]
        agg = m["aggregate"]["perplexity"]
        up, down = _errors(agg)
        reasons = m["seeds"][0]["cannot_run"]
        label = _label(name)
        if any(r is not None for r in reasons):
            label += tr(" (no positions past {value})", value=m.get("max_length") or train_len)
        fig.add_trace(
            go.Scatter(
                x=lengths,
                y=agg["mean"],
                name=label,
                mode="lines+markers",
                line={"color": _color(name), "dash": "dash" if m["trained_as"] != name else "solid"},
                error_y={"type": "data", "array": up, "arrayminus": down, "visible": True, "thickness": 1},
                hovertext=_hover(name, lengths, agg, reasons, tr("perplexity")),
                hoverinfo="text",
            )
        )
    trained = [results["methods"][n]["trained_as"] == n for n in names]
    y_ticks = _ticks_125(
        [v for n in names for key in ("min", "max") for v in results["methods"][n]["aggregate"]["perplexity"][key]]
    )
    log_ticks = "array" if len(y_ticks) >= 3 else "auto"  # too few 1-2-5 values: Plotly's own ticks

    def visible(mask: list[bool]) -> dict:
        return {"visible": [True if v else "legendonly" for v in mask]}

    method_buttons = [{"label": tr("all methods"), "method": "restyle", "args": [visible([True] * len(names))]}]
    if not all(trained):  # a choice that changes nothing is left out
        method_buttons.append({"label": tr("trained methods only"), "method": "restyle", "args": [visible(trained)]})
    if all(n in names for n in _PAPER_SET):
        method_buttons.append(
            {
                "label": tr("ALiBi paper's Fig. 1 set"),
                "method": "restyle",
                "args": [visible([n in _PAPER_SET for n in names])],
            }
        )
    method_buttons += [
        {"label": tr("only {label}", label=_label(n)), "method": "restyle", "args": [visible([k == n for k in names])]}
        for n in names
    ]
    fig.update_layout(
        title={
            "text": tr(
                "Train short, test long: held-out perplexity<br><sup>{subtitle}</sup>", subtitle=_subtitle(results)
            )
        },
        xaxis=_length_axis(lengths, train_len),
        yaxis={
            "type": "log" if log_y else "linear",
            "title": {"text": tr("perplexity (exp of mean nats per byte; lower is better)")},
            "tickmode": log_ticks if log_y else "auto",
            "tickvals": y_ticks,
            "ticktext": [f"{t:g}" for t in y_ticks],
        },
        legend={
            "title": {"text": tr("method (bars: min–max over seeds)")},
            "x": 1.02,
            "xanchor": "left",
            "y": 0.78,
            "yanchor": "top",
        },
        hovermode="closest",
        template="plotly_white",
        height=560,
        margin={"t": 90, "r": 20},
        shapes=[
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": train_len,
                "x1": train_len,
                "y0": 0,
                "y1": 1,
                "line": {"dash": "dot", "color": "#555", "width": 1},
            }
        ],
        # annotations on a log axis take log10 of the value (shapes take the value itself)
        annotations=[
            {
                "x": math.log10(train_len),
                "xref": "x",
                "y": 1,
                "yref": "paper",
                "text": tr("training length"),
                "showarrow": False,
                "xanchor": "left",
                "yanchor": "bottom",
                "font": {"size": 11},
            }
        ],
        updatemenus=[
            {
                "type": "buttons",
                "direction": "right",
                "x": 1.02,
                "y": 1.0,
                "xanchor": "left",
                "yanchor": "top",
                "active": 0 if log_y else 1,
                "showactive": True,
                "buttons": [
                    {
                        "label": tr("log y"),
                        "method": "relayout",
                        "args": [{"yaxis.type": "log", "yaxis.tickmode": log_ticks}],
                    },
                    {
                        "label": tr("linear y"),
                        "method": "relayout",
                        "args": [{"yaxis.type": "linear", "yaxis.tickmode": "auto"}],
                    },
                ],
            },
            {
                "type": "dropdown",
                "x": 1.02,
                "y": 0.9,
                "xanchor": "left",
                "yanchor": "top",
                "active": 0,
                "buttons": method_buttons,
            },
        ],
    )
    return fig


@translatable
def paired_difference_figure(results: dict, *, methods: list[str] | None = None) -> go.Figure:
    """Per-seed paired differences to the baseline (``results["paired"]``, perplexity of the method
    minus the baseline's with the same seed) against evaluation length: the mean over seeds, bars
    from the smallest to the largest per-seed difference. A filled circle is a difference outside
    the seed spread; an **open** circle one inside it (:func:`posviz.lab.inside_spread`); a cross
    (``ONE_SEED_SYMBOL``) one measured with a single seed, which has no spread to compare with.
    The hover text says which, in words (``posviz.lab.tables.spread_words``), and so does the
    subtitle. Below 0: better than the baseline.
    """
    validate_results(results)
    paired = results.get("paired")
    if paired is None:
        raise ValueError("these results have no paired differences (the baseline method was not run)")
    lengths, train_len, base = results["eval_lengths"], results["train_len"], paired["baseline"]
    names = [m for m in (methods or results["method_order"]) if m in results["methods"] and m != base]

    def trained_as(name: str) -> str:
        return results["methods"][name]["trained_as"]

    fig = go.Figure()
    for name in names:
        p = paired["methods"][name]
        up = [None if m is None else hi - m for m, hi in zip(p["mean"], p["max"])]
        down = [None if m is None else m - lo for m, lo in zip(p["mean"], p["min"])]
        symbols = [SPREAD_SYMBOLS[inside] for inside in p["inside_spread"]]
        hover = []
        for i, n in enumerate(lengths):
            if p["mean"][i] is None:
                hover.append(tr("{label}<br>L = {n}: cannot run", label=_label(name), n=n))
                continue
            per_seed = ", ".join(f"{d:+.3f}" for d in p["diff"][i])
            verdict = spread_words(p["inside_spread"][i])
            hover.append(
                tr(
                    "{label} − {label2}<br>L = {n}: {p:+.3f} (mean)<br>per seed: {per_seed}<br>{verdict}",
                    label=_label(name),
                    label2=_label(base),
                    n=n,
                    p=p["mean"][i],
                    per_seed=per_seed,
                    verdict=verdict,
                )
            )
        fig.add_trace(
            go.Scatter(
                x=lengths,
                y=p["mean"],
                name=_label(name),
                mode="lines+markers",
                marker={"symbol": symbols, "size": 9, "color": _color(name), "line": {"width": 2}},
                line={"color": _color(name), "dash": "solid" if trained_as(name) == name else "dash"},
                error_y={"type": "data", "array": up, "arrayminus": down, "visible": True, "thickness": 1},
                hovertext=hover,
                hoverinfo="text",
            )
        )
    one_seed = len(results["config"]["seeds"]) == 1
    key = tr("× = one seed: no spread") if one_seed else tr("open marker = inside the seed spread")
    fig.update_layout(
        title={
            "text": tr(
                "Paired by seed: perplexity minus {label}'s<br><sup>{subtitle}; {key}</sup>",
                label=_label(base),
                subtitle=_subtitle(results),
                key=key,
            )
        },
        xaxis=_length_axis(lengths, train_len),
        yaxis={
            "title": {"text": tr("perplexity − {label} (same seed; below 0 is better)", label=_label(base))},
            "zeroline": True,
        },
        legend={"title": {"text": tr("method (bars: min–max over seeds)")}},
        hovermode="closest",
        template="plotly_white",
        height=520,
        margin={"t": 90, "r": 20},
    )
    return fig


@translatable
def training_curve_figure(results: dict, *, methods: list[str] | None = None) -> go.Figure:
    """Training loss (nats/byte, mean over seeds) vs step, one line per trained method."""
    validate_results(results)
    names = [m for m in (methods or results["method_order"]) if m in results["methods"]]
    fig = go.Figure()
    for name in names:
        m = results["methods"][name]
        if m["trained_as"] != name:
            continue
        curves = [s["loss_curve"] for s in m["seeds"]]
        steps = curves[0]["step"]
        mean = [sum(c["loss"][i] for c in curves) / len(curves) for i in range(len(steps))]
        fig.add_trace(go.Scatter(x=steps, y=mean, mode="lines", name=_label(name), line={"color": _color(name)}))
    fig.update_layout(
        title={"text": tr("Training loss<br><sup>{subtitle}</sup>", subtitle=_subtitle(results))},
        xaxis={"title": {"text": tr("training step")}},
        yaxis={"title": {"text": tr("training loss (nats per byte)")}},
        template="plotly_white",
        margin={"t": 90},
    )
    return fig


def write_figures(results: dict, out_dir: str | os.PathLike, *, include_plotlyjs: str | bool = True) -> list[Path]:
    """Write ``perplexity.html``, ``cost.html`` and ``training.html`` into ``out_dir``.

    The default, ``include_plotlyjs=True``, embeds plotly.js: each file opens offline but weighs
    about 4.7 MB. ``"cdn"`` (an explicit opt-in) makes small files that load plotly.js from a CDN.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for stem, fig in (
        ("perplexity", perplexity_figure(results)),
        ("cost", cost_figure(results)),
        ("training", training_curve_figure(results)),
    ):
        path = out / f"{stem}.html"
        fig.write_html(path, include_plotlyjs=include_plotlyjs, full_html=True)
        paths.append(path)
    return paths
