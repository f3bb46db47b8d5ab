"""Figures for the ALiBi chapter: slopes per head, the bias and its attention, the effective window.

Each function returns a Plotly figure built with :func:`posviz.plots.slider_figure`, so its
slider and buttons work in the static page with no kernel. Every number drawn comes from a
``posviz`` function (:func:`posviz.alibi_slopes`, :func:`posviz.alibi_bias`,
:func:`posviz.attention`, :func:`posviz.alibi.alibi_distance_weights`,
:func:`posviz.alibi.alibi_window_mass`, :func:`posviz.alibi.alibi_effective_window`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from ..alibi import (
    alibi_bias,
    alibi_distance_weights,
    alibi_effective_window,
    alibi_slopes,
    alibi_window_mass,
)
from ..dot_product import attention_weights
from ..i18n import tr, translatable
from ._numbers import significant
from ._sliders import heatmap_trace, slider_figure

__all__ = ["alibi_bias_figure", "alibi_slopes_figure", "alibi_window_figure", "slope_label"]

_CPU = torch.device("cpu")
_F64 = torch.float64
_BLUE, _ORANGE, _GREY = "#1f77b4", "#ff7f0e", "#555555"


def slope_label(m: float) -> str:
    """A slope as a fraction or power of two when it is one: ``1/4``, ``2<sup>-2.5</sup>``, else ``0.3``."""
    if m <= 0 or not math.isfinite(m):
        return f"{m:g}"
    exponent = math.log2(m)
    if abs(exponent - round(exponent)) < 1e-9:
        k = round(exponent)
        return str(2**k) if k >= 0 else f"1/{2**-k}"
    if abs(2 * exponent - round(2 * exponent)) < 1e-9:
        return f"2<sup>{round(2 * exponent) / 2:g}</sup>"
    return f"{m:.4g}"


def _views_with_layout(fig: go.Figure, layouts: Sequence[Mapping[str, Any]]) -> go.Figure:
    """Make the view buttons of a ``slider_figure`` also apply a layout change (e.g. an axis)."""
    buttons = fig.layout.updatemenus[0].buttons
    if len(buttons) != len(layouts):
        raise ValueError(f"{len(buttons)} view buttons but {len(layouts)} layouts")
    for button, layout in zip(buttons, layouts):
        button.method = "update"
        button.args = [button.args[0], dict(layout)]
    fig.update_layout(layouts[0])
    return fig


@translatable
def alibi_slopes_figure(
    head_counts: Sequence[int] = tuple(range(2, 17)), *, active_heads: int = 12, mass: float = 0.9
) -> go.Figure:
    r"""Bars of the slopes :math:`\mu_h` per head; a slider over the number of heads.

    Bars in blue are the geometric sequence of the nearest lower power of two; orange bars are
    the slopes the authors' rule takes from the next power of two (every other one). The view
    buttons switch between the slopes and the bias-only window :math:`w_p` of each head
    (:func:`posviz.alibi.alibi_effective_window` on an unbounded row, ``mass`` :math:`=p`).
    """
    head_counts = [int(n) for n in head_counts]
    if not head_counts or min(head_counts) < 1:
        raise ValueError(f"head_counts must be a non-empty list of integers >= 1, got {head_counts}")
    if active_heads not in head_counts:
        raise ValueError(f"active_heads must be one of head_counts {head_counts}, got {active_heads}")
    percent = f"{100 * mass:g}%"

    def traces(n: int) -> list[go.Bar]:
        slopes = alibi_slopes(n, device=_CPU, dtype=_F64)
        window = alibi_effective_window(slopes, mass).numpy()
        slopes = slopes.numpy()
        lower = 2 ** math.floor(math.log2(n))  # heads 1..lower: the 2^k-head sequence
        heads = np.arange(1, n + 1)
        parts = (slice(0, lower), slice(lower, n))
        names = (
            tr("from the {lower}-head sequence", lower=lower),
            tr("every other slope of the {value}-head sequence", value=2 * lower),
        )
        out = []
        for values, kind in ((slopes, "slope"), (window, "window")):
            for part, name, colour in zip(parts, names, (_BLUE, _ORANGE)):
                labels = [slope_label(m) for m in slopes[part]]
                if kind == "slope":
                    hover = tr("head %{x}<br>μₕ = %{y:.4g} = %{customdata}<extra></extra>")
                else:
                    hover = tr(
                        "head %{x}<br>{percent} window: %{y:.0f} tokens<br>(μₕ = %{customdata})<extra></extra>",
                        percent=percent,
                    )
                out.append(
                    go.Bar(
                        x=heads[part],
                        y=values[part],
                        customdata=labels,
                        name=name,
                        legendgroup=name,
                        marker_color=colour,
                        hovertemplate=hover,
                    )
                )
        return out

    def title(n: int) -> str:
        if math.log2(n).is_integer():
            return tr(
                "{n} heads: <span style='color:{BLUE}'>geometric, start and ratio 2<sup>-8/{n}</sup></span>",
                n=n,
                BLUE=_BLUE,
            )
        lower = 2 ** math.floor(math.log2(n))
        return tr(
            "{n} heads: <span style='color:{BLUE}'>the {lower}-head slopes</span>, then "
            "<span style='color:{ORANGE}'>every other {value}-head slope</span> (not "
            "monotone)",
            n=n,
            BLUE=_BLUE,
            lower=lower,
            ORANGE=_ORANGE,
            value=2 * lower,
        )

    steps = [(str(n), (lambda n=n: traces(n)), {"title.text": title(n)}) for n in head_counts]
    powers = [2.0**-k for k in range(0, 9)]
    layout = {
        "height": 480,
        "margin": {"t": 110, "b": 40},
        "bargap": 0.15,
        "showlegend": False,
        "xaxis": {"title": {"text": tr("head h")}, "range": [0.4, max(head_counts) + 0.6], "dtick": 1},
    }
    slope_axis = {
        "yaxis.type": "log",
        "yaxis.title.text": tr("slope μₕ (log scale)"),
        "yaxis.tickvals": powers,
        "yaxis.ticktext": [slope_label(m) for m in powers],
        "yaxis.range": [math.log10(2**-8.5), math.log10(1.0)],
    }
    window_axis = {
        "yaxis.type": "log",
        "yaxis.title.text": tr("{percent} window w (tokens, log scale)", percent=percent),
        "yaxis.tickvals": [1, 3, 10, 30, 100, 300, 1000],
        "yaxis.ticktext": ["1", "3", "10", "30", "100", "300", "1000"],
        "yaxis.range": [math.log10(0.8), math.log10(1500)],
    }
    fig = slider_figure(
        steps,
        slider_label=tr("number of heads"),
        layout=layout,
        active=head_counts.index(active_heads),
        views=[(tr("slope μₕ"), [0, 1]), (tr("{percent} window (equal q·k)", percent=percent), [2, 3])],
    )
    return _views_with_layout(fig, [slope_axis, window_axis])


def _masked(values: torch.Tensor) -> np.ndarray:
    """A [L, L] tensor as an array with the future (key j > query i) blanked."""
    z = values.detach().cpu().double().numpy().copy()
    z[np.triu_indices_from(z, k=1)] = np.nan
    return z


@translatable
def alibi_bias_figure(num_heads: int = 8, length: int = 12) -> go.Figure:
    """The bias of each head as a heatmap (query ``i`` down, key ``j`` across); a slider over heads.

    Views: the paper's bias :math:`-\\mu_h(i-j)`, the form :math:`+\\mu_h\\,j` of the authors' code and
    of BLOOM, and the causal attention weights that both give when every :math:`q_i^\\top k_j` is
    equal (:func:`posviz.attention` with zero ``q`` and ``k``). The title reports the largest
    difference between the weights of the two forms. Future keys (``j > i``) are masked (blank).
    """
    slopes = alibi_slopes(num_heads, device=_CPU, dtype=_F64)
    paper = alibi_bias(num_heads, length, device=_CPU, dtype=_F64)  # -mu_h |i - j|
    j = torch.arange(length, dtype=_F64)
    code = (slopes[:, None] * j)[:, None, :].expand(num_heads, length, length)  # +mu_h j, every row
    zeros = torch.zeros(num_heads, length, 1, dtype=_F64)  # equal q.k: only the bias matters
    w_paper = attention_weights(zeros, zeros, bias=paper, causal=True)
    w_code = attention_weights(zeros, zeros, bias=code, causal=True)
    top = float(slopes.max()) * (length - 1)
    axis = {"x": list(range(length)), "y": list(range(length))}
    common = {"xgap": 1, "ygap": 1, "texttemplate": "%{z:.2g}", "textfont": {"size": 10}}

    def traces(h: int) -> list[go.Heatmap]:
        def hover(value: str) -> str:
            return tr("query i = %{y}<br>key j = %{x}<br>") + value + "<extra></extra>"

        return [
            heatmap_trace(
                _masked(paper[h]),
                symmetric=True,
                zmin=-top,
                zmax=top,
                colorbar={"title": {"text": tr("bias")}},
                hovertemplate=hover("−μₕ(i−j) = %{z:.4f}"),
                **axis,
                **common,
            ),
            heatmap_trace(
                _masked(code[h]),
                symmetric=True,
                zmin=-top,
                zmax=top,
                colorbar={"title": {"text": tr("bias")}},
                hovertemplate=hover("μₕ·j = %{z:.4f}"),
                **axis,
                **common,
            ),
            heatmap_trace(
                _masked(w_paper[h]),
                zmin=0,
                zmax=1,
                colorscale="Viridis",
                colorbar={"title": {"text": tr("weight")}},
                hovertemplate=hover(tr("weight aᵢⱼ = %{z:.4f}")),
                **axis,
                **common,
            ),
        ]

    def title(h: int) -> str:
        diff = float((w_paper[h] - w_code[h]).abs().max())
        return tr(
            "head {value} of {num_heads}: μₕ = {slope} = {slopes:.4g}<br><sub>max "
            "|weights(−μₕ(i−j)) − weights(μₕ·j)| = {diff:.1e} (future keys j > i "
            "masked)</sub>",
            value=h + 1,
            num_heads=num_heads,
            slope=slope_label(float(slopes[h])),
            slopes=float(slopes[h]),
            diff=diff,
        )

    steps = [(str(h + 1), (lambda h=h: traces(h)), {"title.text": title(h)}) for h in range(num_heads)]
    layout = {
        "height": 580,
        "margin": {"t": 140, "b": 40},
        "xaxis": {"title": {"text": tr("key position j")}, "dtick": 1},
        "yaxis": {"title": {"text": tr("query position i")}, "dtick": 1, "autorange": "reversed"},
    }
    return slider_figure(
        steps,
        slider_label=tr("head"),
        layout=layout,
        views=[
            (tr("bias −μₕ(i−j) (paper)"), [0]),
            (tr("bias +μₕ·j (authors' code, BLOOM)"), [1]),
            (tr("weights, equal q·k"), [2]),
        ],
    )


@translatable
def alibi_window_figure(
    num_heads: int = 8, lengths: Sequence[int] = (32, 256, 2048), *, mass: float = 0.9
) -> go.Figure:
    """Bias-only attention of a causal row by distance, and the mass within each distance.

    Top: the weights :math:`a(\\delta)` (log scale) of the last query of a row of ``L`` keys
    (:func:`posviz.alibi.alibi_distance_weights`); bottom: the mass within distance :math:`w`
    (:func:`posviz.alibi.alibi_window_mass`) and the window :math:`w_p`
    (:func:`posviz.alibi.alibi_effective_window`). A slider over heads; buttons over ``L``.
    """
    lengths = [int(n) for n in lengths]
    slopes = alibi_slopes(num_heads, device=_CPU, dtype=_F64)
    percent = f"{100 * mass:g}%"
    data = {}
    for n in lengths:
        delta = torch.arange(n)
        data[n] = (  # 4 significant digits: the slider steps store every value as JSON text
            significant(alibi_distance_weights(slopes, n).numpy()),  # [H, L]
            significant(alibi_window_mass(slopes[:, None], delta[None, :], n).numpy()),  # [H, L]
            alibi_effective_window(slopes, mass, n).numpy(),  # [H]
        )

    def traces(h: int) -> list[go.Scatter]:
        out = []
        for n in lengths:
            weights, cum, window = data[n]
            w = int(window[h])
            out += [
                go.Scatter(
                    x0=0,  # x = 0, 1, ..., L - 1 without storing it in every step
                    dx=1,
                    y=weights[h],
                    mode="lines+markers" if n <= 64 else "lines",
                    marker={"size": 4},
                    line={"color": _BLUE},
                    name=tr("weight a(δ)"),
                    hovertemplate=tr("distance δ = %{x}<br>weight = %{y:.3g}<extra></extra>"),
                    xaxis="x",
                    yaxis="y",
                ),
                go.Scatter(
                    x0=0,  # x = 0, 1, ..., L - 1 without storing it in every step
                    dx=1,
                    y=cum[h],
                    mode="lines",
                    line={"color": _ORANGE},
                    name=tr("mass within δ ≤ w"),
                    hovertemplate=tr("distance ≤ %{x}: %{y:.3f} of the row<extra></extra>"),
                    xaxis="x2",
                    yaxis="y2",
                ),
                go.Scatter(
                    x=[w, w],
                    y=[0, float(cum[h][w])],
                    mode="lines+markers",
                    line={"color": _GREY, "dash": "dash"},
                    marker={"size": [0, 8]},
                    name=tr("{percent} window wₚ", percent=percent),
                    hovertemplate=tr("{percent} window: w = %{x}<br>mass %{y:.3f}<extra></extra>", percent=percent),
                    xaxis="x2",
                    yaxis="y2",
                ),
            ]
        return out

    def title(h: int) -> str:
        m = float(slopes[h])
        windows = ", ".join(f"{int(data[n][2][h])} (L = {n})" for n in lengths)
        return tr(
            "head {value} of {num_heads}, μₕ = {slope}: {percent} window "
            "{windows}<br><sub>long-row rule ln(10)/μₕ = {value2:.1f}; equal q·k, last query "
            "of a row of L keys</sub>",
            value=h + 1,
            num_heads=num_heads,
            slope=slope_label(m),
            percent=percent,
            windows=windows,
            value2=math.log(10) / m,
        )

    sub = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, row_heights=[0.55, 0.45])
    sub.update_layout(
        height=560,
        margin={"t": 130, "b": 40},
        legend={"x": 1.02, "y": 1, "xanchor": "left", "yanchor": "top"},
    )
    sub.update_yaxes(type="log", range=[-6, 0], title_text=tr("weight a(δ) (log)"), exponentformat="power", row=1)
    sub.update_yaxes(range=[0, 1.05], title_text=tr("mass within w"), row=2)
    sub.update_xaxes(title_text=tr("distance δ = i − j (tokens)"), row=2)
    steps = [(str(h + 1), (lambda h=h: traces(h)), {"title.text": title(h)}) for h in range(num_heads)]
    per = 3
    views = [(f"L = {n}", list(range(per * k, per * (k + 1)))) for k, n in enumerate(lengths)]
    fig = slider_figure(steps, slider_label=tr("head"), layout=sub.layout, views=views)
    fig.add_shape(  # the target mass p, across the bottom panel
        type="line",
        xref="x2 domain",
        yref="y2",
        x0=0,
        x1=1,
        y0=mass,
        y1=mass,
        line={"color": _GREY, "width": 1, "dash": "dot"},
    )
    return fig
