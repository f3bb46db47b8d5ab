"""Live explorer for the chapter *Why position matters: the attention math* (needs a kernel).

:func:`attention_explorer` draws the attention weights of a random sequence and how much its
outputs change when the sequence is shuffled, recomputed with :mod:`posviz.attention` whenever a
control moves.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import ipywidgets as widgets
import plotly.graph_objects as go
import torch

from .._validate import check_int, check_positive
from ..dot_product import self_attention
from ..i18n import tr
from ..plots._sliders import heatmap_trace
from ..plots.attention import METHOD_LABELS, position_kwargs, toy_projections
from . import Explorer, explorer

__all__ = ["AttentionState", "attention_explorer", "attention_state"]


class AttentionState(NamedTuple):
    """What the explorer draws."""

    weights: torch.Tensor
    """Attention weights ``[L, L]`` of the unshuffled sequence."""
    difference: torch.Tensor
    """``Attn(x[π]) - Attn(x)[π]``, ``[L, d]``."""
    output_scale: float
    """Largest absolute output entry (the colour range of ``difference``)."""
    gap: float
    """Largest absolute entry of ``difference``."""


def attention_state(
    length: int, dim: int, seed: int, temperature: float, method: str, base: float, slope: float
) -> AttentionState:
    """The explorer's numbers, as an :class:`AttentionState`.

    A seeded standard-normal sequence ``x: [L, d]`` goes through one head
    (:func:`posviz.self_attention` with :func:`~posviz.plots.attention.toy_projections`,
    scores multiplied by ``1 / (temperature · √d)``), with position put in by ``method`` (see
    :func:`~posviz.plots.attention.position_kwargs`: ``base`` for the sinusoidal encoding and
    RoPE, ``slope`` for ALiBi). ``difference`` is ``Attn(x[π]) - Attn(x)[π]`` for a seeded
    shuffle ``π`` and ``gap`` its largest absolute entry.

    Raises:
        ValueError: an argument out of range (an odd ``dim`` with the sinusoidal encoding or
            RoPE, a temperature <= 0, ...), naming the argument.
    """
    length = check_int("length", length, minimum=1, maximum=512)
    dim = check_int("dim", dim, minimum=1, maximum=1024)
    seed = check_int("seed", seed, minimum=0)
    temperature = check_positive("temperature", temperature)
    kwargs = position_kwargs(method, length, dim, base=base, alibi_slope=slope)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(length, dim, generator=g)
    perm = torch.randperm(length, generator=g)
    w_q, w_k, w_v = toy_projections(dim, seed=seed)
    scale = 1.0 / (temperature * math.sqrt(dim))
    out, weights = self_attention(x, w_q, w_k, w_v, scale=scale, **kwargs)
    out_p, _ = self_attention(x[perm], w_q, w_k, w_v, scale=scale, **kwargs)
    diff = out_p - out[perm]
    return AttentionState(weights, diff, float(out.abs().max()), float(diff.abs().max()))


def _title(values: dict) -> str:
    method = values["method"]
    knob = {
        "sinusoidal": tr(" (base {base:g})", base=values["base"]),
        "rope": tr(" (base {base:g})", base=values["base"]),
        "alibi": tr(" (slope {slope:.3g})", slope=values["slope"]),
    }
    return tr(
        "L = {length}, d = {dim}, seed {seed}, T = {temperature:.2g}, {method}{knob}"
        "<br>after a random shuffle π: max |Attn(πx) − π·Attn(x)|",
        length=values["length"],
        dim=values["dim"],
        seed=values["seed"],
        temperature=values["temperature"],
        method=tr(METHOD_LABELS[method]),
        knob=knob.get(method, ""),
    )


def _traces(**values: object) -> list[dict]:
    """The explorer's three traces as plain property dicts (cheap to apply to a FigureWidget)."""
    weights, diff, output_scale, gap = attention_state(**values)
    # Colour the difference on the scale of the outputs themselves, so rounding noise stays white.
    limit = max(output_scale, gap, 1e-6)
    return [
        {"z": weights.numpy(), "zmax": float(weights.max())},
        {"z": diff.numpy(), "zmin": -limit, "zmax": limit},
        {"value": gap, "title": {"text": _title(values)}},
    ]


def _figure(values: dict) -> go.Figure:
    weights, diff, indicator = _traces(**values)
    fig = go.Figure(
        [
            heatmap_trace(
                weights["z"],
                zmin=0.0,
                zmax=weights["zmax"],
                colorscale="Viridis",
                colorbar={
                    "title": {"text": tr("weight a<sub>mn</sub>"), "side": "right"},
                    "x": 0.41,
                    "len": 0.7,
                    "y": 0.35,
                    "thickness": 12,
                },
                hovertemplate=tr("query m = %{y}<br>key n = %{x}<br>weight = %{z:.3f}<extra></extra>"),
            ),
            heatmap_trace(
                diff["z"],
                symmetric=True,
                zmin=diff["zmin"],
                zmax=diff["zmax"],
                xaxis="x2",
                yaxis="y2",
                colorbar={
                    "title": {"text": tr("difference"), "side": "right"},
                    "x": 1.0,
                    "len": 0.7,
                    "y": 0.35,
                    "thickness": 12,
                },
                hovertemplate=tr("position m = %{y}<br>output dim %{x}<br>difference = %{z:.2e}<extra></extra>"),
            ),
            go.Indicator(
                mode="number",
                value=indicator["value"],
                number={"valueformat": ".2e", "font": {"size": 26}},
                title={"text": indicator["title"]["text"], "font": {"size": 14}},
                domain={"x": [0.0, 1.0], "y": [0.83, 0.98]},
            ),
        ]
    )
    axis = {"domain": [0.0, 0.7]}
    fig.update_layout(
        height=560,
        margin={"t": 30, "b": 50, "l": 60, "r": 20},
        xaxis={"domain": [0.0, 0.4], "title": {"text": tr("key position n")}},
        yaxis={**axis, "autorange": "reversed", "title": {"text": tr("query position m")}},
        xaxis2={"domain": [0.56, 0.96], "title": {"text": tr("output dimension")}},
        yaxis2={**axis, "autorange": "reversed", "anchor": "x2"},
        annotations=[
            _annotation(tr("<b>attention weights a<sub>mn</sub></b>"), 0.2),
            _annotation(tr("<b>Attn(πx) − π·Attn(x)</b> (row m: position m)"), 0.76),
        ],
    )
    return fig


def _annotation(text: str, x: float) -> dict:
    return {
        "text": text,
        "x": x,
        "y": 0.7,
        "xref": "paper",
        "yref": "paper",
        "xanchor": "center",
        "yanchor": "bottom",
        "showarrow": False,
    }


def attention_explorer(
    *,
    length: int = 12,
    dim: int = 16,
    seed: int = 0,
    temperature: float = 1.0,
    method: str = "none",
    base: float = 10000.0,
    slope: float = 0.5,
) -> Explorer:
    """Sliders for the length ``L``, the dimension ``d``, the seed, the temperature ``T`` (scores
    divided by ``T·√d``), the base of the sinusoidal encoding and RoPE (θᵢ = base^(−2i/d): θ names
    the frequencies, not the base), and ALiBi's slope μₕ; a dropdown for the position method (none,
    sinusoidal, RoPE, ALiBi).

    Left: the attention weights :math:`a_{mn}`. Right: ``Attn(πx) - π·Attn(x)`` for a random
    shuffle ``π`` (white without position: attention is permutation-equivariant), on the colour
    scale of the outputs; above, its largest absolute entry. A bad value (an odd ``d`` with the
    sinusoidal encoding, say) shows a one-line message and keeps the last picture. The base
    slider is greyed out unless the method uses it, and so is the slope slider.
    """
    style = {"description_width": "initial"}

    def slider(kind: type, value: object, description: str, **kwargs: object) -> widgets.ValueWidget:
        return kind(value=value, description=description, style=style, **kwargs)

    controls = {
        "length": slider(widgets.IntSlider, length, tr("length L"), min=1, max=128),
        "dim": slider(widgets.IntSlider, dim, tr("dimension d"), min=2, max=256, step=2),
        "seed": slider(widgets.IntSlider, seed, tr("seed"), min=0, max=20),
        "temperature": slider(
            widgets.FloatLogSlider, temperature, tr("temperature T"), base=10, min=-1.3, max=1.3, step=0.05
        ),
        "method": slider(
            widgets.Dropdown, method, tr("position"), options=[(tr(v), k) for k, v in METHOD_LABELS.items()]
        ),
        "base": slider(widgets.FloatLogSlider, base, "base", base=10, min=0, max=6, step=0.1),
        "slope": slider(widgets.FloatLogSlider, slope, tr("ALiBi slope"), base=2, min=-8, max=1, step=0.5),
    }
    first = _figure({name: control.value for name, control in controls.items()})
    box = explorer(controls, _traces, first)

    def grey_out(_change: object = None) -> None:
        chosen = controls["method"].value
        controls["base"].disabled = chosen not in ("sinusoidal", "rope")
        controls["slope"].disabled = chosen != "alibi"

    controls["method"].observe(grey_out, "value")
    grey_out()
    return box
