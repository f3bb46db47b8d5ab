r"""Figures of the round-three methods' mechanics (the chapter *The lab grows*): what FIRE's
network reads as the query moves past the training length."""

from __future__ import annotations

import math

import plotly.graph_objects as go
import torch

from .._validate import check_int, check_positive
from ..distance_bias import fire_normalized_distance
from ..i18n import tr, translatable
from ..plots._sliders import slider_figure

__all__ = ["fire_input_figure"]

_F64 = torch.float64


@translatable
def fire_input_figure(
    train_len: int = 64,
    *,
    threshold: float = 16.0,
    c: float = 0.1,
    queries: tuple[int, ...] = (8, 32, 63, 128, 256, 512, 1023),
) -> go.Figure:
    r"""What FIRE's MLP reads for one query, against the key's distance :math:`r = i - j`, with a
    slider over the query position :math:`i`.

    Two inputs a learned function of distance could read (:func:`posviz.fire_normalized_distance`
    computes the first):

    * FIRE's :math:`u = \psi(r)/\psi(\max(L, i))`, :math:`\psi(x) = \log(c\,x + 1)`, which stays
      in :math:`[0, 1]` at every query position ("progressive interpolation");
    * the log distance without the normaliser, :math:`\psi(r)/\psi(L_{\text{train}} - 1)`: scaled
      so that the training rows fill :math:`[0, 1]` too, it leaves that range past the training length.

    The shaded band is the range of inputs the training rows contain (:math:`[0, 1]` for both).

    Args:
        train_len: :math:`L_{\text{train}} \ge 2`.
        threshold: FIRE's :math:`L > 0` (the lab starts it at a quarter of the training length).
        c: :math:`c > 0`, the log transform's scale (the paper's initial 0.1).
        queries: the slider's query positions, each :math:`\ge 1`.
    """
    train_len = check_int("train_len", train_len, minimum=2)
    threshold = check_positive("threshold", threshold)
    c = check_positive("c", c)
    if not queries:
        raise ValueError("queries must name at least one query position, got ()")
    queries = tuple(check_int("queries[]", q, minimum=1) for q in queries)
    top = max(queries)
    u = fire_normalized_distance(top + 1, c=c, threshold=threshold, eps=0.0, dtype=_F64)  # (T, T)
    raw_scale = math.log(c * (train_len - 1) + 1)  # psi(L_train - 1)
    y_top = max(1.05, math.log(c * top + 1) / raw_scale * 1.05)

    def traces(i: int) -> list[go.Scatter]:
        r = torch.arange(i + 1, dtype=_F64)  # distances 0..i of the keys j = i..0
        fire = u[i, i - r.long()]  # u(i, i - r)
        raw = torch.log(c * r + 1) / raw_scale  # psi(r) / psi(L_train - 1)
        return [
            go.Scatter(
                x=r.tolist(),
                y=fire.tolist(),
                mode="lines",
                name=tr("FIRE: ψ(r)/ψ(max(L, i))"),
                line={"color": "#1b7837", "width": 3},
                hovertemplate=tr("distance r = %{x}<br>FIRE's input u = %{y:.3f}") + "<extra></extra>",
            ),
            go.Scatter(
                x=r.tolist(),
                y=raw.tolist(),
                mode="lines",
                name=tr("log distance, not normalised: ψ(r)/ψ(Lₜᵣₐᵢₙ − 1)"),
                line={"color": "#762a83", "width": 2, "dash": "dash"},
                hovertemplate=tr("distance r = %{x}<br>unnormalised input = %{y:.3f}") + "<extra></extra>",
            ),
        ]

    def title(i: int) -> str:
        raw_max = math.log(c * i + 1) / raw_scale
        return tr(
            "query i = {i}, {k:.1f}× the training length {n}:<br>"
            "FIRE's input up to {fire:.2f}, the unnormalised one up to {raw:.2f}",
            i=i,
            k=(i + 1) / train_len,
            n=train_len,
            fire=float(u[i, 0]),
            raw=raw_max,
        )

    steps = [(str(i), (lambda i=i: traces(i)), {"title.text": title(i)}) for i in queries]
    layout = {
        "height": 520,
        "margin": {"t": 150, "b": 60},
        "xaxis": {"title": {"text": tr("distance to the key r = i − j")}, "range": [0, top], "rangemode": "tozero"},
        "yaxis": {"title": {"text": tr("input of the learned function")}, "range": [0, y_top]},
        "legend": {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
        "shapes": [
            {
                "type": "rect",
                "xref": "paper",
                "x0": 0,
                "x1": 1,
                "y0": 0,
                "y1": 1,
                "fillcolor": "#dddddd",
                "opacity": 0.4,
                "line": {"width": 0},
                "layer": "below",
            },
        ],
        "annotations": [
            {
                "xref": "paper",
                "x": 0.99,
                "y": 1,
                "xanchor": "right",
                "yanchor": "bottom",
                "showarrow": False,
                "text": tr("range seen in training"),
            },
        ],
    }
    return slider_figure(steps, slider_label=tr("query position i"), layout=layout, active=len(queries) - 1)
