"""The live explorer of *Positions in today's models* (needs a running kernel: JupyterLab, Colab, Binder).

Controls: the scaling rule (:data:`posviz.plots.models.RULES`), the factor :math:`s`, the original
context :math:`L`, the base :math:`b` and the rotated dimension :math:`d`. Panels: each pair's
frequency ratio :math:`\\theta'_i/\\theta_i` against its trained wavelength (the rule's shape, from
:func:`posviz.plots.models.rule_frequencies`), and the spectrum: each pair's wavelength before and
after the rule against the original context :math:`L` and the extended one :math:`sL`, with the
counts of pairs that complete a turn in the title.
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
from ..i18n import tr
from ..plots.models import _RULE_COLORS, _RULE_NAMES, RULES, rule_frequencies
from ..rope_scaling import rope_attention_factor
from . import CONTROL_WIDTH, Explorer, explorer

__all__ = ["models_explorer", "scaling_state"]

_GREY = "#7f7f7f"


def scaling_state(rule: str, factor: float, context: int, base: float, dim: int) -> dict[str, object]:
    """What the explorer draws, as numbers: wavelengths ``lam`` and ``lam_scaled`` (tokens), the ratio
    :math:`\\theta'_i/\\theta_i`, and the counts ``turned`` (pairs with :math:`\\lambda_i \\le L`),
    ``turned_scaled`` (:math:`\\lambda'_i \\le sL`) and ``never_scaled`` (:math:`\\lambda'_i > sL`)."""
    theta = rope_frequencies(dim, base, device="cpu", dtype=torch.float64)
    scaled = rule_frequencies(rule, dim, base, factor, context)
    lam, lam_scaled = 2 * math.pi / theta, 2 * math.pi / scaled
    extended = factor * context
    return {
        "lam": lam.numpy(),
        "lam_scaled": lam_scaled.numpy(),
        "ratio": (scaled / theta).numpy(),
        "turned": int((lam <= context).sum()),
        "turned_scaled": int((lam_scaled <= extended).sum()),
        "never_scaled": int((lam_scaled > extended).sum()),
    }


def _update(rule: str, factor: float, context: int, base: float, dim: int) -> tuple[list[dict], dict]:
    if dim % 2 or dim < 4:
        raise ValueError(f"d must be an even integer >= 4, got {dim}")
    state = scaling_state(rule, factor, context, base, dim)
    lam, lam_s, ratio = state["lam"], state["lam_scaled"], state["ratio"]
    pairs = np.arange(dim // 2)
    low = min(float(ratio.min()), 1 / factor) / 1.5
    extended = factor * context
    name = tr(_RULE_NAMES[rule])
    title = tr(
        "{rule}, s = {s:g}, L = {L}: {turned} of {pairs} pairs turn within L; after the rule {turned_scaled} turn "
        "within sL = {sL:g} and {never} never do",
        rule=name, s=factor, L=context, turned=state["turned"], pairs=dim // 2,
        turned_scaled=state["turned_scaled"], sL=extended, never=state["never_scaled"],
    )
    if rule == "yarn":
        title += "<br>" + tr(
            "YaRN also multiplies cos and sin by {t:.3f}",
            t=rope_attention_factor({"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": 1}),
        )
    top = max(float(lam_s.max()), extended) * 3
    return [
        {"x": lam, "y": ratio, "name": name, "line": {"color": _RULE_COLORS[rule]}, "customdata": pairs},
        {"x": [context, context], "y": [low, 1.5]},
        {"x": pairs, "y": lam},
        {"x": pairs, "y": lam_s, "name": tr("after {rule}", rule=name)},
        {"x": [0, dim // 2 - 1], "y": [context, context]},
        {"x": [0, dim // 2 - 1], "y": [extended, extended]},
    ], {"title": {"text": title}, "yaxis": {"range": [math.log10(low), math.log10(1.5)]},
        "yaxis2": {"range": [0.5, math.log10(top)]}}


def _figure() -> go.Figure:
    fig = make_subplots(
        rows=1, cols=2, horizontal_spacing=0.12,
        subplot_titles=[tr("frequency ratio θ′/θ of each pair"), tr("wavelength of each pair")],
    )
    line = {"color": _GREY, "dash": "dash", "width": 1.5}
    fig.add_trace(go.Scatter(x=[], y=[], mode="lines+markers", marker={"size": 4},
                             hovertemplate=tr("pair i = %{customdata}<br>λ<sub>i</sub> = %{x:.4g} tokens<br>"
                                              "θ′/θ = %{y:.4g}") + "<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(x=[], y=[], mode="lines", line=line, name=tr("original context L"),
                             hoverinfo="skip"), row=1, col=1)
    fig.add_trace(go.Scatter(x=[], y=[], mode="markers", marker={"color": "#1f77b4", "size": 6},
                             name=tr("trained wavelength λ<sub>i</sub>"),
                             hovertemplate=tr("pair i = %{x}<br>λ<sub>i</sub> = %{y:.4g} tokens") + "<extra></extra>"),
                  row=1, col=2)
    fig.add_trace(go.Scatter(x=[], y=[], mode="markers", marker={"color": "#d62728", "size": 5, "symbol": "x"},
                             hovertemplate=tr("pair i = %{x}<br>scaled λ′<sub>i</sub> = %{y:.4g} tokens")
                             + "<extra></extra>"), row=1, col=2)
    fig.add_trace(go.Scatter(x=[], y=[], mode="lines", line=line, showlegend=False, hoverinfo="skip"), row=1, col=2)
    fig.add_trace(go.Scatter(x=[], y=[], mode="lines", line={"color": "#000000", "dash": "dot"},
                             name=tr("extended context sL"), hoverinfo="skip"), row=1, col=2)
    fig.update_xaxes(type="log", title_text=tr("trained wavelength λ<sub>i</sub> (tokens, log scale)"), row=1, col=1)
    fig.update_yaxes(type="log", title_text=tr("θ′<sub>i</sub> / θ<sub>i</sub> (log scale)"), row=1, col=1)
    fig.update_xaxes(title_text=tr("pair index i (0 = fastest)"), row=1, col=2)
    fig.update_yaxes(type="log", title_text=tr("wavelength (tokens, log scale)"), row=1, col=2)
    fig.update_layout(height=520, margin={"t": 110, "b": 110, "l": 70, "r": 20},
                      legend={"orientation": "h", "y": -0.22}, title={"y": 0.97, "yanchor": "top"})
    fig.layout.template = go.layout.Template(layout=pio.templates["plotly"].layout)
    return fig


def models_explorer(
    rule: str = "yarn",
    factor: float = 8.0,
    context: int = 8192,
    base: float = 500000.0,
    dim: int = 128,
) -> Explorer:
    """Live explorer of the scaling rules: rule, factor :math:`s`, original context :math:`L`, base
    and rotated dimension :math:`d` drive the ratio plot and the spectrum. A bad value (an odd
    ``d`` typed in) shows a one-line message and keeps the last figure.
    """
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    style = {"description_width": "initial"}
    layout = widgets.Layout(width=CONTROL_WIDTH)
    controls = {
        "rule": widgets.Dropdown(value=rule, options=[(tr(_RULE_NAMES[r]), r) for r in RULES],
                                 description=tr("rule"), style=style, layout=layout),
        "factor": widgets.FloatLogSlider(value=factor, base=2, min=0, max=6, step=0.25, description=tr("factor s"),
                                         style=style, layout=layout),
        "context": widgets.SelectionSlider(value=context, options=[2 ** k for k in range(10, 18)],
                                           description=tr("original context L"), style=style, layout=layout),
        "base": widgets.FloatLogSlider(value=base, base=10, min=3, max=7, step=0.1, description=tr("base"),
                                       style=style, layout=layout),
        "dim": widgets.IntSlider(value=dim, min=16, max=256, step=2, description="d", style=style, layout=layout),
    }
    return explorer(controls, _update, _figure())  # the explorer draws the first values into it
