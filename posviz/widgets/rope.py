"""The RoPE chapter's live explorer (needs a running kernel: JupyterLab, Colab, Binder).

Controls: the head dimension ``d``, the frequency base, the sequence length ``L``, the query
position ``m``, the offset ``r = m - n`` of the key, and the pair layout. Panels: three rotation
planes (the fastest, a middle and the slowest pair) with the query at ``m`` and the key at
``n = m - r``; the score matrix of one query and one key vector placed at every position
(:func:`posviz.rope.rope_scores`) with the cell ``(m, n)`` marked; the mean partial sum S̄(r),
the distance factor of RoFormer's decay bound (:func:`posviz.rope_mean_partial_sum`), with the
distance ``|r|`` marked.
"""

from __future__ import annotations

import math

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import torch
from plotly.subplots import make_subplots

from ..frequencies import rope_frequencies
from ..i18n import N_, tr
from ..plots.rope import K_COLOR, Q_COLOR, _unit_pairs
from ..rope import apply_rope, rope_complex_view, rope_mean_partial_sum, rope_scores
from . import Explorer, colorbar_below, explorer

__all__ = ["rope_explorer"]

_RADIUS = 1.5  # pairs have length 1 (interleaved) or at most sqrt(2) (the same vectors read as half pairs)
_HEIGHT = 760
_MARGIN = {"t": 40, "b": 110, "l": 60, "r": 20}  # the bottom holds the score colour bar
_GAP = 3.4  # distance between the centres of the three planes, drawn side by side on one pair of axes
_NAMES = (N_("fastest"), N_("middle"), N_("slowest"))


def _pairs_shown(dim: int) -> list[int]:
    last = dim // 2 - 1
    return [0, last // 2, last]  # fastest, middle, slowest (all 0 when d = 2)


def _arrows(tips: list[complex], labels: list[str]) -> dict:
    """One trace for the three arrows: segments from each plane's centre, split by ``None``."""
    x: list[float | None] = []
    y: list[float | None] = []
    text: list[str] = []
    for c, (z, label) in enumerate(zip(tips, labels)):
        x += [c * _GAP, c * _GAP + z.real, None]
        y += [0.0, z.imag, None]
        text += ["", label, ""]
    return {"x": x, "y": y, "hovertext": text}


def _update(dim: int, base: float, length: int, position: int, offset: int, layout: str) -> list[dict]:
    q = _unit_pairs(dim, 0, 0, "interleaved")  # the same vectors whatever the layout:
    k = _unit_pairs(dim, 0, 1, "interleaved")  # "half" reads them with the other pairing
    m = float(position)
    n = m - offset
    rq = rope_complex_view(apply_rope(q[None], torch.tensor([m]), base, layout=layout), layout=layout)[0]
    rk = rope_complex_view(apply_rope(k[None], torch.tensor([n]), base, layout=layout), layout=layout)[0]
    theta = rope_frequencies(dim, base, device="cpu", dtype=torch.float64)

    pairs = _pairs_shown(dim)
    zq, zk = [complex(rq[i]) for i in pairs], [complex(rk[i]) for i in pairs]
    labels = [
        tr(
            "{name} pair i = {i}<br>θ<sub>i</sub> = {theta:.3g} rad/token<br>share of the score: {real:.3f}",
            name=tr(name),
            i=i,
            theta=theta[i].item(),
            real=(a * b.conjugate()).real,
        )
        for name, i, a, b in zip(_NAMES, pairs, zq, zk)
    ]
    out = [
        {},  # the three unit circles stay
        _arrows(zq, [tr("query pair {i} at m = {m:g}", i=i, m=m) for i in pairs]),
        _arrows(zk, [tr("key pair {i} at n = {n:g}", i=i, n=n) for i in pairs]),
        {"text": labels},
    ]
    scores = rope_scores(q.expand(length, dim), k.expand(length, dim), base=base, layout=layout)
    inside = 0 <= n < length and 0 <= m < length
    out += [
        {"z": scores.numpy(), "x": np.arange(length), "y": np.arange(length)},
        {"x": [n] if inside else [], "y": [m] if inside else []},
    ]
    reach = max(length - 1, abs(offset), 1)
    r = torch.arange(0, reach + 1, dtype=torch.float64)
    bound = rope_mean_partial_sum(r, dim, base)
    out += [
        {"x": r.numpy(), "y": bound.numpy()},
        {"x": [abs(offset)], "y": [bound[abs(offset)].item()]},
    ]
    return out


def _figure() -> go.Figure:
    fig = make_subplots(
        rows=2,
        cols=2,
        specs=[[{"colspan": 2}, None], [{}, {}]],
        row_heights=[0.45, 0.55],
        column_widths=[0.38, 0.62],
        vertical_spacing=0.12,
        horizontal_spacing=0.16,
        subplot_titles=[
            tr("three pairs: query at m (blue), key at n = m − r (orange)"),
            tr("score of query m and key n"),
            tr("mean partial sum S̄ vs |m − n|"),
        ],
    )
    t = np.linspace(0, 2 * math.pi, 49)
    circles_x = np.concatenate([np.append(c * _GAP + np.cos(t), np.nan) for c in range(3)])
    circles_y = np.concatenate([np.append(np.sin(t), np.nan) for _ in range(3)])
    fig.add_trace(
        go.Scatter(x=circles_x, y=circles_y, mode="lines", line={"color": "#bbb", "dash": "dot"}, hoverinfo="skip"),
        row=1,
        col=1,
    )
    for color, name in ((Q_COLOR, tr("query at m")), (K_COLOR, tr("key at n = m − r"))):
        fig.add_trace(
            go.Scatter(
                x=[0, 1],
                y=[0, 0],
                mode="lines+markers",
                line={"color": color, "width": 3},
                marker={"symbol": "arrow", "angleref": "previous", "size": [0, 12, 0] * 3, "color": color},
                name=name,
                hoverinfo="text",
            ),
            row=1,
            col=1,
        )
    fig.add_trace(
        go.Scatter(
            x=[c * _GAP for c in range(3)],
            y=[-1.02] * 3,
            mode="text",
            text=[""] * 3,
            textposition="bottom center",
            hoverinfo="skip",
        ),
        row=1,
        col=1,
    )
    fig.update_xaxes(range=[-_RADIUS, 2 * _GAP + _RADIUS], visible=False, constrain="domain", row=1, col=1)
    fig.update_yaxes(range=[-2.45, 1.1], visible=False, scaleanchor="x", scaleratio=1, row=1, col=1)
    fig.add_trace(
        go.Heatmap(
            z=[[0.0]],
            colorscale="RdBu",
            reversescale=True,
            zmid=0,
            hovertemplate=tr("query m = %{y}, key n = %{x}<br>score = %{z:.3f}<extra></extra>"),
        ),
        row=2,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=[],
            y=[],
            mode="markers",
            marker={"symbol": "square-open", "size": 10, "color": "black"},
            hovertemplate=tr("cell (m, n): m = %{y}, n = %{x}<extra></extra>"),
        ),
        row=2,
        col=1,
    )
    fig.add_trace(
        go.Scatter(x=[], y=[], mode="lines", line={"color": "#2ca02c"}, hovertemplate="|m − n| = %{x}<br>S̄ = %{y:.3f}"),
        row=2,
        col=2,
    )
    fig.add_trace(
        go.Scatter(
            x=[],
            y=[],
            mode="markers",
            marker={"size": 10, "color": "black"},
            hovertemplate=tr("|r| = %{x}<br>S̄ = %{y:.3f}<extra></extra>"),
        ),
        row=2,
        col=2,
    )
    # under the heatmap: a bar beside it lands on the right panel's axis title at some output width
    fig.data[4].colorbar = colorbar_below(
        fig.layout.xaxis2.domain, _HEIGHT - _MARGIN["t"] - _MARGIN["b"], title={"text": tr("score")}
    )
    fig.update_yaxes(autorange="reversed", title_text=tr("query m"), row=2, col=1)
    fig.update_xaxes(title_text=tr("key n"), row=2, col=1)
    fig.update_xaxes(title_text=tr("|m − n| (tokens)"), row=2, col=2)
    fig.update_yaxes(title_text=tr("S̄ = (1/(d/2))·Σ|S<sub>j</sub>|"), rangemode="tozero", row=2, col=2)
    fig.update_layout(height=_HEIGHT, margin=_MARGIN, showlegend=False)
    # The default template's layout part is all this figure needs (a smaller widget state).
    fig.layout.template = go.layout.Template(layout=pio.templates["plotly"].layout)
    return fig


def rope_explorer(
    dim: int = 64,
    base: float = 10000.0,
    length: int = 48,
    position: int = 10,
    offset: int = 4,
    layout: str = "interleaved",
) -> Explorer:
    """Live RoPE explorer: sliders for ``d``, base, length ``L``, query position ``m`` and offset
    ``r = m - n``, and a pair-layout dropdown (the same vectors read with the other pairing).

    Every update recomputes with :func:`~posviz.apply_rope`, :func:`~posviz.rope.rope_scores` and
    :func:`~posviz.rope_mean_partial_sum`; a bad value (say an odd ``d`` typed in) shows a one-line
    message and keeps the last figure.
    """
    style = {"description_width": "initial"}
    controls = {
        "dim": widgets.IntSlider(value=dim, min=2, max=256, step=2, description="d", style=style),
        "base": widgets.FloatLogSlider(
            value=base, base=10, min=0, max=7, step=0.1, description=tr("base"), style=style
        ),
        "length": widgets.IntSlider(value=length, min=2, max=256, description=tr("length L"), style=style),
        "position": widgets.IntSlider(value=position, min=0, max=4096, description=tr("query m"), style=style),
        "offset": widgets.IntSlider(value=offset, min=-256, max=256, description=tr("offset r = m − n"), style=style),
        "layout": widgets.Dropdown(
            value=layout, options=["interleaved", "half"], description=tr("layout"), style=style
        ),
    }
    return explorer(controls, _update, _figure())
