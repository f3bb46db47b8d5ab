"""Figures with a slider over the evaluation lengths: perplexity and inference cost at one length."""

from __future__ import annotations

from typing import Literal

import plotly.graph_objects as go

from ..i18n import tr, translatable
from ..plots import slider_figure
from ._style import _bar, _label, _length_label, _method_axes, _subtitle, _threads
from .results import perplexity_ratio, validate_results
from .tables import spread_words

__all__ = ["inference_at_length_figure", "perplexity_at_length_figure"]


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
                "{label}<br>L = {lengths}: perplexity {m:.3f}<br>{spread}",
                label=_label(n),
                lengths=lengths[i],
                m=m,
                spread=spread_words(None),
            )
            if aggs[n]["n"][i] == 1
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
