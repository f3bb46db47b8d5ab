r"""Live explorer of the chapter *Sinusoidal encoding as Fourier features* (needs a kernel).

Sliders for the dimension :math:`d`, the frequency base, the number of positions and an offset
:math:`\delta`; the figure shows the table :func:`posviz.sinusoidal_encoding` and the offset
similarity :func:`posviz.sinusoidal_offset_similarity` (divided by :math:`d/2`) with
:math:`\pm\delta` marked.
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import torch
from plotly.subplots import make_subplots

from ..absolute import sinusoidal_encoding, sinusoidal_offset_similarity
from ..i18n import tr
from . import Explorer, colorbar_below, explorer, one_thread

__all__ = ["sinusoidal_explorer"]

_CPU = torch.device("cpu")
_HEIGHT = 520
_MARGIN = {"t": 50, "b": 120}  # room below the table for its colour bar

# The look of plotly's default template without its per-trace-type defaults (a smaller widget state).
_GRID = {"gridcolor": "white", "zerolinecolor": "white", "linecolor": "white"}
_TEMPLATE = go.layout.Template(
    layout={
        "plot_bgcolor": "#E5ECF6",
        "font": {"color": "#2a3f5f"},
        "colorway": pio.templates["plotly"].layout.colorway,
        "xaxis": _GRID,
        "yaxis": _GRID,
    }
)


def _state(dim: int, base: float, length: int, offset: int) -> list[dict]:
    """Trace properties for one setting: heatmap, similarity curve, the two marked offsets."""
    reach = max(length - 1, abs(int(offset)), 1)
    delta = torch.arange(-reach, reach + 1, dtype=torch.float64)
    with one_thread():
        pe = sinusoidal_encoding(length, dim, base, device=_CPU).numpy()
        sim = (sinusoidal_offset_similarity(delta, dim, base) / (dim / 2)).numpy()
    marked = np.array([-abs(int(offset)), abs(int(offset))])
    value = float(sim[reach + abs(int(offset))])
    return [
        {"z": pe, "x": np.arange(dim), "y": np.arange(length)},
        {"x": delta.numpy().astype(int), "y": sim},
        {
            "x": marked,
            "y": [value, value],
            # labels away from each other (left of -delta, right of +delta); one label when delta = 0
            "text": ["" if marked[1] == 0 else f"δ = {marked[0]}", f"δ = {marked[1]}: {value:.3f}"],
        },
    ]


def sinusoidal_explorer(
    dim: int = 128,
    base: float = 10000.0,
    length: int = 128,
    offset: int = 16,
) -> Explorer:
    r"""Sliders for ``d``, ``base``, ``length`` and the offset :math:`\delta`; heatmap and similarity curve.

    Left: :math:`PE(p, j)` for :math:`p < \text{length}`. Right:
    :math:`PE(p)\cdot PE(p+\delta) / (d/2)` for :math:`|\delta| <` length, with :math:`\pm\delta` marked (the
    two values are always equal: the similarity is symmetric). An odd ``d`` or a base <= 0 set
    from code shows posviz's message in the status line and keeps the last picture.
    """
    controls = {
        "dim": widgets.IntSlider(value=dim, min=2, max=512, step=2, description="d", continuous_update=False),
        "base": widgets.FloatLogSlider(
            value=base, base=10, min=0.3, max=6, step=0.1, description=tr("base"), continuous_update=False
        ),
        "length": widgets.IntSlider(value=length, min=1, max=1024, description=tr("length"), continuous_update=False),
        "offset": widgets.IntSlider(value=offset, min=0, max=1024, description=tr("offset δ"), continuous_update=False),
    }
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.5, 0.5],
        horizontal_spacing=0.14,
        subplot_titles=("PE(p, j)", "PE(p) · PE(p + δ) / (d/2)"),
    )
    fig.add_trace(
        go.Heatmap(
            z=[[0.0]],
            zmin=-1,
            zmax=1,
            zmid=0,
            colorscale="RdBu",
            reversescale=True,
            colorbar=colorbar_below(fig.layout.xaxis.domain, _HEIGHT - sum(_MARGIN.values()), title={"text": "PE"}),
            hovertemplate=tr("p = %{y}, j = %{x}<br>PE = %{z:.3f}<extra></extra>"),
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Scatter(mode="lines", name=tr("similarity"), hovertemplate=tr("δ = %{x}<br>%{y:.3f}<extra></extra>")),
        row=1,
        col=2,
    )
    fig.add_trace(
        go.Scatter(
            mode="markers+text",
            textposition=["top left", "top right"],
            cliponaxis=False,
            marker={"size": 10, "color": "#d62728"},
            name="±δ",
            hoverinfo="skip",
        ),
        row=1,
        col=2,
    )
    fig.update_layout(height=_HEIGHT, showlegend=False, margin=_MARGIN, template=_TEMPLATE)
    fig.update_xaxes(title_text=tr("dimension j"), row=1, col=1)
    fig.update_yaxes(title_text=tr("position p"), autorange="reversed", row=1, col=1)
    fig.update_xaxes(title_text=tr("offset δ"), row=1, col=2)
    fig.update_yaxes(title_text=tr("cosine similarity"), range=[-1.05, 1.15], row=1, col=2)
    for trace, props in zip(fig.data, _state(dim, base, length, offset)):
        trace.update(props)
    return explorer(controls, _state, fig)
