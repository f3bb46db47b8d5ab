r"""Figures of the chapter *Learned position tables*.

Each function returns a Plotly figure whose slider (and view buttons, where there are some)
switches between states precomputed with :mod:`posviz` (see :func:`posviz.plots.slider_figure`),
so it works in the static web page with no kernel. Values are rounded to a few decimals before
they are stored: the page carries every state of every figure, and colours do not need more.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from ..absolute import sinusoidal_encoding
from ..i18n import N_, number, tr, translatable
from ..learned import (
    TrainingRun,
    cosine_similarity_matrix,
    learned_table_parameters,
    mean_by_offset,
)
from ._numbers import rounded
from ._sliders import heatmap_trace, slider_figure

__all__ = [
    "DIMS",
    "KNOWN_TABLES",
    "LENGTHS",
    "learned_attention_figure",
    "learned_cost_figure",
    "learned_similarity_figure",
    "learned_table_figure",
]

DIMS: tuple[int, ...] = (64, 128, 256, 512, 768, 1024, 1600, 2048, 4096, 8192, 12288, 16384)
"""The model widths that the cost figure's slider steps through. 768 is BERT-base, GPT and
GPT-2 small; 1600 is GPT-2 XL; 12288 is GPT-3 175B."""
LENGTHS: tuple[int, ...] = tuple(2**k for k in range(7, 18))
"""The context lengths on the cost figure's x axis, from 128 to 131072."""
KNOWN_TABLES: tuple[tuple[str, int, int, str], ...] = (
    (N_("BERT-base, GPT"), 512, 768, "middle left"),
    (N_("BERT-large"), 512, 1024, "top center"),
    (N_("GPT-2 small"), 1024, 768, "bottom right"),
    (N_("GPT-2 XL"), 1024, 1600, "top center"),
    (N_("GPT-3 175B size"), 2048, 12288, "middle right"),
)
"""``(name, max_len, d, label position)`` of published learned tables (BERT: Devlin et al.,
2019; GPT: Radford et al., 2018; GPT-2: Radford et al., 2019) and of a table sized to GPT-3
175B's context and width (Brown et al., 2020)."""

_CPU = torch.device("cpu")
_FONT = {"size": 13}


def _count(n: int) -> str:
    """1,572,864 -> '1.57M'."""
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.3g}{unit}"
    return str(n)


@translatable
def learned_cost_figure(
    dims: Sequence[int] = DIMS,
    lengths: Sequence[int] = LENGTHS,
    *,
    active_dim: int = 768,
) -> go.Figure:
    r"""Parameters of a learned table, :math:`L_{\max} \cdot d`, against :math:`L_{\max}`; slider over ``d``.

    The line is :func:`posviz.learned.learned_table_parameters` for the slider's ``d``; the
    markers are the published tables of :data:`KNOWN_TABLES` (the same in every step).
    Both axes are logarithmic: the line has slope 1 and moves up with ``d``.
    """
    if active_dim not in dims:
        raise ValueError(f"active_dim={active_dim!r} must be one of {list(dims)}")
    x = np.asarray(lengths)
    known = [learned_table_parameters(length, d) for _, length, d, _ in KNOWN_TABLES]
    reference = go.Scatter(
        x=[length for _, length, _, _ in KNOWN_TABLES],
        y=known,
        mode="markers+text",
        text=[tr(name) for name, *_ in KNOWN_TABLES],
        textposition=[where for *_, where in KNOWN_TABLES],
        marker={"size": 10, "color": "#d62728", "symbol": "diamond"},
        name=tr("published tables"),
        customdata=[[d, _count(n)] for (_, _, d, _), n in zip(KNOWN_TABLES, known)],
        hovertemplate=tr(
            "%{text}<br>L<sub>max</sub> = %{x:,}, d = %{customdata[0]:,}<br>%{y:,} parameters (%{customdata[1]})"
            "<extra></extra>"
        ),
    )

    def traces(d: int) -> list[go.Scatter]:
        y = np.asarray([learned_table_parameters(int(length), d) for length in x])
        line = go.Scatter(
            x=x,
            y=y,
            mode="lines+markers",
            line={"width": 3, "color": "#1f77b4"},
            marker={"size": 6},
            name=tr("L<sub>max</sub> × d, d = {d:,}", d=d),
            customdata=[_count(int(n)) for n in y],
            hovertemplate=tr(
                "L<sub>max</sub> = %{x:,}, d = {d:,}<br>%{y:,} parameters (%{customdata})<extra></extra>", d=d
            ),
        )
        return [line, reference]

    steps = [
        (
            number(f"{d:,}"),
            lambda d=d: traces(d),
            {"title.text": tr("Learned table size L<sub>max</sub> × d for d = {d:,}", d=d)},
        )
        for d in dims
    ]
    return slider_figure(
        steps,
        slider_label=tr("model width d"),
        active=list(dims).index(active_dim),
        layout={
            "height": 480,
            "font": _FONT,
            "margin": {"t": 70},
            "title": {"x": 0.5},
            "legend": {"orientation": "h", "x": 0.5, "xanchor": "center", "y": 1.0, "yanchor": "bottom"},
            "xaxis": {
                "title": {"text": tr("context length L<sub>max</sub> (rows of the table, log scale)")},
                "type": "log",
                "range": [np.log10(x[0]) - 0.15, np.log10(x[-1]) + 0.15],
            },
            "yaxis": {
                "title": {"text": tr("parameters in the table (log scale)")},
                "type": "log",
                "range": [3.5, 9.7],
            },
        },
    )


def _step_label(run: TrainingRun, index: int) -> str:
    snap = run.snapshots[index]
    return tr(
        "step {step}: probe accuracy {accuracy:.0%}, loss {loss:.2f}",
        step=snap.step,
        accuracy=snap.accuracy,
        loss=snap.loss,
    )


@translatable
def learned_table_figure(run: TrainingRun, *, decimals: int = 3) -> go.Figure:
    r"""The learned table :math:`P` (positions × dimensions) at each snapshot of ``run``.

    View buttons: one colour scale shared by every step (the table grows from its
    :math:`\mathcal N(0, 0.02^2)` start), or each step rescaled to its own largest entry (to see
    the pattern at every step).
    """
    if not run.snapshots:
        raise ValueError("run has no snapshots: give WindowMaxConfig checkpoints <= steps")
    tables = [rounded(snap.table, decimals) for snap in run.snapshots]
    shared = max(float(np.abs(t).max()) for t in tables) or 1.0
    positions, columns = np.arange(run.config.max_len), np.arange(run.config.dim)

    def trace(table: np.ndarray, limit: float, title: str) -> go.Heatmap:
        return heatmap_trace(
            table,
            symmetric=True,
            zmin=-limit,
            zmax=limit,
            x=columns,
            y=positions,
            colorbar={"title": {"text": title}, "len": 0.9},
            hovertemplate=tr("position m = %{y}<br>dimension %{x}<br>P[m, j] = %{z:.3f}<extra></extra>"),
        )

    def traces(index: int) -> list[go.Heatmap]:
        table = tables[index]
        own = float(np.abs(table).max()) or 1.0
        return [trace(table, shared, "P[m, j]"), trace(table, own, f"P[m, j]<br>(±{own:.2g})")]

    steps = [
        (str(snap.step), lambda i=i: traces(i), {"title.text": tr("Learned table P, {step}", step=_step_label(run, i))})
        for i, snap in enumerate(run.snapshots)
    ]
    return slider_figure(
        steps,
        slider_label=tr("training step"),
        active=len(steps) - 1,
        views=[(tr("one colour scale for all steps"), [0]), (tr("each step rescaled"), [1])],
        layout={
            "height": 520,
            "font": _FONT,
            "margin": {"t": 110, "b": 20},
            "title": {"x": 0.5, "y": 0.97, "yanchor": "top", "font": {"size": 15}},
            "xaxis": {"title": {"text": tr("dimension j (column of P)")}},
            "yaxis": {"title": {"text": tr("position m (row of P)")}, "autorange": "reversed"},
        },
    )


@translatable
def learned_similarity_figure(run: TrainingRun, base: float = 10000.0, *, decimals: int = 3) -> go.Figure:
    r"""Which positions look alike: the learned table against the sinusoidal one; slider over training.

    Left, :func:`posviz.learned.cosine_similarity_matrix` of the learned table at the slider's
    step, or (view buttons) of :func:`posviz.sinusoidal_encoding` of the same size (fixed).
    Right, both matrices averaged along their diagonals, :func:`posviz.learned.mean_by_offset`,
    against the offset :math:`r = m - n`.
    """
    if not run.snapshots:
        raise ValueError("run has no snapshots: give WindowMaxConfig checkpoints <= steps")
    cfg = run.config
    if cfg.dim % 2:
        raise ValueError(f"the sinusoidal comparison needs an even dim, the run has dim={cfg.dim}")
    sin_sim = cosine_similarity_matrix(sinusoidal_encoding(cfg.max_len, cfg.dim, base, device=_CPU))
    sin_map, sin_profile = rounded(sin_sim, decimals), rounded(mean_by_offset(sin_sim), decimals)
    sims = [cosine_similarity_matrix(snap.table) for snap in run.snapshots]
    maps = [(rounded(sim, decimals), rounded(mean_by_offset(sim), decimals)) for sim in sims]
    positions = np.arange(cfg.max_len)
    colorbar = {"len": 0.85, "x": 0.415, "thickness": 14, "title": {"text": tr("cosine")}}

    def heatmap(values: np.ndarray, name: str) -> go.Heatmap:
        return heatmap_trace(
            values,
            symmetric=True,
            zmin=-1.0,
            zmax=1.0,
            x=positions,
            y=positions,
            colorbar=colorbar,
            hovertemplate=tr(
                "{name}<br>m = %{y}, n = %{x}<br>cos(p<sub>m</sub>, p<sub>n</sub>) = %{z:.3f}<extra></extra>", name=name
            ),
        )

    def traces(index: int) -> list[go.BaseTraceType]:
        sim, profile = maps[index]
        return [
            heatmap(sim, tr("learned table")),
            heatmap(sin_map, tr("sinusoidal, base {base:g}", base=base)),
            go.Scatter(
                x=positions,
                y=profile,
                xaxis="x2",
                yaxis="y2",
                mode="lines",
                line={"width": 3, "color": "#1f77b4"},
                name=tr("learned"),
                hovertemplate=tr("r = %{x}<br>learned: mean cosine %{y:.3f}<extra></extra>"),
            ),
            go.Scatter(
                x=positions,
                y=sin_profile,
                xaxis="x2",
                yaxis="y2",
                mode="lines",
                line={"width": 2, "color": "#ff7f0e", "dash": "dash"},
                name=tr("sinusoidal, base {base:g}", base=base),
                hovertemplate=tr("r = %{x}<br>sinusoidal: mean cosine %{y:.3f}<extra></extra>"),
            ),
        ]

    steps = [
        (
            str(snap.step),
            lambda i=i: traces(i),
            {
                "title.text": tr(
                    "Cosine similarity of positions, d = {dim}; {step}", dim=cfg.dim, step=_step_label(run, i)
                )
            },
        )
        for i, snap in enumerate(run.snapshots)
    ]
    return slider_figure(
        steps,
        slider_label=tr("training step"),
        active=len(steps) - 1,
        views=[(tr("learned table"), [0, 2, 3]), (tr("sinusoidal table (base {base:g})", base=base), [1, 2, 3])],
        layout={
            "height": 500,
            "font": _FONT,
            "margin": {"t": 110, "b": 20, "l": 60, "r": 20},
            "title": {"x": 0.5, "y": 0.97, "yanchor": "top", "font": {"size": 14}},
            "legend": {"x": 0.66, "xanchor": "left", "y": 1.0, "yanchor": "bottom", "font": {"size": 12}},
            "xaxis": {"domain": [0.0, 0.4], "title": {"text": tr("position n")}},
            "yaxis": {"title": {"text": tr("position m")}, "autorange": "reversed"},
            "xaxis2": {"domain": [0.66, 1.0], "anchor": "y2", "title": {"text": tr("offset r = m − n")}},
            "yaxis2": {"anchor": "x2", "range": [-1.05, 1.05], "title": {"text": tr("mean cosine at offset r")}},
        },
    )


@translatable
def learned_attention_figure(run: TrainingRun, *, cap: float = 0.5, decimals: int = 3) -> go.Figure:
    r"""Where the trained model looks: attention from the table alone, and the whole model's attention.

    Left, :func:`posviz.learned.positional_attention` (queries and keys made from the position
    rows alone); right, the model's causal attention weights averaged over the probe batch
    (:attr:`posviz.learned.Snapshot.attention`). Slider over the snapshots of ``run``. The colour
    scale stops at ``cap``: the first rows, with one or two keys to share, reach 1 and would
    otherwise wash out the rest.
    """
    if not run.snapshots:
        raise ValueError("run has no snapshots: give WindowMaxConfig checkpoints <= steps")
    length = run.snapshots[0].attention.shape[-1]
    positions = np.arange(length)
    maps = [(rounded(s.positional_attention, decimals), rounded(s.attention, decimals)) for s in run.snapshots]

    def heatmap(values: np.ndarray, which: str, axes: str) -> go.Heatmap:
        return heatmap_trace(
            values,
            x=positions,
            y=positions,
            xaxis=f"x{axes}",
            yaxis=f"y{axes}",
            coloraxis="coloraxis",
            hovertemplate=tr(
                "{which}<br>query m = %{y}, key n = %{x}<br>weight a<sub>mn</sub> = %{z:.3f}<extra></extra>",
                which=which,
            ),
        )

    steps = [
        (
            str(snap.step),
            lambda i=i: [
                heatmap(maps[i][0], tr("from the position table alone"), ""),
                heatmap(maps[i][1], tr("whole model, mean over probe sequences"), "2"),
            ],
            {"title.text": tr("Attention weights, {step}", step=_step_label(run, i))},
        )
        for i, snap in enumerate(run.snapshots)
    ]
    axis = {"title": {"text": tr("key position n")}}
    return slider_figure(
        steps,
        slider_label=tr("training step"),
        active=len(steps) - 1,
        layout={
            "height": 500,
            "font": _FONT,
            "margin": {"t": 90, "b": 20, "l": 60, "r": 20},
            "title": {"x": 0.5, "y": 0.97, "yanchor": "top", "font": {"size": 14}},
            "coloraxis": {
                "colorscale": "Viridis",
                "cmin": 0.0,
                "cmax": cap,
                "colorbar": {
                    "title": {"text": tr("weight<br>(scale stops<br>at {cap:g})", cap=cap)},
                    "thickness": 14,
                    "len": 0.75,
                    "y": 0.4,
                },
            },
            "xaxis": {**axis, "domain": [0.0, 0.43]},
            "yaxis": {"title": {"text": tr("query position m")}, "autorange": "reversed"},
            "xaxis2": {**axis, "domain": [0.5, 0.93], "anchor": "y2"},
            "yaxis2": {"anchor": "x2", "autorange": "reversed", "matches": "y", "showticklabels": False},
            "annotations": [
                {
                    "text": tr("position table alone, a<sup>pos</sup>"),
                    "x": 0.215,
                    "xanchor": "center",
                    "y": 1.0,
                    "xref": "paper",
                    "yref": "paper",
                    "yanchor": "bottom",
                    "showarrow": False,
                },
                {
                    "text": tr("whole model (tokens + positions)"),
                    "x": 0.715,
                    "xanchor": "center",
                    "y": 1.0,
                    "xref": "paper",
                    "yref": "paper",
                    "yanchor": "bottom",
                    "showarrow": False,
                },
            ],
        },
    )
