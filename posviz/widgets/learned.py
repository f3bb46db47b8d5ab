r"""Live explorer of the chapter *Learned position tables* (needs a kernel).

Training even the chapter's tiny model takes about a second, twenty times what a slider may
take. So the explorer trains a small grid of runs once, when it is built
(:func:`posviz.learned.train_grid`: every ``max_len`` × ``d`` × ``seed``, a dozen snapshots
each), and its training sliders only choose among the stored snapshots. What is cheap is
recomputed live: the rows asked for (through :class:`posviz.LearnedPositionalEmbedding`, so
asking for a position past ``max_len`` shows its error), their cosine similarity
(:func:`posviz.learned.cosine_similarity_matrix`) and the sinusoidal table of the same size for
any base (:func:`posviz.sinusoidal_encoding`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import torch

from ..absolute import sinusoidal_encoding
from ..i18n import tr
from ..learned import TrainingRun, WindowMaxConfig, cosine_similarity_matrix, train_grid
from . import Explorer, colorbar_below, explorer, one_thread

__all__ = ["learned_explorer"]

_CPU = torch.device("cpu")
# Plotly's default look without its per-trace-type defaults (a smaller widget state).
_GRID = {"gridcolor": "white", "zerolinecolor": "white", "linecolor": "white"}
_TEMPLATE = go.layout.Template(
    layout={
        "plot_bgcolor": "white",  # heatmaps fill their panels; the caption's hidden axes stay blank
        "font": {"color": "#2a3f5f"},
        "colorway": pio.templates["plotly"].layout.colorway,
        "xaxis": _GRID,
        "yaxis": _GRID,
    }
)
_DOMAINS = ([0.0, 0.27], [0.37, 0.64], [0.73, 1.0])
_HEIGHT = 500
_MARGIN = {"t": 70, "b": 110, "l": 55, "r": 30}  # below the panels: the x titles, then the colour bars


def _figure() -> go.Figure:
    """Three empty panels (table, learned similarity, sinusoidal similarity) and a caption trace."""
    fig = go.Figure()
    # colour bars under their panels (one between panels lands on the next one's labels at some
    # output width): the table's under the table, the shared cosine scale under both cosine panels
    plot_height = _HEIGHT - _MARGIN["t"] - _MARGIN["b"]
    fig.add_trace(
        go.Heatmap(
            z=[[0.0]],
            zmid=0.0,
            colorscale="RdBu",
            reversescale=True,
            colorbar=colorbar_below(_DOMAINS[0], plot_height, title={"text": "P[m, j]"}),
            hovertemplate=tr("position m = %{y}<br>dimension j = %{x}<br>P[m, j] = %{z:.3f}<extra></extra>"),
        )
    )
    for axis, name in (("2", "learned"), ("3", "sinusoidal")):
        fig.add_trace(
            go.Heatmap(
                z=[[0.0]],
                zmin=-1.0,
                zmax=1.0,
                zmid=0.0,
                colorscale="RdBu",
                reversescale=True,
                showscale=axis == "3",
                colorbar=colorbar_below(
                    [_DOMAINS[1][0], _DOMAINS[2][1]], plot_height, title={"text": tr("cosine similarity (both panels)")}
                ),
                xaxis=f"x{axis}",
                yaxis=f"y{axis}",
                hovertemplate=tr(
                    "{name}<br>m = %{y}, n = %{x}<br>cos(p<sub>m</sub>, p<sub>n</sub>) = %{z:.3f}<extra></extra>",
                    name=tr(name),
                ),
            )
        )
    fig.add_trace(  # the caption: a text trace on hidden axes, so that an update can change it
        go.Scatter(
            x=[0.5],
            y=[0.5],
            mode="text",
            text=[""],
            textfont={"size": 14},
            xaxis="x4",
            yaxis="y4",
            hoverinfo="skip",
        )
    )
    hidden = {"visible": False, "range": [0, 1], "fixedrange": True}
    layout = {
        "height": _HEIGHT,
        "margin": _MARGIN,
        "showlegend": False,
        "template": _TEMPLATE,
        "xaxis4": {**hidden, "domain": [0, 1]},
        "yaxis4": {**hidden, "domain": [0.93, 1.0]},
    }
    titles = (
        (tr("dimension j"), tr("position m (row of P)")),
        (tr("position n"), tr("position m")),
        (tr("position n"), tr("position m")),
    )
    for k, (domain, (x_title, y_title)) in enumerate(zip(_DOMAINS, titles), start=1):
        suffix = "" if k == 1 else str(k)
        layout[f"xaxis{suffix}"] = {"domain": domain, "anchor": f"y{suffix}", "title": {"text": x_title}}
        layout[f"yaxis{suffix}"] = {
            "domain": [0.0, 0.86],
            "anchor": f"x{suffix}",
            "autorange": "reversed",
            "title": {"text": y_title, "standoff": 4},
        }
    layout["annotations"] = [
        {"text": text, "x": sum(domain) / 2, "y": 0.87, "xref": "paper", "yref": "paper", "yanchor": "bottom"}
        | {"showarrow": False, "xanchor": "center"}
        for domain, text in zip(
            _DOMAINS, (tr("learned table P"), tr("learned: cosine similarity"), tr("sinusoidal: cosine"))
        )
    ]
    fig.update_layout(layout)
    return fig


def learned_explorer(
    runs: Mapping[tuple[int, int, int], TrainingRun] | None = None,
    *,
    max_lens: Sequence[int] = (16, 32, 48),
    dims: Sequence[int] = (8, 16, 32),
    seeds: Sequence[int] = (0, 1),
    config: WindowMaxConfig | None = None,
    max_len: int = 48,
    dim: int = 32,
    base: float = 10000.0,
) -> Explorer:
    r"""Sliders for ``max_len``, ``d``, seed, training step, positions shown and the sinusoidal base.

    Trains :func:`posviz.learned.train_grid` (``max_lens`` × ``dims`` × ``seeds``, each with
    ``config``'s other settings; runs given in ``runs`` with the same config are reused) once,
    then every slider move only reads a stored snapshot and recomputes: the learned rows
    :math:`p_0 .. p_{\text{positions}-1}` (left), their cosine similarity (middle) and the
    cosine similarity of the sinusoidal table of the same size and base (right). Asking for more
    positions than ``max_len`` shows :class:`posviz.LearnedPositionalEmbedding`'s error in the
    status line and keeps the last picture: a learned table has no row there.
    """
    bad = [d for d in dims if d % 2]
    if bad:
        raise ValueError(f"dims must be even (the sinusoidal comparison pairs columns), got {bad}")
    if max_len not in max_lens or dim not in dims:
        raise ValueError(f"max_len={max_len} and dim={dim} must be among max_lens={list(max_lens)}, dims={list(dims)}")
    grid = train_grid(max_lens, dims, seeds, base=config, runs=runs)
    first = next(iter(grid.values()))
    steps = [snap.step for snap in first.snapshots]
    if not steps:
        raise ValueError("the runs keep no snapshots: give the config checkpoints <= steps")
    embeddings = {key: [run.embedding(i) for i in range(len(steps))] for key, run in grid.items()}
    slider = {"continuous_update": False, "style": {"description_width": "initial"}}
    controls = {
        "max_len": widgets.SelectionSlider(options=list(max_lens), value=max_len, description="max_len", **slider),
        "dim": widgets.SelectionSlider(options=list(dims), value=dim, description="d", **slider),
        "seed": widgets.SelectionSlider(options=list(seeds), value=seeds[0], description=tr("seed"), **slider),
        "step": widgets.SelectionSlider(options=steps, value=steps[-1], description=tr("training step"), **slider),
        "length": widgets.IntSlider(
            value=max_len, min=1, max=2 * max(max_lens), description=tr("positions shown"), **slider
        ),
        "base": widgets.FloatLogSlider(
            value=base, base=10, min=1, max=6, step=0.25, description=tr("sinusoidal base"), **slider
        ),
    }

    def update(max_len: int, dim: int, seed: int, step: int, length: int, base: float) -> list[dict]:
        run = grid[(max_len, dim, seed)]
        index = steps.index(step)
        with one_thread(), torch.no_grad():
            table = embeddings[(max_len, dim, seed)][index].rows(length)  # [length, d]; IndexError past max_len
            learned = cosine_similarity_matrix(table)  # [length, length]
            sinusoidal = cosine_similarity_matrix(sinusoidal_encoding(length, dim, base, device=_CPU))
        values = table.numpy()
        limit = float(np.abs(values).max()) or 1.0
        positions = np.arange(length)
        snap = run.snapshots[index]
        caption = tr(
            "max_len = {max_len}, d = {dim}, seed {seed}: step {step}, probe accuracy "
            "{accuracy:.0%} · sinusoidal base {base:,.0f}",
            max_len=max_len,
            dim=dim,
            seed=seed,
            step=step,
            accuracy=snap.accuracy,
            base=base,
        )
        return [
            {"z": values, "x": np.arange(dim), "y": positions, "zmin": -limit, "zmax": limit},
            {"z": learned.numpy(), "x": positions, "y": positions},
            {"z": sinusoidal.numpy(), "x": positions, "y": positions},
            {"text": [caption]},
        ]

    return explorer(controls, update, _figure())
