"""The ALiBi chapter's live explorer (needs a kernel: JupyterLab, Colab, Binder).

Sliders for the number of heads, the head, the row length and a factor that scales the paper's
slopes; the figure shows that head's bias (the first positions) and the attention its bias alone
gives the last query of a causal row, by distance, with the bias-only window, over the same
curves of the other heads (so that a change of the number of heads shows: head ``h`` of ``H``
often keeps its slope when ``H`` changes, the set of slopes does not).
"""

from __future__ import annotations

import math

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from ..alibi import alibi_bias, alibi_distance_weights, alibi_effective_window, alibi_slopes
from ..i18n import tr
from ..plots.alibi import slope_label
from . import Explorer, colorbar_below, explorer

__all__ = ["alibi_explorer"]

_CPU = torch.device("cpu")
_F64 = torch.float64
_HEIGHT = 520
_MARGIN = {"t": 60, "b": 140}  # room below the panels for the colour bar and the legend
MAX_LENGTH = 1 << 16
"""The longest row the explorer draws (a longer one is refused with a message)."""
_FLOOR = 1e-9  # below the weight axis (1e-8 .. 1): where the other heads' curves may stop
_SAMPLES = 48  # points per other head: on the log axis a(δ) is a straight line, so few suffice


def _other_heads(slopes: torch.Tensor, head: int, length: int) -> dict:
    """One trace of the curves a(δ) of every head but ``head`` (1-based), broken by ``None``.

    On the log weight axis each curve is a straight line (a(δ) ∝ e^(-mδ)) until it leaves the
    axis, so it is drawn through a few points up to where it falls below ``_FLOOR``.
    """
    others = torch.cat([slopes[: head - 1], slopes[head:]])
    x: list = []
    y: list = []
    if len(others):
        weights = alibi_distance_weights(others, length).numpy()  # [H - 1, L]
        for row in weights:
            below = np.flatnonzero(row < _FLOOR)
            end = int(below[0]) if len(below) else length - 1  # the first point off the axis ends it
            picked = np.unique(np.linspace(0, end, min(_SAMPLES, end + 1)).round().astype(int))
            x += [*picked.tolist(), None]
            y += [*row[picked].tolist(), None]
    count = len(others)
    name = tr("the other {count} heads", count=count) if count != 1 else tr("the other head")
    return {"x": x, "y": y, "name": name if count else tr("no other head"), "visible": bool(count)}


def _state(num_heads: int, head: int, length: int, scale: float, mass: float, shown: int) -> list[dict]:
    if length > MAX_LENGTH:
        raise ValueError(f"length must be <= {MAX_LENGTH} in the explorer, got {length}")
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale >= 0):
        raise ValueError(f"slope scale must be a finite number >= 0, got {scale!r}")
    head = min(max(int(head), 1), int(num_heads))  # a head past the last one shows the last one
    slopes = alibi_slopes(num_heads, device=_CPU, dtype=_F64) * scale
    m = slopes[head - 1 : head]
    n = min(length, shown)
    bias = (alibi_bias(1, n, slopes=m, device=_CPU, dtype=_F64)[0] + 0.0).tolist()  # + 0.0: no -0.0
    for i, row in enumerate(bias):  # causal: future keys are masked (None: JSON has no NaN for widgets)
        row[i + 1 :] = [None] * (n - i - 1)
    lowest = float(m) * (n - 1)
    weights = alibi_distance_weights(m[0], length).numpy()
    window = int(alibi_effective_window(m[0], mass, length))
    rule = f"ln(10)/μₕ ≈ {math.log(10) / float(m):.1f}" if float(m) > 0 else tr("μₕ = 0: uniform")
    ticks = list(range(n))
    others = _other_heads(slopes, head, length)
    return [
        {
            "z": bias,
            "x": ticks,
            "y": ticks,
            "zmin": -lowest if lowest > 0 else -1.0,
            "zmax": 0.0,
            "colorbar": {"title": {"text": tr("bias, head {head} of {num_heads}", head=head, num_heads=num_heads)}},
        },
        others,
        {
            "x": np.arange(length),
            "y": weights,
            "name": tr("weight a(δ), μₕ = {slope}", slope=slope_label(float(m))),
        },
        {
            "x": [window, window],
            "y": [1e-9, 1.0],
            "name": tr("{value:g}% window: w = {window} ({rule})", value=100 * mass, window=window, rule=rule),
        },
    ]


def alibi_explorer(
    num_heads: int = 8,
    head: int = 4,
    length: int = 512,
    scale: float = 1.0,
    *,
    mass: float = 0.9,
    shown: int = 24,
) -> Explorer:
    """Sliders: number of heads, head, row length ``L`` and a factor on the paper's slopes.

    Left: the bias :math:`-\\mu_h(i-j)` of the chosen head on the first ``shown`` positions (future
    keys blank). Right: the weights :math:`a(\\delta)` that the bias alone gives the last query
    of a row of ``L`` keys (:func:`posviz.alibi.alibi_distance_weights`, log scale) and the window
    holding ``mass`` of them (:func:`posviz.alibi.alibi_effective_window`), over the same weights
    of the other heads (grey), so that the number of heads changes the picture even where the
    chosen head keeps its slope.
    """
    controls = {
        "num_heads": widgets.IntSlider(value=num_heads, min=1, max=64, description=tr("heads")),
        "head": widgets.IntSlider(value=min(head, num_heads), min=1, max=num_heads, description=tr("head")),
        "length": widgets.IntSlider(value=length, min=1, max=4096, description=tr("length L")),
        "scale": widgets.FloatLogSlider(value=scale, base=2, min=-6, max=4, step=0.25, description=tr("slope ×")),
    }

    def follow(change: dict) -> None:  # the head slider ends at the last head
        controls["head"].max = max(1, int(change["new"]))

    controls["num_heads"].observe(follow, names="value")  # registered first: runs before the redraw

    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.42, 0.58],
        horizontal_spacing=0.12,
        subplot_titles=(tr("bias of the head (first positions)"), tr("bias-only attention of the last query")),
    )
    fig.add_trace(
        go.Heatmap(
            z=[[0.0]],
            colorscale="Blues_r",
            xgap=1,
            ygap=1,
            colorbar=colorbar_below(fig.layout.xaxis.domain, _HEIGHT - sum(_MARGIN.values())),
            hovertemplate=tr("query i = %{y}<br>key j = %{x}<br>bias = %{z:.4f}<extra></extra>"),
        ),
        row=1,
        col=1,
    )
    fig.add_trace(  # the other heads, under the chosen one
        go.Scatter(
            x=[0], y=[1.0], mode="lines", line={"color": "#c7c7c7", "width": 1}, hoverinfo="skip", legendrank=1001
        ),
        row=1,
        col=2,
    )
    fig.add_trace(
        go.Scatter(x=[0], y=[1.0], mode="lines", line={"color": "#1f77b4"}, hovertemplate="δ = %{x}: %{y:.3g}"),
        row=1,
        col=2,
    )
    fig.add_trace(
        go.Scatter(x=[0, 0], y=[1e-9, 1.0], mode="lines", line={"color": "#555555", "dash": "dash"}),
        row=1,
        col=2,
    )
    fig.update_layout(
        height=_HEIGHT,
        margin=_MARGIN,
        legend={"orientation": "h", "x": 0.45, "y": -58 / (_HEIGHT - sum(_MARGIN.values())), "yanchor": "top"},
    )
    fig.update_xaxes(title_text=tr("key j"), row=1, col=1)
    fig.update_yaxes(title_text=tr("query i"), autorange="reversed", row=1, col=1)
    fig.update_xaxes(title_text=tr("distance δ = i − j (tokens)"), row=1, col=2)
    fig.update_yaxes(title_text=tr("weight (log)"), type="log", range=[-8, 0], exponentformat="power", row=1, col=2)

    def update(num_heads: int, head: int, length: int, scale: float) -> list[dict]:
        return _state(num_heads, head, length, scale, mass, shown)

    for trace, values in zip(fig.data, update(**{k: c.value for k, c in controls.items()})):
        trace.update(values)
    return explorer(controls, update, fig)
