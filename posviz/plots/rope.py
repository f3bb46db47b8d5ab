"""Slider figures for the RoPE chapter (they work in the static page, with no kernel).

Every number drawn comes from a :mod:`posviz.rope` function: :func:`~posviz.apply_rope` (the
rotated pairs), :func:`~posviz.rope.rope_angles` (the angles :math:`m\\theta_i`),
:func:`~posviz.rope.rope_scores` (the score matrix) and :func:`~posviz.rope_mean_partial_sum` (the
long-term-decay curve). Values are rounded to five significant digits to keep the page small.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from ..frequencies import rope_frequencies
from ..i18n import N_, number, tr, translatable
from ..rope import (
    apply_rope,
    rope_angles,
    rope_complex_view,
    rope_layout_permutation,
    rope_mean_partial_sum,
    rope_scores,
)
from ._numbers import significant
from ._sliders import heatmap_trace, slider_figure

__all__ = [
    "rope_angle_figure",
    "rope_decay_figure",
    "rope_rotation_figure",
    "rope_score_matrix_figure",
]

Q_COLOR, K_COLOR = "#1f77b4", "#ff7f0e"
BASE_COLORS = ("#2ca02c", "#1f77b4", "#d62728", "#9467bd", "#8c564b")


_LAYOUT_NAMES = (N_("interleaved"), N_("half"))  # the pair layouts, as figures name them


def base_label(base: float) -> str:
    """``10000.0 -> "10 000"``, ``31.62 -> "31.6"``: a base written for a legend or a button."""
    if float(base).is_integer():
        return number(f"{int(base):,}".replace(",", " "))  # Chinese: 10000
    return f"{base:.3g}"


def _seeded_vector(dim: int, seed: int, offset: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(2, dim, generator=g, dtype=torch.float64)[offset]


def _unit_pairs(dim: int, seed: int, offset: int, layout: str) -> torch.Tensor:
    """A seeded vector whose every pair has length 1 (random directions), in ``layout``'s pairing."""
    g = torch.Generator().manual_seed(seed)
    phi = 2 * math.pi * torch.rand(2, dim // 2, generator=g, dtype=torch.float64)[offset]
    inter = torch.stack((torch.cos(phi), torch.sin(phi)), dim=-1).flatten()  # (x_2i, x_2i+1) = (cos, sin)
    return inter if layout == "interleaved" else inter[rope_layout_permutation(dim, device="cpu")]


def _vector(name: str, x: torch.Tensor | None, dim: int, seed: int, offset: int) -> torch.Tensor:
    if x is None:
        return _seeded_vector(dim, seed, offset)
    if not isinstance(x, torch.Tensor) or x.shape != (dim,):
        raise ValueError(f"{name} must be a tensor of shape [{dim}] (dim), got {getattr(x, 'shape', type(x))}")
    return x.detach().to("cpu", torch.float64)


def _arrow(x: float, y: float, color: str, name: str, text: str, legend: bool, axes: tuple[str, str]) -> go.Scatter:
    return go.Scatter(
        x=[0.0, x],
        y=[0.0, y],
        mode="lines+markers",
        line={"color": color, "width": 3},
        marker={"symbol": "arrow", "angleref": "previous", "size": [0, 14], "color": color},
        name=name,
        legendgroup=name,
        showlegend=legend,
        hovertext=["", text],
        hoverinfo="text",
        xaxis=axes[0],
        yaxis=axes[1],
    )


def _circle(radius: float, color: str, axes: tuple[str, str]) -> go.Scatter:
    t = np.linspace(0, 2 * math.pi, 49)
    return go.Scatter(
        x=significant(radius * np.cos(t), 5),
        y=significant(radius * np.sin(t), 5),
        mode="lines",
        line={"color": color, "width": 1, "dash": "dot"},
        hoverinfo="skip",
        showlegend=False,
        xaxis=axes[0],
        yaxis=axes[1],
    )


@translatable
def rope_rotation_figure(
    q: torch.Tensor | None = None,
    k: torch.Tensor | None = None,
    *,
    dim: int = 128,
    base: float = 10000.0,
    pairs: Sequence[int] = (0, 8, 16, 63),
    positions: Sequence[int] | None = None,
    offset: int = 4,
    layout: str = "interleaved",
    seed: int = 7,
) -> go.Figure:
    """A query and a key rotating in a few 2-D planes as the query position ``m`` moves.

    The query sits at ``m`` and the key at ``n = m - offset``; one subplot per pair ``i`` of
    ``pairs`` draws pair ``i`` of :func:`~posviz.apply_rope` of each (in the complex view of
    :func:`~posviz.rope.rope_complex_view`: real part across, imaginary part up). Both arrows turn
    by :math:`\\theta_i` per step, so the angle between them, and the pair's share of the score,
    stays fixed. ``q`` and ``k`` default to seeded vectors whose pairs have length 1 (seed 7 keeps
    the default arrows apart);
    ``positions`` defaults to the 16 positions ``offset .. offset + 15`` (so ``n >= 0``).
    """
    q = _unit_pairs(dim, seed, 0, layout) if q is None else _vector("q", q, dim, seed, 0)
    k = _unit_pairs(dim, seed, 1, layout) if k is None else _vector("k", k, dim, seed, 1)
    pairs = [int(i) for i in pairs]
    bad = [i for i in pairs if not 0 <= i < dim // 2]
    if bad or not pairs:
        raise ValueError(f"pairs must be a non-empty list of pair indices in [0, {dim // 2 - 1}], got {pairs}")
    m = torch.tensor(list(range(offset, offset + 16)) if positions is None else list(positions), dtype=torch.float64)
    if m.numel() < 2:
        raise ValueError(f"positions must hold at least 2 positions, got {m.tolist()}")
    rq = rope_complex_view(apply_rope(q.expand(len(m), dim), m, base, layout=layout), layout=layout)
    rk = rope_complex_view(apply_rope(k.expand(len(m), dim), m - offset, base, layout=layout), layout=layout)
    theta = rope_frequencies(dim, base, device="cpu", dtype=torch.float64)
    q0, k0 = rope_complex_view(q, layout=layout), rope_complex_view(k, layout=layout)
    dims = [(2 * i, 2 * i + 1) if layout == "interleaved" else (i, i + dim // 2) for i in pairs]

    titles = [tr("pair i = {i}<br>θ<sub>i</sub> = {theta:.3g} rad/token", i=i, theta=theta[i].item()) for i in pairs]
    frame = make_subplots(rows=1, cols=len(pairs), subplot_titles=titles, horizontal_spacing=0.05)
    axes = [("x" if c == 0 else f"x{c + 1}", "y" if c == 0 else f"y{c + 1}") for c in range(len(pairs))]

    def traces(s: int) -> list[go.Scatter]:
        out = []
        for c, i in enumerate(pairs):
            zq, zk = complex(rq[s, i]), complex(rk[s, i])
            share = (zq * zk.conjugate()).real  # this pair's term of q_m . k_n
            mq, nk = m[s].item(), m[s].item() - offset
            out += [
                _circle(abs(q0[i].item()), Q_COLOR, axes[c]),
                _circle(abs(k0[i].item()), K_COLOR, axes[c]),
                _arrow(
                    round(zq.real, 5),
                    round(zq.imag, 5),
                    Q_COLOR,
                    tr("query q at m"),
                    tr(
                        "query pair {i} at m = {mq:g}<br>angle turned m·θ<sub>i</sub> = {value:.4g} "
                        "rad<br>this pair's share of the score: {share:.4f}",
                        i=i,
                        mq=mq,
                        value=mq * theta[i].item(),
                        share=share,
                    ),
                    c == 0,
                    axes[c],
                ),
                _arrow(
                    round(zk.real, 5),
                    round(zk.imag, 5),
                    K_COLOR,
                    tr("key k at n = m − {offset}", offset=offset),
                    tr(
                        "key pair {i} at n = {nk:g}<br>angle turned n·θ<sub>i</sub> = {value:.4g} "
                        "rad<br>this pair's share of the score: {share:.4f}",
                        i=i,
                        nk=nk,
                        value=nk * theta[i].item(),
                        share=share,
                    ),
                    c == 0,
                    axes[c],
                ),
            ]
        return out

    steps = [
        (
            f"{m[s].item():g}",
            (lambda s=s: traces(s)),
            {
                "title.text": tr(
                    "Query at m = {m:g}, key at n = m − {offset} = {value:g}",
                    m=m[s].item(),
                    offset=offset,
                    value=m[s].item() - offset,
                )
            },
        )
        for s in range(len(m))
    ]
    layout_dict = frame.layout.to_plotly_json()
    for c, i in enumerate(pairs):
        r = 1.15 * max(abs(q0[i].item()), abs(k0[i].item()), 1e-9)
        a, b = dims[c]
        xa, ya = ("xaxis" if c == 0 else f"xaxis{c + 1}"), ("yaxis" if c == 0 else f"yaxis{c + 1}")
        layout_dict[xa] = {
            **layout_dict.get(xa, {}),
            "range": [-r, r],
            "title": {"text": f"x<sub>{a}</sub>"},
            "zeroline": True,
            "nticks": 5,
        }
        layout_dict[ya] = {
            **layout_dict.get(ya, {}),
            "range": [-r, r],
            "title": {"text": f"x<sub>{b}</sub>", "standoff": 2},
            "scaleanchor": axes[c][0],
            "scaleratio": 1,
            "zeroline": True,
            "nticks": 5,
        }
    for annotation in layout_dict.get("annotations", []):  # the subplot titles
        annotation["font"] = {"size": 13}
    layout_dict.update(
        height=440,
        margin={"t": 110, "b": 40, "l": 50, "r": 20},
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.2, "yanchor": "bottom"},
        title={"x": 0, "xanchor": "left", "y": 0.97},
        hovermode="closest",
    )
    return slider_figure(steps, slider_label=tr("query position m"), layout=layout_dict)


@translatable
def rope_angle_figure(
    dim: int = 128,
    bases: Sequence[float] = (100.0, 10000.0, 500000.0),
    positions: Sequence[int] = tuple(2**e for e in range(13)),
) -> go.Figure:
    """Angle :math:`m\\theta_i` of every pair ``i`` at position ``m`` (log scale), one line per base.

    The slider picks ``m``; the buttons show one base or all. A dashed line marks one full turn
    (:math:`2\\pi`): pairs above it have wrapped round at least once, pairs far below it have
    hardly moved. Data: :func:`~posviz.rope.rope_angles`.
    """
    if not bases:
        raise ValueError("bases must not be empty")
    pos = torch.tensor([float(p) for p in positions], dtype=torch.float64)
    if pos.numel() < 2 or bool((pos <= 0).any()):
        raise ValueError(f"positions must hold at least 2 positions, all > 0 (log axis), got {pos.tolist()}")
    angles = [rope_angles(pos, dim, b) for b in bases]  # [P, d/2] per base
    i = np.arange(dim // 2)
    lo = min(a.min().item() for a in angles)
    hi = max(a.max().item() for a in angles)

    def traces(s: int) -> list[go.Scatter]:
        out = []
        for b, a, color in zip(bases, angles, BASE_COLORS):
            y = significant(a[s], 5)
            out.append(
                go.Scatter(
                    x=i,
                    y=y,
                    customdata=significant(y / (2 * math.pi), 3),
                    mode="lines+markers",
                    marker={"size": 4},
                    line={"color": color},
                    name=tr("base {base}", base=base_label(b)),
                    hovertemplate=tr(
                        "base {base}, pair i = %{x}<br>m·θ<sub>i</sub> = %{y:.4g} rad = %{customdata} "
                        "turns<extra></extra>",
                        base=base_label(b),
                    ),
                )
            )
        out.append(
            go.Scatter(
                x=[0, dim // 2 - 1],
                y=[2 * math.pi, 2 * math.pi],
                mode="lines",
                line={"color": "black", "dash": "dash", "width": 1},
                name=tr("one full turn (2π rad)"),
                hoverinfo="skip",
            )
        )
        return out

    steps = [
        (f"{p:g}", (lambda s=s: traces(s)), {"title.text": tr("Angle turned by each pair at position m = {p:g}", p=p)})
        for s, p in enumerate(pos.tolist())
    ]
    views = [(tr("all bases"), list(range(len(bases) + 1)))]
    views += [(tr("base {base}", base=base_label(b)), [j, len(bases)]) for j, b in enumerate(bases)]
    layout = {
        "height": 480,
        "margin": {"t": 110, "b": 40},
        "title": {"x": 0, "xanchor": "left", "y": 0.97},
        "xaxis": {
            "title": {
                "text": tr("pair index i (0 = fastest, {value} = slowest), d = {dim}", value=dim // 2 - 1, dim=dim)
            }
        },
        "yaxis": {
            "title": {"text": tr("angle m·θ<sub>i</sub> (radians, log scale)")},
            "type": "log",
            "range": [math.log10(lo) - 0.3, math.log10(hi) + 0.3],
            "exponentformat": "power",
        },
        "legend": {"x": 0.01, "xanchor": "left", "y": 0.02, "yanchor": "bottom", "bgcolor": "rgba(255,255,255,0.8)"},
    }
    plist = pos.tolist()
    active = plist.index(16.0) if 16.0 in plist else len(plist) // 2
    return slider_figure(steps, slider_label=tr("position m"), layout=layout, views=views, active=active)


@translatable
def rope_score_matrix_figure(
    q: torch.Tensor | None = None,
    k: torch.Tensor | None = None,
    *,
    dim: int = 64,
    length: int = 40,
    bases: Sequence[float] = tuple(10 ** (e / 2) for e in range(2, 13)),
    seed: int = 0,
) -> go.Figure:
    """The score matrix :math:`q_m^\\top k_n` when the same ``q`` and ``k`` sit at every position.

    Scores from :func:`~posviz.rope.rope_scores` (``scale=1``); the slider picks the base, the
    buttons the pair layout applied to the same (unpermuted) vectors. Every diagonal
    :math:`m - n = r` is constant: the matrix is Toeplitz, in both layouts, but the two layouts
    give different matrices. The colour scale is shared by every state.
    """
    q, k = _vector("q", q, dim, seed, 0), _vector("k", k, dim, seed, 1)
    if not (isinstance(length, int) and length >= 2):
        raise ValueError(f"length must be an integer >= 2, got {length!r}")
    if not bases:
        raise ValueError("bases must not be empty")
    layouts = ("interleaved", "half")
    scores = {
        (b, lay): rope_scores(q.expand(length, dim), k.expand(length, dim), base=b, layout=lay)
        for b in bases
        for lay in layouts
    }
    zmax = max(s.abs().max().item() for s in scores.values())
    pos = np.arange(length)
    rel = pos[:, None] - pos[None, :]

    def traces(b: float) -> list[go.Heatmap]:
        return [
            heatmap_trace(
                significant(scores[(b, lay)], 4),
                symmetric=True,
                x=pos,
                y=pos,
                zmin=-zmax,
                zmax=zmax,
                customdata=rel,
                colorbar={"title": {"text": tr("score")}},
                hovertemplate=tr(
                    "{lay} pairs<br>query m = %{y}, key n = %{x}<br>r = m − n = %{customdata}"
                    "<br>score = %{z:.4g}<extra></extra>",
                    lay=tr(lay),
                ),
            )
            for lay in layouts
        ]

    steps = [
        (
            base_label(b),
            (lambda b=b: traces(b)),
            {"title.text": tr("Scores, same q and k at every position (base {base})", base=base_label(b))},
        )
        for b in bases
    ]
    views = [(tr("interleaved pairs (2i, 2i+1)"), [0]), (tr("half pairs (i, i+d/2)"), [1])]
    layout = {
        "height": 620,
        "width": 580,
        "margin": {"t": 110, "b": 40, "l": 70, "r": 20},
        "title": {"x": 0, "xanchor": "left", "y": 0.97},
        "xaxis": {"title": {"text": tr("key position n")}, "constrain": "domain"},
        "yaxis": {"title": {"text": tr("query position m")}, "autorange": "reversed", "scaleanchor": "x"},
    }
    active = min(range(len(bases)), key=lambda j: abs(math.log10(bases[j]) - 4))  # base 10^4 if present
    return slider_figure(steps, slider_label=tr("base"), layout=layout, views=views, active=active)


@translatable
def rope_decay_figure(
    dims: Sequence[int] = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512),
    bases: Sequence[float] = (100.0, 10000.0, 1000000.0),
    max_distance: int = 1024,
) -> go.Figure:
    """RoFormer's long-term-decay curve against the relative distance :math:`|m - n|`.

    The curve is :func:`~posviz.rope_mean_partial_sum`, :math:`\\frac{1}{d/2}\\sum_j |S_j|`; the slider
    picks ``d`` (the y axis follows, the curve starts at :math:`(d/2 + 1)/2`), the buttons the base.
    """
    if not dims or not bases:
        raise ValueError("dims and bases must not be empty")
    if not (isinstance(max_distance, int) and max_distance >= 1):
        raise ValueError(f"max_distance must be an integer >= 1, got {max_distance!r}")
    r = torch.arange(0, max_distance + 1, dtype=torch.float64)
    x = r.numpy().astype(int)

    def traces(d: int) -> list[go.Scatter]:
        return [
            go.Scatter(
                x=x,
                y=significant(rope_mean_partial_sum(r, d, b), 4),
                mode="lines",
                line={"color": color, "width": 1.5},
                name=tr("base {base}", base=base_label(b)),
                hovertemplate=(
                    tr(
                        "base {base}, d = {d}<br>|m − n| = %{x}<br>mean |S<sub>j</sub>| = %{y:.4g}<extra></extra>",
                        base=base_label(b),
                        d=d,
                    )
                ),
            )
            for b, color in zip(bases, BASE_COLORS)
        ]

    steps = [
        (
            str(d),
            (lambda d=d: traces(d)),
            {
                "yaxis.range": [0, 1.05 * (d / 2 + 1) / 2],
                "title.text": tr("Long-term decay: the distance factor of RoFormer's bound, d = {d}", d=d),
            },
        )
        for d in dims
    ]
    default = next((j for j, b in enumerate(bases) if b == 10000.0), 0)
    views = [(tr("base {base}", base=base_label(bases[default])), [default])]
    views += [(tr("base {base}", base=base_label(b)), [j]) for j, b in enumerate(bases) if j != default]
    views += [(tr("all bases"), list(range(len(bases))))]
    layout = {
        "height": 460,
        "margin": {"t": 110, "b": 40},
        "title": {"x": 0, "xanchor": "left", "y": 0.97},
        "xaxis": {"title": {"text": tr("relative distance |m − n| (tokens)")}, "range": [0, max_distance]},
        "yaxis": {"title": {"text": tr("mean partial sum (1/(d/2))·Σ<sub>j</sub>|S<sub>j</sub>|")}},
        "legend": {"x": 1, "xanchor": "right", "y": 1, "yanchor": "top", "bgcolor": "rgba(255,255,255,0.8)"},
    }
    active = next((j for j, d in enumerate(dims) if d == 128), 0)
    return slider_figure(steps, slider_label="d", layout=layout, views=views, active=active)
