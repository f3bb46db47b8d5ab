"""Plotly figures from a results dictionary (the JSON written by ``python -m posviz.lab``).

Every control is a Plotly ``updatemenus`` button or a slider over precomputed states
(:func:`posviz.plots.slider_figure`), so the figures work in a static page with no kernel. The
book builds its figures from the committed JSON (:func:`posviz.lab.load_published`) with these
functions; the CLI also writes three of them as HTML into its output folder.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Literal

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..i18n import N_, tr, translatable
from ..plots import slider_figure
from .results import perplexity_ratio, validate_results

__all__ = [
    "METHOD_COLORS",
    "cost_figure",
    "inference_at_length_figure",
    "paired_difference_figure",
    "perplexity_at_length_figure",
    "perplexity_figure",
    "training_curve_figure",
    "write_figures",
]

METHOD_COLORS: dict[str, str] = {
    "none": "#7f7f7f",
    "sinusoidal": "#1f77b4",
    "learned": "#8c564b",
    "shaw": "#9467bd",
    "t5": "#ff7f0e",
    "rope": "#2ca02c",
    "rope-pi": "#98df8a",
    "rope-ntk": "#17becf",
    "alibi": "#d62728",
}
_LABELS = {
    "none": N_("NoPE (none)"),
    "sinusoidal": N_("sinusoidal"),
    "learned": N_("learned"),
    "shaw": N_("Shaw (relative k/v)"),
    "t5": N_("T5 bias"),
    "rope": N_("RoPE"),
    "rope-pi": N_("RoPE + position interpolation"),
    "rope-ntk": N_("RoPE + NTK-aware base"),
    "alibi": N_("ALiBi"),
}
_PAPER_SET = ("sinusoidal", "rope", "t5", "alibi")  # the ALiBi paper's Figure 1


def _label(name: str) -> str:
    return tr(_LABELS[name]) if name in _LABELS else name


def _color(name: str) -> str:
    return METHOD_COLORS.get(name, "#333333")


def _subtitle(results: dict) -> str:
    cfg = results["config"]
    model = cfg["model"]
    seeds = len(cfg["seeds"])
    fields = {
        "train_len": results["train_len"],
        "d": model["n_embd"],
        "layers": model["n_layer"],
        "heads": model["n_head"],
        "steps": cfg["train"]["steps"],
        "seeds": seeds,
    }
    if seeds == 1:
        return tr(
            "trained at {train_len} bytes; d={d}, {layers} layers, {heads} heads, {steps} steps; 1 seed", **fields
        )
    return tr(
        "trained at {train_len} bytes; d={d}, {layers} layers, {heads} heads, {steps} steps; {seeds} seeds", **fields
    )


def _threads(results: dict) -> str:
    n = results["machine"].get("torch_threads")
    return tr("1 thread") if n == 1 else tr("{n} threads", n=n)


def _errors(agg: dict) -> tuple[list, list]:
    up = [None if m is None else hi - m for m, hi in zip(agg["mean"], agg["max"])]
    down = [None if m is None else m - lo for m, lo in zip(agg["mean"], agg["min"])]
    return up, down


# The one reason a method cannot run that the lab records (posviz.lab.model): as a message.
_PAST_TABLE = re.compile(
    r"length (\d+) is past the learned table: max_len=(\d+) has rows for positions 0\.\.(\d+) only "
    r"\(a learned table cannot extrapolate\)"
)


def _reason(text: str | None) -> str:
    match = _PAST_TABLE.fullmatch(text or "")
    if not match:
        return text or ""
    return tr(
        "length {length} is past the learned table: max_len={max_len} has rows for positions 0..{last} only "
        "(a learned table cannot extrapolate)",
        length=int(match[1]),
        max_len=int(match[2]),
        last=int(match[3]),
    )


def _hover(name: str, lengths: list[int], agg: dict, reasons: list, unit: str) -> list[str]:
    out = []
    for i, length in enumerate(lengths):
        if agg["mean"][i] is None:
            out.append(
                tr(
                    "{label}<br>L = {length}: cannot run<br>{value}",
                    label=_label(name),
                    length=length,
                    value=_reason(reasons[i]),
                )
            )
            continue
        std = agg["std"][i]
        out.append(
            f"{_label(name)}<br>L = {length}<br>{unit} {agg['mean'][i]:.4g}"
            + (tr(" ± {std:.2g} (std)", std=std) if std is not None else "")
            + tr(
                "<br>min {agg:.4g}, max {agg2:.4g} over {agg3} seeds",
                agg=agg["min"][i],
                agg2=agg["max"][i],
                agg3=agg["n"][i],
            )
        )
    return out


def _ticks_125(values: list[float | None]) -> list[float]:
    """1-2-5 tick values spanning the finite positive ``values`` (for a log axis: labelled with their
    full value, not Plotly's single minor digits such as a lone "2" for 200)."""
    finite = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    if not finite:
        return []
    lo, hi = min(finite), max(finite)
    ticks = []
    for exponent in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for digit in (1, 2, 5):
            tick = digit * 10.0**exponent
            if lo / 1.25 <= tick <= hi * 1.25:
                ticks.append(tick)
    return ticks


def _length_axis(lengths: list[int], train_len: int) -> dict:
    return {
        "type": "log",
        "tickvals": lengths,
        "ticktext": [f"{n}<br>({n // train_len}×)" if n % train_len == 0 else str(n) for n in lengths],
        "title": {"text": tr("evaluation length L (bytes per window; multiple of the training length)")},
    }


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

    method_buttons = [
        {"label": tr("all methods"), "method": "restyle", "args": [visible([True] * len(names))]},
        {"label": tr("trained methods only"), "method": "restyle", "args": [visible(trained)]},
        {
            "label": tr("ALiBi paper's Fig. 1 set"),
            "method": "restyle",
            "args": [visible([n in _PAPER_SET for n in names])],
        },
    ] + [
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
    from the smallest to the largest per-seed difference. A filled marker is a difference outside
    the seed spread; an **open** marker, and the word in the hover text, one inside it
    (:func:`posviz.lab.inside_spread`). Below 0: better than the baseline.
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
        symbols = ["circle-open" if inside else "circle" for inside in p["inside_spread"]]
        hover = []
        for i, n in enumerate(lengths):
            if p["mean"][i] is None:
                hover.append(tr("{label}<br>L = {n}: cannot run", label=_label(name), n=n))
                continue
            per_seed = ", ".join(f"{d:+.3f}" for d in p["diff"][i])
            verdict = tr("inside the seed spread") if p["inside_spread"][i] else tr("outside the seed spread")
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
    fig.update_layout(
        title={
            "text": tr(
                "Paired by seed: perplexity minus {label}'s<br><sup>{subtitle}; open marker = "
                "inside the seed spread</sup>",
                label=_label(base),
                subtitle=_subtitle(results),
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
def cost_figure(
    results: dict, *, methods: list[str] | None = None, clock: Literal["auto", "cpu", "wall"] = "auto"
) -> go.Figure:
    """Costs, 2x2: training throughput and peak training memory per trained method (bars), and
    inference throughput and peak inference memory vs evaluation length (lines).

    ``clock="cpu"`` plots tokens per CPU second (``time.process_time``: robust on a shared
    machine), ``"wall"`` tokens per wall-clock second; ``"auto"`` picks CPU time for a CPU run
    and wall time for a CUDA run (CPU time misses the GPU's work).
    """
    validate_results(results)
    lengths = results["eval_lengths"]
    names = [m for m in (methods or results["method_order"]) if m in results["methods"]]
    trained = [n for n in names if results["methods"][n]["trained_as"] == n]
    device = results["machine"].get("device", "?")
    if clock == "auto":
        clock = "cpu" if str(device).startswith("cpu") else "wall"
    if clock not in ("cpu", "wall"):
        raise ValueError(f"clock must be 'auto', 'cpu' or 'wall', got {clock!r}")
    suffix, unit = ("_cpu_s", tr("tokens / CPU s")) if clock == "cpu" else ("_s", tr("tokens / s"))
    fig = make_subplots(
        rows=2,
        cols=2,
        horizontal_spacing=0.12,
        vertical_spacing=0.2,
        subplot_titles=(
            tr("training throughput (median step)"),
            tr("peak training memory"),
            tr("inference throughput vs length"),
            tr("peak inference memory (one batch)"),
        ),
    )
    tps = [results["methods"][n]["aggregate"]["train_tokens_per" + suffix] for n in trained]
    fig.add_trace(
        go.Bar(
            x=[_label(n) for n in trained],
            y=[t["mean"] for t in tps],
            marker_color=[_color(n) for n in trained],
            error_y={
                "type": "data",
                "array": [t["max"] - t["mean"] for t in tps],
                "arrayminus": [t["mean"] - t["min"] for t in tps],
            },
            showlegend=False,
            hovertemplate="%{x}: %{y:.0f} " + unit + tr("<extra>mean over seeds; bars min–max</extra>"),
        ),
        row=1,
        col=1,
    )
    mib = 2.0**20
    mems = [results["methods"][n]["memory"]["train"] for n in trained]
    persistent = [(mm["param_bytes"] + mm["optimizer_state_bytes"]) / mib if mm else None for mm in mems]
    step = [mm["step_peak_bytes"] / mib if mm else None for mm in mems]
    fig.add_trace(
        go.Bar(
            x=[_label(n) for n in trained],
            y=persistent,
            name=tr("parameters + AdamW state"),
            marker_color="#bbbbbb",
            legendgroup="memory",
            legendgrouptitle={"text": tr("training memory")},
            hovertemplate="%{x}: %{y:.2f} MiB<extra>parameters + AdamW state</extra>",
        ),
        row=1,
        col=2,
    )
    fig.add_trace(
        go.Bar(
            x=[_label(n) for n in trained],
            y=step,
            name=tr("one step (activations, gradients)"),
            marker_color=[_color(n) for n in trained],
            legendgroup="memory",
            hovertemplate="%{x}: %{y:.2f} MiB<extra>peak extra during one step</extra>",
        ),
        row=1,
        col=2,
    )
    for name in names:
        m = results["methods"][name]
        agg = m["aggregate"]["inference_tokens_per" + suffix]
        up, down = _errors(agg)
        dash = "dash" if m["trained_as"] != name else "solid"
        fig.add_trace(
            go.Scatter(
                x=lengths,
                y=agg["mean"],
                mode="lines+markers",
                name=_label(name),
                legendgroup=name,
                legendgrouptitle={"text": tr("method")} if name == names[0] else None,
                line={"color": _color(name), "dash": dash},
                error_y={"type": "data", "array": up, "arrayminus": down, "thickness": 1},
                hovertext=_hover(name, lengths, agg, m["seeds"][0]["cannot_run"], unit),
                hoverinfo="text",
            ),
            row=2,
            col=1,
        )
        inf = [None if b is None else b / mib for b in m["memory"]["inference_peak_bytes"]]
        fig.add_trace(
            go.Scatter(
                x=lengths,
                y=inf,
                mode="lines+markers",
                name=_label(name),
                legendgroup=name,
                showlegend=False,
                line={"color": _color(name), "dash": dash},
                hovertemplate=tr("{label}<br>L = %{x}: %{y:.1f} MiB<extra></extra>", label=_label(name)),
            ),
            row=2,
            col=2,
        )
    tokens = results["config"].get("eval_tokens_per_batch")
    fig.update_yaxes(title_text=unit, row=1, col=1)
    fig.update_yaxes(title_text="MiB", row=1, col=2)
    fig.update_yaxes(title_text=tr("{unit} (no grad)", unit=unit), row=2, col=1)
    fig.update_yaxes(title_text="MiB", type="log", dtick=1, row=2, col=2)
    for col in (1, 2):
        axis = _length_axis(lengths, results["train_len"])
        axis["title"] = {"text": tr("evaluation length L")}
        fig.update_xaxes(axis, row=2, col=col)
    fig.update_layout(
        title={
            "text": tr(
                "Cost per method on {device} ({threads})<br><sup>{subtitle}; inference batches "
                "of {tokens} tokens</sup>",
                device={"cpu": "CPU", "cuda": "GPU"}.get(device, device),
                threads=_threads(results),
                subtitle=_subtitle(results),
                tokens=tokens,
            )
        },
        barmode="stack",
        template="plotly_white",
        height=820,
        margin={"t": 110, "b": 40},
        legend={
            "groupclick": "togglegroup",
            "orientation": "h",
            "x": 0,
            "xanchor": "left",
            "y": -0.12,
            "yanchor": "top",
        },
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


def _length_label(length: int, train_len: int) -> str:
    return f"{length} ({length // train_len}×)" if length % train_len == 0 else str(length)


def _bar(names: list[str], values: list, texts: list[str], hover: list[str], **kw: object) -> go.Bar:
    return go.Bar(
        y=[_label(n) for n in names],
        x=[0.0 if v is None else v for v in values],
        orientation="h",
        marker_color=[_color(n) for n in names],
        text=texts,
        textposition="outside",
        cliponaxis=False,
        hovertext=hover,
        hoverinfo="text",
        showlegend=False,
        **kw,
    )


def _method_axes(names: list[str]) -> dict:
    """Two y axes listing the methods top to bottom in ``names`` order (a fixed category array, so
    slider updates never reorder them)."""
    order = {"categoryorder": "array", "categoryarray": [_label(n) for n in reversed(names)]}
    return {
        "yaxis": {**order, "automargin": True, "title": {"text": tr("position method")}},
        "yaxis2": {**order, "anchor": "x2", "showticklabels": False},
    }


@translatable
def perplexity_at_length_figure(results: dict, *, methods: list[str] | None = None) -> go.Figure:
    r"""Perplexity per method at one evaluation length, with a slider over the lengths.

    Left: mean held-out perplexity over seeds (bars: min–max); right: the same relative to the
    training length, :math:`\rho_L = \overline{\text{ppl}}_L / \overline{\text{ppl}}_{L_{\text{train}}}`
    (:func:`posviz.lab.perplexity_ratio`; 1 = no change). Both axes are fixed across the
    slider so the bars can be compared from one length to the next. A method that cannot run at a
    length shows an empty bar labelled "cannot run".
    """
    validate_results(results)
    lengths, train_len = results["eval_lengths"], results["train_len"]
    names = [m for m in (methods or results["method_order"]) if m in results["methods"]]
    ratios = perplexity_ratio(results)
    aggs = {n: results["methods"][n]["aggregate"]["perplexity"] for n in names}
    top = max(v for n in names for v in aggs[n]["max"] if v is not None)
    top_ratio = max(v for n in names for v in ratios[n] if v is not None)

    def state(i: int) -> list:
        mean = [aggs[n]["mean"][i] for n in names]
        up = [None if m is None else aggs[n]["max"][i] - m for n, m in zip(names, mean)]
        down = [None if m is None else m - aggs[n]["min"][i] for n, m in zip(names, mean)]
        rho = [ratios[n][i] for n in names]
        hover = [
            tr("{label}<br>L = {lengths}: cannot run", label=_label(n), lengths=lengths[i])
            if m is None
            else tr(
                "{label}<br>L = {lengths}: perplexity {m:.3f}<br>min {aggs:.3f}, max {aggs2:.3f} over {aggs3} seeds",
                label=_label(n),
                lengths=lengths[i],
                m=m,
                aggs=aggs[n]["min"][i],
                aggs2=aggs[n]["max"][i],
                aggs3=aggs[n]["n"][i],
            )
            for n, m in zip(names, mean)
        ]
        hover_r = [
            tr("{label}: cannot run at L = {lengths}", label=_label(n), lengths=lengths[i])
            if r is None
            else tr(
                "{label}<br>ppl at L = {lengths} / ppl at L = {train_len}: {r:.3f}",
                label=_label(n),
                lengths=lengths[i],
                train_len=train_len,
                r=r,
            )
            for n, r in zip(names, rho)
        ]
        return [
            _bar(
                names,
                mean,
                [tr("cannot run") if m is None else f"{m:.2f}" for m in mean],
                hover,
                error_x={"type": "data", "array": up, "arrayminus": down, "thickness": 1, "color": "#444"},
                xaxis="x",
                yaxis="y",
            ),
            _bar(
                names,
                rho,
                [tr("cannot run") if r is None else f"{r:.2f}×" for r in rho],
                hover_r,
                xaxis="x2",
                yaxis="y2",
            ),
        ]

    steps = [
        (_length_label(n, train_len), state(i), {"title.text": _at_length_title(results, n)})
        for i, n in enumerate(lengths)
    ]
    layout = {
        "template": "plotly_white",
        "height": 500,
        "margin": {"t": 90, "l": 10, "r": 30},
        "xaxis": {
            "domain": [0, 0.46],
            "range": [0, top * 1.25],
            "title": {"text": tr("perplexity (mean; bars min–max over seeds)")},
        },
        "xaxis2": {
            "domain": [0.54, 1.0],
            "range": [0, top_ratio * 1.25],
            "anchor": "y2",
            "title": {"text": tr("relative to L = {train_len} (1 = no change)", train_len=train_len)},
        },
        **_method_axes(names),
        "shapes": [
            {
                "type": "line",
                "xref": "x2",
                "yref": "paper",
                "x0": 1,
                "x1": 1,
                "y0": 0,
                "y1": 1,
                "line": {"dash": "dot", "color": "#555", "width": 1},
            }
        ],
    }
    fig = slider_figure(steps, slider_label=tr("evaluation length L (bytes)"), layout=layout)
    fig.layout.sliders[0].pad.t = 65  # below the axis titles
    return fig


def _at_length_title(results: dict, length: int) -> str:
    return tr(
        "Perplexity at L = {length} bytes, trained at {results}<br><sup>{subtitle}</sup>",
        length=_length_label(length, results["train_len"]),
        results=results["train_len"],
        subtitle=_subtitle(results),
    )


@translatable
def inference_at_length_figure(
    results: dict, *, methods: list[str] | None = None, clock: Literal["auto", "cpu", "wall"] = "auto"
) -> go.Figure:
    """Inference cost per method at one evaluation length, with a slider over the lengths.

    Left: inference throughput (tokens per CPU second, or per wall-clock second with
    ``clock="wall"``; ``"auto"``: CPU time on a CPU run), mean over seeds of the median batch;
    right: peak extra memory of one no-grad batch (tensor MiB). Each step rescales both axes to
    its own length (throughput falls and memory grows with L); the bar labels carry the values.
    """
    validate_results(results)
    lengths, train_len = results["eval_lengths"], results["train_len"]
    names = [m for m in (methods or results["method_order"]) if m in results["methods"]]
    if clock == "auto":
        clock = "cpu" if str(results["machine"].get("device", "cpu")).startswith("cpu") else "wall"
    if clock not in ("cpu", "wall"):
        raise ValueError(f"clock must be 'auto', 'cpu' or 'wall', got {clock!r}")
    key, unit = (
        ("inference_tokens_per_cpu_s", tr("tokens / CPU s"))
        if clock == "cpu"
        else ("inference_tokens_per_s", tr("tokens / s"))
    )
    mib = 2.0**20
    speed = {n: results["methods"][n]["aggregate"][key]["mean"] for n in names}
    memory = {
        n: [None if b is None else b / mib for b in results["methods"][n]["memory"]["inference_peak_bytes"]]
        for n in names
    }
    tokens = results["config"].get("eval_tokens_per_batch")

    def state(i: int) -> tuple[list, dict]:
        sp = [speed[n][i] for n in names]
        mem = [memory[n][i] for n in names]
        ref_sp, ref_mem = speed.get("none", [None] * len(lengths))[i], memory.get("none", [None] * len(lengths))[i]

        def rel(v: float | None, ref: float | None) -> str:
            return "" if v is None or not ref else f"<br>{v / ref:.2f}× NoPE"

        traces = [
            _bar(
                names,
                sp,
                [tr("cannot run") if v is None else f"{v:,.0f}" for v in sp],
                [
                    f"{_label(n)}, L = {lengths[i]}: "
                    + (tr("cannot run") if v is None else f"{v:,.0f} {unit}")
                    + rel(v, ref_sp)
                    for n, v in zip(names, sp)
                ],
                xaxis="x",
                yaxis="y",
            ),
            _bar(
                names,
                mem,
                [tr("cannot run") if v is None else f"{v:.1f}" for v in mem],
                [
                    f"{_label(n)}, L = {lengths[i]}: "
                    + (tr("cannot run") if v is None else f"{v:.1f} MiB")
                    + rel(v, ref_mem)
                    for n, v in zip(names, mem)
                ],
                xaxis="x2",
                yaxis="y2",
            ),
        ]
        top_sp = max((v for v in sp if v is not None), default=1.0)
        top_mem = max((v for v in mem if v is not None), default=1.0)
        layout = {
            "xaxis.range": [0, top_sp * 1.3],
            "xaxis2.range": [0, top_mem * 1.3],
            "title.text": tr(
                "Inference cost at L = {length} bytes ({threads}, batches of {tokens} tokens)<br><sup>{subtitle}</sup>",
                length=_length_label(lengths[i], train_len),
                threads=_threads(results),
                tokens=tokens,
                subtitle=_subtitle(results),
            ),
        }
        return traces, layout

    steps = []
    for i, n in enumerate(lengths):
        traces, layout_update = state(i)
        steps.append((_length_label(n, train_len), traces, layout_update))
    layout = {
        "template": "plotly_white",
        "height": 500,
        "margin": {"t": 90, "l": 10, "r": 30},
        "xaxis": {"domain": [0, 0.46], "title": {"text": tr("throughput ({unit}, no grad)", unit=unit)}},
        "xaxis2": {
            "domain": [0.54, 1.0],
            "anchor": "y2",
            "title": {"text": tr("peak memory of one batch (MiB)")},
        },
        **_method_axes(names),
    }
    fig = slider_figure(steps, slider_label=tr("evaluation length L (bytes)"), layout=layout)
    fig.layout.sliders[0].pad.t = 65  # below the axis titles
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
