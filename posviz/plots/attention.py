"""Figures for the chapter *Why position matters: the attention math*.

Two slider figures that work in the static page (every state is precomputed with
``posviz.dot_product``): :func:`scale_figure` (why the scores are divided by √d) and
:func:`permutation_figure` (attention without position is permutation-equivariant; position
added to x, rotating q and k, or biasing the scores breaks the symmetry). The toy helpers make
seeded word vectors and projections, and measure how far a layer is from
permutation-equivariance; they are measurements, not formulas of the book.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence

import plotly.graph_objects as go
import torch

from .._validate import check_even_dim, check_int, check_positive
from ..absolute import sinusoidal_encoding
from ..alibi import alibi_bias, check_slopes
from ..dot_product import attention_scores, attention_weights, self_attention
from ..i18n import N_, tr, translatable
from ._sliders import heatmap_trace, slider_figure

__all__ = [
    "DEFAULT_SENTENCE",
    "METHOD_LABELS",
    "permutation_figure",
    "permutation_gap",
    "position_kwargs",
    "random_qk",
    "scale_figure",
    "toy_embeddings",
    "toy_projections",
]

DEFAULT_SENTENCE = ("the", "hungry", "dog", "bites", "a", "man")


def toy_embeddings(words: Sequence[str], dim: int, *, seed: int = 0) -> torch.Tensor:
    """Seeded random vectors, one row per word, ``[len(words), dim]`` (float32, CPU).

    A word's vector depends only on the word, ``dim`` and ``seed`` (it is drawn from a generator
    seeded with the CRC-32 of ``"seed:word"``), so the same word gets the same vector in every sentence.
    Entries are standard normal.
    """
    if isinstance(words, str) or not all(isinstance(w, str) for w in words):
        raise TypeError(f"words must be a sequence of strings, got {words!r}")
    dim = check_int("dim", dim, minimum=1)
    seed = check_int("seed", seed, minimum=0)
    rows = []
    for word in words:
        g = torch.Generator().manual_seed(zlib.crc32(f"{seed}:{word}".encode()))  # torch's CPU seed: 32 bits
        rows.append(torch.randn(dim, generator=g))
    return torch.stack(rows) if rows else torch.zeros(0, dim)


def toy_projections(dim: int, *, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seeded ``W_q, W_k, W_v``, each ``[dim, dim]`` with entries of variance ``1/dim``.

    With that variance a unit-variance input gives queries and keys whose components have
    variance about 1, the setting in which the scores ``q·k/√d`` have variance about 1.
    """
    dim = check_int("dim", dim, minimum=1)
    seed = check_int("seed", seed, minimum=0)
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(3, dim, dim, generator=g) / math.sqrt(dim)
    return w[0], w[1], w[2]


def permutation_gap(
    x: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    w_v: torch.Tensor,
    perm: torch.Tensor | Sequence[int],
    *,
    position: torch.Tensor | None = None,
    rope_base: float | None = None,
    bias: torch.Tensor | None = None,
    causal: bool = False,
    scale: float | None = None,
) -> float:
    """``max |Attn(x[perm]) - Attn(x)[perm]|``: how far shuffling the input is from shuffling
    the output. Zero (up to rounding) for attention without position.

    Position stays with the slot, not the token: ``position`` (:math:`p_m`), the RoPE rotation
    (``rope_base``) and ``bias`` (:math:`B_{mn}`) apply to the shuffled sequence by slot ``m``
    whichever token lands there; the keywords are those of :func:`posviz.self_attention`.
    Row ``m`` of ``x[perm]`` is token ``perm[m]``.
    """
    perm = torch.as_tensor(perm, dtype=torch.long)
    length = x.shape[-2]
    if perm.dim() != 1 or perm.numel() != length or not torch.equal(perm.sort().values, torch.arange(length)):
        raise ValueError(f"perm must be a permutation of 0..{length - 1}, got {perm.tolist()}")
    kwargs = {"position": position, "rope_base": rope_base, "bias": bias, "causal": causal, "scale": scale}
    out, _ = self_attention(x, w_q, w_k, w_v, **kwargs)
    out_shuffled, _ = self_attention(x[..., perm, :], w_q, w_k, w_v, **kwargs)
    return float((out_shuffled - out[..., perm, :]).abs().max()) if out.numel() else 0.0


def random_qk(length: int, dim: int, *, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded standard-normal queries and keys, each ``[length, dim]`` (float64, CPU): the
    inputs of :func:`scale_figure` at dimension ``dim``."""
    length = check_int("length", length, minimum=1)
    dim = check_int("dim", dim, minimum=1)
    seed = check_int("seed", seed, minimum=0)
    g = torch.Generator().manual_seed(seed * 100_003 + dim)
    q, k = torch.randn(2, length, dim, generator=g, dtype=torch.float64)
    return q, k


def _check_dims(dims: Sequence[int]) -> list[int]:
    dims = [check_int("dims[i]", d, minimum=1) for d in dims]
    if len(dims) < 2:
        raise ValueError(f"dims must hold at least 2 dimensions (one slider step each), got {dims}")
    return dims


@translatable
def scale_figure(
    dims: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048),
    *,
    length: int = 10,
    seed: int = 0,
    active: int | None = None,
) -> go.Figure:
    """Attention weights of random unit-variance queries and keys, with and without the 1/√d.

    One slider step per dimension ``d``: left, ``softmax(q·k/√d)``; right, ``softmax(q·k)``.
    The same seeded ``q, k`` (``[length, d]``, standard normal) feed both panels. The title
    gives the average over queries of the largest weight and the standard deviation of the
    scores, for each panel. The slider starts at ``d = 16`` (if listed) unless ``active`` says.
    """
    dims = _check_dims(dims)
    length = check_int("length", length, minimum=2, maximum=64)
    seed = check_int("seed", seed, minimum=0)
    hover = tr("query m = %{y}<br>key n = %{x}<br>weight a<sub>mn</sub> = %{z:.3f}<extra></extra>")
    steps = []
    for d in dims:
        q, k = random_qk(length, d, seed=seed)
        panels, numbers = [], []
        for axis, scale in (("", None), ("2", 1.0)):
            scores = attention_scores(q, k, scale=scale)
            weights = attention_weights(q, k, scale=scale)
            numbers.append((weights.max(-1).values.mean().item(), scores.std().item()))
            panels.append(
                heatmap_trace(weights, coloraxis="coloraxis", xaxis=f"x{axis}", yaxis=f"y{axis}", hovertemplate=hover)
            )
        (top_s, std_s), (top_u, std_u) = numbers
        title = tr(
            "d = {d}: mean largest weight {top_s:.2f} with ÷√d, {top_u:.2f} without<br><span "
            "style='font-size:12px'>standard deviation of the scores: {std_s:.2f} with ÷√d, "
            "{std_u:.2f} without (√d = {sqrt:.1f})</span>",
            d=d,
            top_s=top_s,
            top_u=top_u,
            std_s=std_s,
            std_u=std_u,
            sqrt=math.sqrt(d),
        )
        steps.append((str(d), panels, {"title.text": title}))
    axis = {"title": {"text": tr("key position n")}, "dtick": 1 if length <= 16 else None, "constrain": "domain"}
    yaxis = {
        "title": {"text": tr("query position m")},
        "autorange": "reversed",
        "scaleanchor": "x",
        "constrain": "domain",
    }
    layout = {
        "height": 500,
        "margin": {"t": 110, "b": 40, "l": 60, "r": 20},
        "title": {"x": 0.5, "xanchor": "center", "font": {"size": 15}},
        "xaxis": {**axis, "domain": [0.0, 0.42]},
        "xaxis2": {**axis, "domain": [0.5, 0.92]},
        "yaxis": yaxis,
        "yaxis2": {**yaxis, "scaleanchor": "x2", "title": {"text": ""}},
        "coloraxis": {
            "colorscale": "Viridis",
            "cmin": 0.0,
            "cmax": 1.0,
            "colorbar": {"title": {"text": tr("weight a<sub>mn</sub>")}, "x": 0.95, "len": 0.8},
        },
        "annotations": [
            _panel_title(tr("softmax(q·k / √d): scaled"), 0.21),
            _panel_title(tr("softmax(q·k): unscaled"), 0.71),
        ],
    }
    if active is None:
        active = dims.index(16) if 16 in dims else 0
    return slider_figure(steps, slider_label=tr("dimension d"), layout=layout, active=active)


def _panel_title(text: str, x: float) -> dict:
    return {
        "text": f"<b>{text}</b>",
        "x": x,
        "y": 1.0,
        "xref": "paper",
        "yref": "paper",
        "xanchor": "center",
        "yanchor": "bottom",
        "showarrow": False,
        "font": {"size": 13},
    }


def _permutations(length: int, count: int, seed: int) -> list[list[int]]:
    """Identity, the swap of the 3rd and last tokens, the reversal, then seeded shuffles."""
    perms = [list(range(length)), list(range(length))[::-1]]
    if length >= 3:
        swap = list(range(length))
        swap[2], swap[-1] = swap[-1], swap[2]
        perms.insert(1, swap)
    g = torch.Generator().manual_seed(seed)
    limit = math.factorial(length)
    while len(perms) < min(count, limit):
        perm = torch.randperm(length, generator=g).tolist()
        if perm not in perms:
            perms.append(perm)
    unique = []
    for perm in perms:
        if perm not in unique:
            unique.append(perm)
    return unique[:count]


METHOD_LABELS = {
    "none": N_("no position"),
    "sinusoidal": N_("sinusoidal: add to x"),
    "rope": N_("RoPE: rotate q, k"),
    "alibi": N_("ALiBi: bias scores"),
}
"""The position methods of :func:`position_kwargs`, one for each place position can enter."""


def position_kwargs(
    method: str,
    length: int,
    dim: int,
    *,
    base: float = 10000.0,
    alibi_slope: float = 0.5,
    dtype: torch.dtype = torch.float32,
) -> dict[str, object]:
    """Keyword arguments of :func:`posviz.self_attention` that put position in one of
    the three places: ``"none"``; ``"sinusoidal"`` (added to x, :func:`posviz.sinusoidal_encoding`
    with ``base``); ``"rope"`` (rotating q and k, :func:`posviz.apply_rope` with ``base``);
    ``"alibi"`` (biasing the scores, :func:`posviz.alibi_bias` for one head of slope
    ``alibi_slope``, a real number >= 0 as ``posviz.alibi.check_slopes`` allows (0: no bias):
    the symmetric :math:`-\\mu_h |m - n|` form, for attention without a causal mask)."""
    if method not in METHOD_LABELS:
        raise ValueError(f"method must be one of {list(METHOD_LABELS)}, got {method!r}")
    length = check_int("length", length, minimum=1)
    if method == "sinusoidal":
        return {"position": sinusoidal_encoding(length, dim, base, device="cpu", dtype=dtype)}
    if method == "rope":
        return {"rope_base": check_positive("base", base)}
    if method == "alibi":
        try:  # the library's one slope check, so that the figure accepts what alibi_bias accepts
            slope, _ = check_slopes(alibi_slope, shape=())
        except (TypeError, ValueError) as error:
            raise type(error)(f"alibi_slope: {error}") from None
        slopes = slope.reshape(1).to(dtype)
        return {"bias": alibi_bias(1, length, slopes=slopes, device="cpu", dtype=dtype)[0]}
    return {}


@translatable
def permutation_figure(
    words: Sequence[str] = DEFAULT_SENTENCE,
    *,
    dim: int = 8,
    count: int = 12,
    base: float = 10000.0,
    alibi_slope: float = 0.5,
    seed: int = 0,
    active: int = 1,
) -> go.Figure:
    """Shuffle a sentence: without position the outputs move with their words; with position
    they change.

    One slider step per shuffle ``π`` (row ``m`` of the shuffled sentence is word ``π(m)``);
    view buttons switch between the methods of :func:`position_kwargs` (no position, sinusoidal
    added to x, RoPE, ALiBi). Panels: the attention weights of the shuffled sentence, its
    outputs :math:`o'_m`, and :math:`o'_m - o_{π(m)}` (the outputs of the original sentence,
    shuffled the same way, subtracted). Traces ``3j, 3j+1, 3j+2`` are the three panels of
    method ``j`` in :data:`METHOD_LABELS` order.
    """
    words = list(words)
    if len(words) < 2 or len(set(words)) != len(words):
        raise ValueError(f"words must hold at least 2 distinct words, got {words}")
    dim = check_even_dim("dim", dim)
    dim = check_int("dim", dim, minimum=2, maximum=64)
    count = check_int("count", count, minimum=2, maximum=40)
    seed = check_int("seed", seed, minimum=0)
    active = check_int("active", active, minimum=0)
    length = len(words)
    methods = {
        method: position_kwargs(method, length, dim, base=base, alibi_slope=alibi_slope, dtype=torch.float64)
        for method in METHOD_LABELS
    }
    x = toy_embeddings(words, dim, seed=seed).double()
    w_q, w_k, w_v = (w.double() for w in toy_projections(dim, seed=seed))
    perms = _permutations(length, count, seed)

    results = {}
    for method, kwargs in methods.items():
        out, _ = self_attention(x, w_q, w_k, w_v, **kwargs)
        for i, perm in enumerate(perms):
            out_p, weights_p = self_attention(x[perm], w_q, w_k, w_v, **kwargs)
            results[method, i] = (weights_p, out_p, out_p - out[perm])
    wmax = max(r[0].max().item() for r in results.values())
    omax = max(r[1].abs().max().item() for r in results.values())

    positions = list(range(length))
    steps = []
    for i, perm in enumerate(perms):
        shuffled = [words[j] for j in perm]
        weight_text = [
            [
                tr(
                    "query {m} ({shuffled})<br>key {n} ({shuffled2})",
                    m=m,
                    shuffled=shuffled[m],
                    n=n,
                    shuffled2=shuffled[n],
                )
                for n in positions
            ]
            for m in positions
        ]
        row_text = [[tr("position {m} ({shuffled})", m=m, shuffled=shuffled[m])] * dim for m in positions]
        traces, gaps = [], []
        for method in methods:
            weights_p, out_p, diff = results[method, i]
            gaps.append(diff.abs().max().item())
            traces += [
                heatmap_trace(
                    weights_p,
                    x=positions,
                    y=positions,
                    coloraxis="coloraxis",
                    text=weight_text,
                    hovertemplate=tr("%{text}<br>weight = %{z:.3f}<extra></extra>"),
                ),
                heatmap_trace(
                    out_p,
                    y=positions,
                    xaxis="x2",
                    yaxis="y2",
                    coloraxis="coloraxis2",
                    text=row_text,
                    hovertemplate=tr("%{text}<br>output dim %{x}: %{z:.3f}<extra></extra>"),
                ),
                heatmap_trace(
                    diff,
                    y=positions,
                    xaxis="x3",
                    yaxis="y3",
                    coloraxis="coloraxis2",
                    text=row_text,
                    hovertemplate=tr("%{text}<br>output dim %{x}: difference %{z:.2e}<extra></extra>"),
                ),
            ]
        none, sinusoidal, rope, alibi = (f"{gap:.1e}" if gap < 1e-3 else f"{gap:.2f}" for gap in gaps)
        title = tr(  # one message: the method names are translated with the sentence
            "shuffled: “{join}”<br><span style='font-size:12px'>max |o′<sub>m</sub> − "
            "o<sub>π(m)</sub>|: no position {none} · sinusoidal {sinusoidal} · RoPE {rope} · "
            "ALiBi {alibi}</span>",
            join=" ".join(shuffled),
            none=none,
            sinusoidal=sinusoidal,
            rope=rope,
            alibi=alibi,
        )
        ticks = {f"yaxis{a}.ticktext": shuffled for a in ("", "2", "3")}
        steps.append((str(i), traces, {"title.text": title, "xaxis.ticktext": shuffled, **ticks}))

    yaxis = {"autorange": "reversed", "tickmode": "array", "tickvals": positions, "ticktext": words}
    dims = {"title": {"text": tr("output dimension")}, "dtick": 1 if dim <= 16 else None}
    layout = {
        "height": 560,
        "margin": {"t": 110, "b": 40, "l": 62, "r": 14},  # a phone keeps 60% of the width for the panels
        "title": {"x": 0.5, "xanchor": "center", "y": 0.98, "yanchor": "top", "font": {"size": 15}},
        "xaxis": {
            "domain": [0.0, 0.3],
            "title": {"text": tr("key (word)"), "standoff": 4},
            "tickmode": "array",
            "tickvals": positions,
            "ticktext": words,
            "tickangle": -45,
        },
        "yaxis": {**yaxis, "title": {"text": tr("position m (word)")}},
        "xaxis2": {**dims, "domain": [0.42, 0.67]},
        "yaxis2": {**yaxis, "anchor": "x2", "showticklabels": False},
        "xaxis3": {**dims, "domain": [0.72, 0.97]},
        "yaxis3": {**yaxis, "anchor": "x3", "showticklabels": False},
        "coloraxis": {
            "colorscale": "Viridis",
            "cmin": 0.0,
            "cmax": math.ceil(wmax * 10) / 10,
            "colorbar": {"x": 0.31, "len": 0.75, "thickness": 10},  # the panel title names it
        },
        "coloraxis2": {
            "colorscale": "RdBu",
            "reversescale": True,
            "cmid": 0.0,
            "cmin": -omax,
            "cmax": omax,
            "colorbar": {
                "title": {"text": tr("output value"), "side": "right"},
                "x": 0.99,
                "len": 0.75,
                "thickness": 10,
            },
        },
        "annotations": [
            _panel_title(tr("attention weights"), 0.15),
            _panel_title(tr("outputs o′<sub>m</sub>"), 0.545),
            _panel_title(tr("o′<sub>m</sub> − o<sub>π(m)</sub>"), 0.845),
        ],
    }
    views = [(tr(METHOD_LABELS[method]), [3 * j, 3 * j + 1, 3 * j + 2]) for j, method in enumerate(methods)]
    fig = slider_figure(
        steps, slider_label=tr("shuffle"), layout=layout, views=views, active=min(active, len(steps) - 1)
    )
    fig.update_layout(updatemenus=[{"y": 1.08}], sliders=[{"pad": {"t": 90}}])  # clear of titles, tick labels
    return fig
