"""Figures of the *Relative position encoding* chapter: Shaw et al., Transformer-XL and T5.

Every figure is a :func:`posviz.plots.slider_figure` over states precomputed with ``posviz``, so
its slider and buttons work in the static page. Everything is seeded and computed on the CPU:
two builds give identical figures.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from .. import attention_weights, relative_positions, sinusoidal_encoding, t5_relative_bucket
from .._validate import check_int
from ..i18n import N_, tr, translatable
from ..relative import T5RelativeBias, absolute_score_terms, transformer_xl_scores
from ._sliders import heatmap_trace, slider_figure

__all__ = [
    "clipped_positions_figure",
    "demo_t5_bias_table",
    "t5_attention_figure",
    "t5_bucket_figure",
    "transformer_xl_terms_figure",
    "xl_demo_inputs",
]

_FONT = {"size": 13}


@translatable
def clipped_positions_figure(
    length: int = 16,
    clips: Sequence[int] = (0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 15),
    active: int = 3,
) -> go.Figure:
    r"""Shaw et al.'s clipped relative positions for every (query, key) pair; slider: the clip
    distance :math:`\kappa` (``clips``; the paper's :math:`k`).

    View buttons switch between this book's sign, :math:`\operatorname{clip}(m - n, -\kappa, \kappa)`,
    and the paper's index :math:`\operatorname{clip}(n - m, \kappa)` (key minus query): the same matrix
    mirrored. Each cell shows its value.
    """
    length = check_int("length", length, minimum=1)

    def hover(what: str) -> str:
        return tr("query m = %{y}<br>key n = %{x}<br>{what} = %{z}<extra></extra>", what=what)

    def traces(k: int) -> list[go.Heatmap]:
        r = relative_positions(length, max_distance=k, device="cpu")  # clip(m - n, -kappa, kappa)
        lim = max(k, 1)  # saturate at the clip: every clipped cell gets the darkest colour
        common = {"zmin": -lim, "zmax": lim, "texttemplate": "%{z}", "textfont": {"size": 10}}
        book = heatmap_trace(
            r,
            symmetric=True,
            hovertemplate=hover(tr("r = clip(m − n, −κ, κ)")),
            colorbar={"title": {"text": tr("clipped<br>offset")}},
            **common,
        )
        shaw = heatmap_trace(
            -r,
            symmetric=True,
            hovertemplate=hover(tr("Shaw's index clip(n − m, κ)")),
            colorbar={"title": {"text": tr("clipped<br>offset")}},
            **common,
        )  # Shaw et al. index by key minus query; the symmetric clip commutes with the sign flip
        return [book, shaw]

    steps = [
        (
            str(k),
            traces(k),
            {"title.text": tr("Clipped relative position, κ = {clip}: {value} table rows", clip=k, value=2 * k + 1)},
        )
        for k in clips
    ]
    layout = {
        "height": 520,
        "width": 600,
        "font": _FONT,
        "margin": {"t": 110, "b": 40},
        "xaxis": {"title": {"text": tr("key position n")}, "dtick": 2, "constrain": "domain"},
        "yaxis": {
            "title": {"text": tr("query position m")},
            "autorange": "reversed",
            "dtick": 2,
            "scaleanchor": "x",
            "constrain": "domain",
        },
    }
    return slider_figure(
        steps,
        slider_label=tr("clip distance κ"),
        layout=layout,
        active=active,
        views=[(tr("this book: clip(m − n, −κ, κ)"), [0]), (tr("Shaw et al.: clip(n − m, κ)"), [1])],
    )


def xl_demo_inputs(length: int, *, d_model: int = 32, d_head: int = 16, seed: int = 0) -> dict[str, torch.Tensor]:
    r"""Seeded random tokens ``e`` ``[length, d_model]`` and weights ``w_q, w_k, w_k_r``
    ``[d_head, d_model]``, ``u, v`` ``[d_head]``: a freshly initialised layer (weights scaled by
    :math:`1/\sqrt{d_\text{model}}`; tokens of about the norm of a sinusoid row, so that the four
    score terms have comparable sizes)."""
    length = check_int("length", length, minimum=1)
    g = torch.Generator().manual_seed(seed)
    e = torch.randn(length, d_model, generator=g) / 2**0.5  # token embeddings E, |E| ≈ |U| = sqrt(d/2)
    w_q, w_k, w_k_r = (torch.randn(d_head, d_model, generator=g) / d_model**0.5 for _ in range(3))
    u, v = torch.randn(d_head, generator=g), torch.randn(d_head, generator=g)
    return {"e": e, "w_q": w_q, "w_k": w_k, "w_k_r": w_k_r, "u": u, "v": v}


@translatable
def transformer_xl_terms_figure(
    length: int = 12,
    shifts: Sequence[int] = (0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144),
    *,
    d_model: int = 32,
    d_head: int = 16,
    seed: int = 0,
) -> go.Figure:
    """The four score terms, absolute (sinusoids added to the input) vs Transformer-XL.

    The same ``length`` tokens sit at positions ``s .. s + length - 1`` (slider: ``s``). View
    buttons: the absolute expansion (:func:`posviz.relative.absolute_score_terms` with rows
    ``s..`` of :func:`posviz.sinusoidal_encoding`) or Transformer-XL
    (:func:`posviz.relative.transformer_xl_scores`), whose terms do not move with ``s``.
    Weights and tokens are random (seeded): a freshly initialised layer.
    """
    x = xl_demo_inputs(length, d_model=d_model, d_head=d_head, seed=seed)
    e, w_q, w_k = x["e"], x["w_q"], x["w_k"]
    xl = transformer_xl_scores(e, e, w_q, w_k, x["w_k_r"], x["u"], x["v"])  # no absolute position: s plays no role

    def absolute(s: int):
        pe = sinusoidal_encoding(s + length, d_model, device="cpu")[s:]  # U_m for m = s .. s+L-1
        return absolute_score_terms(e, e, pe, pe, w_q, w_k)

    lim = float(max(max(t.abs().max() for t in absolute(s)) for s in shifts))
    lim = max(lim, float(max(t.abs().max() for t in xl)))
    names = [
        tr("(a) content–content"),
        tr("(b) content–position"),
        tr("(c) position–content"),
        tr("(d) position–position"),
    ]
    xl_names = [
        tr("(a) content–content"),
        tr("(b) content–position"),
        tr("(c) global content, u"),
        tr("(d) global position, v"),
    ]
    titles = [
        tr("(a) content · content"),
        tr("(b) content · key position"),
        tr("(c) U<sub>m</sub> or u · content"),
        tr("(d) U<sub>m</sub> or v · key position"),
    ]
    grid = make_subplots(rows=2, cols=2, subplot_titles=titles, horizontal_spacing=0.1, vertical_spacing=0.16)

    def traces(s: int) -> list[go.Heatmap]:
        out = []
        for kind, terms, labels in ((N_("absolute"), absolute(s), names), ("Transformer-XL", xl, xl_names)):
            kind = tr(kind)
            for i, (term, label) in enumerate(zip(terms, labels)):
                out.append(
                    heatmap_trace(
                        term,
                        x=list(range(s, s + length)),
                        y=list(range(s, s + length)),
                        coloraxis="coloraxis",
                        xaxis=f"x{i + 1 if i else ''}",
                        yaxis=f"y{i + 1 if i else ''}",
                        name=tr("{kind} {label}", kind=kind, label=label),
                        hovertemplate=tr(
                            "{kind}, {label}<br>query m = %{y}<br>key n = %{x}<br>term = %{z:.2f}<extra></extra>",
                            kind=kind,
                            label=label,
                        ),
                    )
                )
        return out

    steps = [
        (
            str(s),
            traces(s),
            {
                "title.text": tr(
                    "The same {length} tokens at positions {s} … {value}", length=length, s=s, value=s + length - 1
                )
            },
        )
        for s in shifts
    ]
    layout = grid.layout.to_plotly_json()
    layout.update(
        height=740,
        width=640,
        font=_FONT,
        margin={"t": 150, "b": 40, "l": 60, "r": 20},
        coloraxis={
            "colorscale": "RdBu",
            "reversescale": True,
            "cmin": -lim,
            "cmax": lim,
            "colorbar": {"title": {"text": tr("term<br>value")}, "len": 0.8},
        },
    )
    for i in range(4):
        suffix = str(i + 1) if i else ""
        layout[f"yaxis{suffix}"] = {
            **layout.get(f"yaxis{suffix}", {}),
            "autorange": "reversed",
            "scaleanchor": f"x{suffix}",
            "constrain": "domain",
            "title": {"text": tr("query m") if i % 2 == 0 else ""},
        }
        layout[f"xaxis{suffix}"] = {**layout.get(f"xaxis{suffix}", {}), "constrain": "domain"}
        layout[f"xaxis{suffix}"]["title"] = {"text": tr("key n") if i >= 2 else ""}
    for annotation in layout["annotations"]:  # the subplot titles
        annotation["font"] = {"size": 13}
    fig = slider_figure(
        steps,
        slider_label=tr("first position s"),
        layout=layout,
        views=[(tr("absolute: Uₘ added to Eₘ"), [0, 1, 2, 3]), (tr("Transformer-XL: R₍ₘ₋ₙ₎"), [4, 5, 6, 7])],
    )
    fig.layout.updatemenus[0].y = 1.07  # above the subplot titles
    return fig


_T5_SETTINGS = tuple((b, d) for b in (8, 16, 32, 64) for d in (64, 128, 512))


@translatable
def t5_bucket_figure(
    settings: Sequence[tuple[int, int]] = _T5_SETTINGS,
    max_offset: int = 2048,
    active: int | None = None,
) -> go.Figure:
    """T5's bucket as a function of the distance ``|m - n|`` (log axis); slider: (buckets, max).

    Four traces: keys before and after the query, bidirectional and causal; the view buttons
    show one mode at a time. Dotted lines mark where the log-spaced buckets begin (bidirectional
    and causal) and ``max_distance``.
    """
    max_offset = check_int("max_offset", max_offset, minimum=2)
    distance = torch.arange(1, max_offset + 1)  # |m - n| >= 1 (0 is bucket 0 in every mode)
    if active is None:
        active = list(settings).index((32, 128)) if (32, 128) in settings else 0

    def traces(num_buckets: int, max_distance: int) -> list[go.Scatter]:
        out = []
        for bidirectional in (True, False):
            past = t5_relative_bucket(
                -distance, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
            )  # key before the query: n - m < 0
            future = t5_relative_bucket(
                distance, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
            )  # key after the query: n - m > 0
            mode = tr(N_("bidirectional") if bidirectional else N_("causal"))
            for label, y, colour, after in (
                (tr("key before query (m > n)"), past, "#1f77b4", False),
                (tr("key after query (m < n)"), future, "#d62728", True),
            ):
                keep = torch.ones_like(y, dtype=torch.bool)  # where the bucket changes, and the end
                keep[1:-1] = y[1:-1] != y[:-2]
                out.append(
                    go.Scatter(
                        x=distance[keep].numpy(),
                        y=y[keep].numpy(),
                        mode="lines",
                        line={"shape": "hv", "color": colour},
                        name=tr("{label}, masked", label=label) if after and not bidirectional else label,
                        hovertemplate=tr(
                            "{mode}, {label}<br>|m − n| = %{x}<br>bucket %{y}<extra></extra>", mode=mode, label=label
                        ),
                    )
                )
        return out

    def shapes(num_buckets: int, max_distance: int) -> list[dict]:
        marks = (
            (num_buckets // 4, tr("log buckets from {value} (bidirectional)", value=num_buckets // 4), 0.9),
            (num_buckets // 2, tr("log buckets from {value} (causal)", value=num_buckets // 2), 0.82),
            (max_distance, tr("max_distance {max_distance}", max_distance=max_distance), 0.74),
        )
        return [
            {
                "type": "line",
                "x0": x,
                "x1": x,
                "y0": 0,
                "y1": y,
                "yref": "paper",
                "line": {"dash": "dot", "color": "grey", "width": 1},
                "label": {
                    "text": text,
                    "textangle": 0,
                    "textposition": "end",
                    "xanchor": "left",
                    "font": {"size": 11, "color": "#333"},
                },
            }
            for x, text, y in marks
        ]

    steps = [
        (
            f"{b} / {d}",
            traces(b, d),
            {
                "title.text": tr("T5 buckets: num_buckets = {b}, max_distance = {d}", b=b, d=d),
                "yaxis.range": [-0.5, 1.45 * b],  # room above the staircase for the labels
                "shapes": shapes(b, d),
            },
        )
        for b, d in settings
    ]
    layout = {
        "height": 480,
        "font": _FONT,
        "margin": {"t": 110, "r": 30},
        "xaxis": {
            "type": "log",
            "range": [0, math.log10(max_offset)],
            "title": {"text": tr("distance |m − n| between query and key (log scale)")},
        },
        "yaxis": {"title": {"text": tr("bucket index")}},
        "legend": {"x": 0.99, "xanchor": "right", "y": 0.02, "yanchor": "bottom", "bgcolor": "rgba(255,255,255,0.8)"},
    }
    return slider_figure(
        steps,
        slider_label=tr("num_buckets / max_distance"),
        layout=layout,
        active=active,
        views=[(tr("bidirectional (encoder)"), [0, 1]), (tr("causal (decoder)"), [2, 3])],
    )


def demo_t5_bias_table(num_heads: int = 8, num_buckets: int = 32) -> torch.Tensor:
    """Hand-set (not learned) bidirectional T5 bias values, ``[num_buckets, num_heads]``.

    With ``N = num_buckets // 2`` buckets per direction and ``j`` the bucket's index within its
    direction (``0`` for the query itself): head 0 has no bias; heads 1 .. H-3 decay both ways,
    ``-s_h j`` with ``s_h = 0.25 * 2^(h-1)``; head H-2 looks back (``-0.5 j`` before, ``-10``
    after); head H-1 looks ahead (the mirror).
    """
    num_heads = check_int("num_heads", num_heads, minimum=3)
    half = check_int("num_buckets", num_buckets, minimum=4) // 2
    j = torch.arange(half, dtype=torch.float32)
    table = torch.zeros(num_buckets, num_heads)
    for h in range(1, num_heads - 2):
        table[:half, h] = table[half : 2 * half, h] = -0.25 * 2 ** (h - 1) * j
    table[:half, -2], table[half : 2 * half, -2] = -0.5 * j, -10.0
    table[:half, -1], table[half : 2 * half, -1] = torch.where(j == 0, 0.0, -10.0), -0.5 * j
    return table


def _head_label(h: int, num_heads: int) -> str:
    if h == 0:
        return tr("no bias")
    if h == num_heads - 2:
        return tr("looks back")
    if h == num_heads - 1:
        return tr("looks ahead")
    return tr("decay {value:g} per bucket", value=0.25 * 2 ** (h - 1))


@translatable
def t5_attention_figure(length: int = 32, num_heads: int = 8, head_dim: int = 16, seed: int = 0) -> go.Figure:
    """Attention weights of random queries and keys, without and with a T5 bias; slider: head.

    The bias is :class:`posviz.T5RelativeBias` (bidirectional, 32 buckets, max distance 128)
    holding :func:`demo_t5_bias_table`. View buttons: content only, content + bias, bias alone.
    """
    length = check_int("length", length, minimum=1)
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_heads, length, head_dim, generator=g)
    k = torch.randn(num_heads, length, head_dim, generator=g)
    t5 = T5RelativeBias(num_heads)
    with torch.no_grad():
        t5.embedding.weight.copy_(demo_t5_bias_table(num_heads, 32))
        bias = t5(length)  # [H, L, L]
    plain = attention_weights(q, k)
    biased = attention_weights(q, k, bias=bias)
    wmax = 0.5

    def hover(what: str) -> str:
        return tr("query m = %{y}<br>key n = %{x}<br>{what}<extra></extra>", what=what)

    def traces(h: int) -> list[go.Heatmap]:
        weight_bar = {"title": {"text": tr("attention<br>weight<br>(0.5 and up<br>in yellow)")}}
        return [
            heatmap_trace(
                plain[h],
                zmin=0,
                zmax=wmax,
                colorscale="Viridis",
                colorbar=weight_bar,
                hovertemplate=hover(tr("weight %{z:.3f}")),
            ),
            heatmap_trace(
                biased[h],
                zmin=0,
                zmax=wmax,
                colorscale="Viridis",
                colorbar=weight_bar,
                hovertemplate=hover(tr("weight %{z:.3f}")),
            ),
            heatmap_trace(
                bias[h],
                zmin=-10,
                zmax=0,
                colorscale="Blues",
                reversescale=True,
                colorbar={"title": {"text": tr("bias b")}},
                hovertemplate=hover(tr("bias %{z:.2f}")),
            ),
        ]

    steps = [
        (str(h), traces(h), {"title.text": tr("Head {h}: {head}", h=h, head=_head_label(h, num_heads))})
        for h in range(num_heads)
    ]
    layout = {
        "height": 520,
        "width": 620,
        "font": _FONT,
        "margin": {"t": 110, "b": 40},
        "xaxis": {"title": {"text": tr("key position n")}, "constrain": "domain"},
        "yaxis": {
            "title": {"text": tr("query position m")},
            "autorange": "reversed",
            "scaleanchor": "x",
            "constrain": "domain",
        },
    }
    return slider_figure(
        steps,
        slider_label=tr("head"),
        layout=layout,
        active=min(3, num_heads - 1),
        views=[(tr("content + T5 bias"), [1]), (tr("content only"), [0]), (tr("bias alone"), [2])],
    )
