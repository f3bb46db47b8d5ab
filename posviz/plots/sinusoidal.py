r"""Figures of the chapter *Sinusoidal encoding as Fourier features*.

Each function returns a Plotly figure whose slider (and, where there are some, view buttons)
switches between states precomputed with :mod:`posviz` (see :func:`posviz.plots.slider_figure`),
so it works in the static web page with no kernel. Values are rounded to a few decimals before
they are stored: the page carries every state of every figure, and colours do not need more.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from ..absolute import (
    binary_counter_waves,
    sinusoidal_encoding,
    sinusoidal_offset_similarity,
    sinusoidal_phase_coverage,
)
from ..frequencies import rope_frequencies, wavelengths
from ..i18n import number, tr, translatable
from ._numbers import rounded
from ._sliders import heatmap_trace, slider_figure

__all__ = [
    "BASES",
    "binary_counter_figure",
    "sinusoidal_extrapolation_figure",
    "sinusoidal_heatmap_figure",
    "sinusoidal_similarity_figure",
    "sinusoidal_waves_figure",
]

BASES: tuple[float, ...] = (10.0, 30.0, 100.0, 300.0, 1e3, 3e3, 1e4, 3e4, 1e5)
"""The frequency bases the slider figures step through (the paper's 10000 is one of them)."""

_CPU = torch.device("cpu")
_FONT = {"size": 13}


def _base_label(base: float) -> str:
    return number(f"{base:,.0f}") if base >= 1 else f"{base:g}"  # Chinese: 10000


def _every(n: int) -> str:
    return tr("at every position") if n == 1 else tr("every {n} positions", n=n)


def _percent(x: float) -> str:
    return f"{x:.0%}" if x >= 0.1 else f"{x:.1%}"


def _active(values: Sequence[float], wanted: float, name: str) -> int:
    for index, value in enumerate(values):
        if value == wanted:
            return index
    raise ValueError(f"{name}={wanted!r} must be one of {list(values)}")


@translatable
def sinusoidal_heatmap_figure(
    length: int = 64,
    dims: Sequence[int] = (16, 64, 256),
    bases: Sequence[float] = BASES,
    *,
    active_base: float = 10000.0,
    decimals: int = 2,
) -> go.Figure:
    r"""The table :math:`PE(p, j)` as a heatmap: slider over the base, one view button per ``d``.

    The cells hold :math:`10^{\text{decimals}}\,PE(p, j)` rounded to integers (int8 for the
    default two decimals, so the page stores a byte a cell); the colour bar is labelled in
    :math:`PE` units.

    Rows are positions :math:`p = 0 .. \text{length}-1`, columns the dimensions :math:`j`
    (:func:`posviz.sinusoidal_encoding`; even :math:`j` hold :math:`\sin p\theta_i`, odd
    :math:`j` hold :math:`\cos p\theta_i`, with :math:`i = \lfloor j/2 \rfloor`).
    """
    active = _active(bases, active_base, "active_base")
    columns = {d: np.arange(d) for d in dims}
    positions = np.arange(length)

    scale = 10**decimals  # stored as integers (int8 for 2 decimals): 1 byte a cell, every state on the page
    dtype = np.int8 if scale <= 100 else np.int32
    ticks = [-1.0, -0.5, 0.0, 0.5, 1.0]

    def traces(base: float) -> list[go.Heatmap]:
        return [
            heatmap_trace(
                (rounded(sinusoidal_encoding(length, d, base, device=_CPU), decimals) * scale).round().astype(dtype),
                symmetric=True,
                zmin=-scale,
                zmax=scale,
                x=columns[d],
                y=positions,
                colorbar={
                    "title": {"text": "PE(p, j)"},
                    "len": 0.9,
                    "tickvals": [t * scale for t in ticks],
                    "ticktext": [f"{t:g}".replace("-", "−") for t in ticks],
                },
                hovertemplate=(
                    tr(
                        "position p = %{y}<br>column j = %{x} (pair i = ⌊j/2⌋; even j: sin, odd j: "
                        "cos)<br>{scale} × PE(p, j) = %{z}<extra></extra>",
                        scale=scale,
                    )
                ),
            )
            for d in dims
        ]

    steps = [
        (
            _base_label(base),
            lambda base=base: traces(base),
            {"title.text": tr("Sinusoidal table PE(p, j), base = {base}", base=_base_label(base))},
        )
        for base in bases
    ]
    return slider_figure(
        steps,
        slider_label=tr("base"),
        active=active,
        views=[(f"d = {d}", [index]) for index, d in enumerate(dims)],
        layout={
            "height": 520,
            "font": _FONT,
            "margin": {"t": 110, "b": 20},
            "title": {"x": 0.5, "y": 0.97, "yanchor": "top"},
            "xaxis": {"title": {"text": tr("dimension j (fast pairs on the left, slow pairs on the right)")}},
            "yaxis": {"title": {"text": tr("position p")}, "autorange": "reversed"},
        },
    )


@translatable
def binary_counter_figure(length: int = 64, bits: int = 6, *, samples_per_position: int = 8) -> go.Figure:
    r"""Bit :math:`\ell` of a binary counter as a square wave and its smooth sine; slider over :math:`\ell`.

    Both come from :func:`posviz.absolute.binary_counter_waves` (square wave at the integer
    positions, the sine on a grid ``samples_per_position`` times finer).
    """
    p = torch.arange(length)
    fine = torch.arange(0, (length - 1) * samples_per_position + 1, dtype=torch.float64) / samples_per_position
    square = rounded(binary_counter_waves(p, bits), 0)
    smooth = rounded(binary_counter_waves(fine, bits, smooth=True), 3)
    x_fine = rounded(fine, 3)

    def traces(k: int) -> list[go.Scatter]:
        return [
            go.Scatter(
                x=p.numpy(),
                y=square[:, k],
                mode="lines+markers",
                line={"shape": "hvh", "width": 2, "color": "#1f77b4"},
                marker={"size": 5},
                name=tr("bit {k} as a sign, 1 − 2b<sub>{k}</sub>(p)", k=k),
                hovertemplate=tr("p = %{x}<br>bit {k} = %{customdata}<extra></extra>", k=k),
                customdata=((1 - square[:, k]) / 2).astype(int),
            ),
            go.Scatter(
                x=x_fine,
                y=smooth[:, k],
                mode="lines",
                line={"width": 2, "color": "#d62728"},
                name=tr("smooth: sin(π(p + ½)/2<sup>{k}</sup>)", k=k),
                hovertemplate=tr("p = %{x}<br>sine = %{y:.3f}<extra></extra>"),
            ),
        ]

    steps = [
        (
            str(k),
            lambda k=k: traces(k),
            {
                "title.text": tr(
                    "Bit {k} flips {every} and repeats every {value} positions",
                    k=k,
                    every=_every(2**k),
                    value=2 ** (k + 1),
                )
            },
        )
        for k in range(bits)
    ]
    return slider_figure(
        steps,
        slider_label=tr("bit ℓ"),
        layout={
            "height": 440,
            "font": _FONT,
            "margin": {"t": 70},
            "title": {"x": 0.5},
            "legend": {"orientation": "h", "x": 0.5, "xanchor": "center", "y": 1.0, "yanchor": "bottom"},
            "xaxis": {"title": {"text": tr("position p")}, "range": [-0.5, length - 0.5]},
            "yaxis": {"title": {"text": tr("value (+1: bit is 0, −1: bit is 1)")}, "range": [-1.25, 1.25]},
        },
    )


@translatable
def sinusoidal_waves_figure(
    length: int = 64,
    dim: int = 128,
    base: float = 10000.0,
    pairs: Sequence[int] = (0, 2, 4, 8, 12, 16, 20, 24, 32, 40, 48, 63),
    *,
    decimals: int = 3,
) -> go.Figure:
    r"""Columns :math:`2i` (sine) and :math:`2i+1` (cosine) against position; slider over pair ``i``.

    Values from :func:`posviz.sinusoidal_encoding`; :math:`\theta_i` and :math:`\lambda_i` in the
    title from :func:`posviz.rope_frequencies` and :func:`posviz.wavelengths`.
    """
    bad = [i for i in pairs if not 0 <= i < dim // 2]
    if bad:
        raise ValueError(f"pairs must lie in [0, {dim // 2 - 1}] for dim={dim}, got {bad}")
    pe = rounded(sinusoidal_encoding(length, dim, base, device=_CPU), decimals)
    theta = rope_frequencies(dim, base, device=_CPU, dtype=torch.float64)
    lam = wavelengths(dim, base, device=_CPU, dtype=torch.float64)
    p = np.arange(length)

    def traces(i: int) -> list[go.Scatter]:
        return [
            go.Scatter(
                x=p,
                y=pe[:, 2 * i],
                mode="lines+markers",
                marker={"size": 4},
                line={"width": 1.5, "color": "#1f77b4"},
                name=tr("column {value}: sin(p θ<sub>{i}</sub>)", value=2 * i, i=i),
                hovertemplate=tr("p = %{x}<br>sin = %{y:.3f}<extra></extra>"),
            ),
            go.Scatter(
                x=p,
                y=pe[:, 2 * i + 1],
                mode="lines+markers",
                marker={"size": 4},
                line={"width": 1.5, "color": "#ff7f0e"},
                name=tr("column {value}: cos(p θ<sub>{i}</sub>)", value=2 * i + 1, i=i),
                hovertemplate=tr("p = %{x}<br>cos = %{y:.3f}<extra></extra>"),
            ),
            go.Scatter(
                x=[float(lam[i])] * 2,
                y=[-1.15, 1.15],
                mode="lines",
                line={"dash": "dot", "color": "gray"},
                name=tr("p = λ<sub>i</sub> (one full turn)"),
                hovertemplate=tr("λ<sub>{i}</sub> = {lam:.1f} positions<extra></extra>", i=i, lam=float(lam[i])),
            ),
        ]

    steps = [
        (
            str(i),
            lambda i=i: traces(i),
            {
                "title.text": (
                    tr(
                        "Pair i = {i} of d/2 = {value}: θ<sub>{i}</sub> = {theta:.3g} rad per "
                        "position<br>wavelength λ<sub>{i}</sub> = {lam:,.1f} positions",
                        i=i,
                        value=dim // 2,
                        theta=float(theta[i]),
                        lam=float(lam[i]),
                    )
                )
            },
        )
        for i in pairs
    ]
    return slider_figure(
        steps,
        slider_label=tr("pair i"),
        layout={
            "height": 480,
            "font": _FONT,
            "margin": {"t": 110},
            "title": {"x": 0.5, "y": 0.97, "yanchor": "top"},
            "legend": {"orientation": "h", "x": 0.5, "xanchor": "center", "y": 1.0, "yanchor": "bottom"},
            "xaxis": {
                "title": {"text": tr("position p (d = {dim}, base = {base})", dim=dim, base=_base_label(base))},
                "range": [0, length - 1],
            },
            "yaxis": {"title": {"text": "PE(p, j)"}, "range": [-1.2, 1.2]},
        },
    )


@translatable
def sinusoidal_similarity_figure(
    max_offset: int = 256,
    dims: Sequence[int] = (16, 64, 512),
    bases: Sequence[float] = BASES,
    *,
    active_base: float = 10000.0,
    decimals: int = 4,
) -> go.Figure:
    r"""Cosine similarity of :math:`PE(p)` and :math:`PE(p+\delta)` against :math:`\delta`, one line per ``d``.

    Each line is :func:`posviz.sinusoidal_offset_similarity` divided by its value at
    :math:`\delta = 0`, :math:`\lVert PE(p)\rVert^2 = d/2`, so that lines of different :math:`d` share
    one scale: :math:`\tfrac{2}{d}\sum_i \cos \delta\theta_i \in [-1, 1]`. Slider over the base.
    """
    active = _active(bases, active_base, "active_base")
    k = torch.arange(-max_offset, max_offset + 1, dtype=torch.float64)
    colors = ("#2ca02c", "#1f77b4", "#9467bd", "#d62728", "#ff7f0e")

    def traces(base: float) -> list[go.Scatter]:
        return [
            go.Scatter(
                x=k.numpy().astype(int),
                y=rounded(sinusoidal_offset_similarity(k, d, base) / (d / 2), decimals),
                mode="lines",
                line={"width": 1.6, "color": colors[n % len(colors)]},
                name=f"d = {d}",
                hovertemplate=tr("d = {d}<br>δ = %{x}<br>cosine similarity = %{y:.3f}<extra></extra>", d=d),
            )
            for n, d in enumerate(dims)
        ]

    steps = [
        (
            _base_label(base),
            lambda base=base: traces(base),
            {
                "title.text": tr(
                    "PE(p) · PE(p + δ) / (d/2), the same for every p; base = {base}", base=_base_label(base)
                )
            },
        )
        for base in bases
    ]
    return slider_figure(
        steps,
        slider_label=tr("base"),
        active=active,
        layout={
            "height": 460,
            "font": _FONT,
            "margin": {"t": 90},
            "title": {"x": 0.5},
            "legend": {"orientation": "h", "x": 0.5, "xanchor": "center", "y": 1.0, "yanchor": "bottom"},
            "xaxis": {"title": {"text": tr("offset δ (positions; negative: the other vector comes first)")}},
            "yaxis": {"title": {"text": tr("cosine similarity")}, "range": [-0.85, 1.05]},
        },
    )


@translatable
def sinusoidal_extrapolation_figure(
    train_length: int = 100,
    factor: int = 4,
    dim: int = 128,
    base: float = 10000.0,
    pairs: Sequence[int] = (0, 8, 16, 19, 20, 22, 24, 28, 32, 40, 48, 63),
    *,
    decimals: int = 3,
) -> go.Figure:
    r"""Past the training length, pair by pair: slider over pair ``i``.

    Left: the points :math:`(\cos p\theta_i, \sin p\theta_i)` = columns :math:`(2i+1, 2i)` of
    :func:`posviz.sinusoidal_encoding`, for training positions :math:`p < L` and for
    :math:`L \le p < \text{factor}\cdot L`. Right: the fraction of each pair's circle swept
    before :math:`L` and before :math:`\text{factor}\cdot L`
    (:func:`posviz.absolute.sinusoidal_phase_coverage`).
    """
    if factor < 2:
        raise ValueError(f"factor must be an integer >= 2, got {factor}")
    bad = [i for i in pairs if not 0 <= i < dim // 2]
    if bad:
        raise ValueError(f"pairs must lie in [0, {dim // 2 - 1}] for dim={dim}, got {bad}")
    long = factor * train_length
    pe = rounded(sinusoidal_encoding(long, dim, base, device=_CPU), decimals)
    lam = wavelengths(dim, base, device=_CPU, dtype=torch.float64)
    seen = rounded(sinusoidal_phase_coverage(train_length, dim, base, device=_CPU), decimals)
    reach = rounded(sinusoidal_phase_coverage(long, dim, base, device=_CPU), decimals)
    pair_index = np.arange(dim // 2)
    p = np.arange(long)
    train, past = slice(0, train_length), slice(train_length, long)

    def traces(i: int) -> list[go.Scatter]:
        return [
            go.Scatter(
                x=pe[past, 2 * i + 1],
                y=pe[past, 2 * i],
                customdata=p[past],
                mode="markers",
                marker={"size": 5, "color": "#ff7f0e"},
                legendrank=2,
                name=tr("{train_length} ≤ p < {long} (past the training length)", train_length=train_length, long=long),
                hovertemplate=tr("p = %{customdata}<br>(cos, sin) = (%{x:.3f}, %{y:.3f})<extra></extra>"),
            ),
            go.Scatter(
                x=pe[train, 2 * i + 1],
                y=pe[train, 2 * i],
                customdata=p[train],
                mode="markers",
                marker={"size": 7, "color": "#1f77b4"},
                legendrank=1,
                name=tr("training positions p < L = {train_length}", train_length=train_length),
                hovertemplate=tr("p = %{customdata}<br>(cos, sin) = (%{x:.3f}, %{y:.3f})<extra></extra>"),
            ),
            go.Scatter(
                x=pair_index,
                y=seen,
                xaxis="x2",
                yaxis="y2",
                mode="lines",
                line={"color": "#1f77b4"},
                name=tr("swept by p < {train_length}", train_length=train_length),
                hovertemplate=tr(
                    "pair %{x}: %{y:.1%} of the circle before p = {train_length}<extra></extra>",
                    train_length=train_length,
                ),
            ),
            go.Scatter(
                x=pair_index,
                y=reach,
                xaxis="x2",
                yaxis="y2",
                mode="lines",
                line={"color": "#ff7f0e", "dash": "dash"},
                name=tr("swept by p < {long}", long=long),
                hovertemplate=tr("pair %{x}: %{y:.1%} of the circle before p = {long}<extra></extra>", long=long),
            ),
            go.Scatter(
                x=[i, i],
                y=[seen[i], reach[i]],
                xaxis="x2",
                yaxis="y2",
                mode="markers",
                marker={"size": 11, "color": ["#1f77b4", "#ff7f0e"], "line": {"width": 1.5, "color": "black"}},
                showlegend=False,
                hovertemplate=tr("pair {i}: %{y:.1%}<extra></extra>", i=i),
            ),
        ]

    def title(i: int) -> str:
        lam_i = float(lam[i])
        return tr(
            "Pair i = {i}, wavelength λ<sub>{i}</sub> = {lam_i:,.1f} positions<br>p < "
            "{train_length} sweeps {percent} of its circle, p < {long} sweeps {percent2}",
            i=i,
            lam_i=lam_i,
            train_length=train_length,
            percent=_percent(seen[i]),
            long=long,
            percent2=_percent(reach[i]),
        )

    steps = [(str(i), lambda i=i: traces(i), {"title.text": title(i)}) for i in pairs]
    return slider_figure(
        steps,
        slider_label=tr("pair i"),
        layout={
            "height": 540,
            "font": _FONT,
            "margin": {"t": 125, "l": 60, "r": 20},
            "title": {"x": 0.5, "y": 0.97, "yanchor": "top"},
            "legend": {"orientation": "h", "x": 0.5, "xanchor": "center", "y": 1.02, "yanchor": "bottom"},
            "shapes": [
                {
                    "type": "circle",
                    "x0": -1,
                    "y0": -1,
                    "x1": 1,
                    "y1": 1,
                    "xref": "x",
                    "yref": "y",
                    "line": {"color": "lightgray", "width": 1},
                }
            ],
            "xaxis": {
                "domain": [0, 0.4],
                "range": [-1.2, 1.2],
                "constrain": "domain",
                "title": {"text": tr("cos(p θᵢ) = PE(p, 2i+1)")},
            },
            "yaxis": {
                "range": [-1.2, 1.2],
                "scaleanchor": "x",
                "constrain": "domain",
                "title": {"text": tr("sin(p θᵢ) = PE(p, 2i)")},
            },
            "xaxis2": {
                "domain": [0.6, 1],
                "anchor": "y2",
                "title": {"text": tr("pair i (d = {dim}, base = {base})", dim=dim, base=_base_label(base))},
            },
            "yaxis2": {
                "anchor": "x2",
                "range": [0, 1.05],
                "tickformat": ".0%",
                "title": {"text": tr("share of the circle swept")},
            },
        },
    )
