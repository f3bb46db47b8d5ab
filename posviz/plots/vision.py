r"""Slider figures for the chapter *Beyond one dimension* (static page, no kernel).

Every number drawn comes from :mod:`posviz.vision`: :func:`posviz.sinusoidal_encoding_2d`,
:func:`posviz.resize_position_table`, :func:`posviz.axial_rope_2d`,
:func:`posviz.mixed_rope_frequencies` with :func:`posviz.apply_mixed_rope`,
:func:`posviz.relative_position_index_2d` and :func:`posviz.mrope_position_ids`.

Conventions (as :mod:`posviz.vision`): a grid of ``H x W`` patches in row-major order, a patch at
``(row, col)`` with row 0 at the top; offsets are query minus key. What a heatmap shows for a
query patch :math:`p` and every key patch :math:`p'`:

- a table added to the input (``learned``, ``sincos-2d``): the cosine between the two rows,
  :math:`\cos\angle(e(p), e(p'))`;
- a rotation (``rope-axial``, ``rope-mixed``): the score of one fixed unit vector rotated as the
  query at :math:`p` and as the key at :math:`p'`, which is the mean over pairs of
  :math:`\cos(\alpha_i(p) - \alpha_i(p'))`;
- a bias (``swin-bias``): the bias read from the table at the clipped offset.

Two of them need trained numbers that a figure cannot have, and use stand-ins, named as such in
the figure: the learned table is the training grid's 2-D sin-cos table (ViT's learned tables
are smooth in the same way), and Swin's table holds :math:`-\lVert(\Delta r, \Delta c)\rVert/(M-1)`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from .._validate import check_int
from ..i18n import N_, tr, translatable
from ..lab.tables import _rows, _table
from ..vision import (
    apply_mixed_rope,
    axial_rope_2d,
    mixed_rope_frequencies,
    mrope_position_ids,
    patch_positions,
    relative_position_index_2d,
    resize_position_table,
    sinusoidal_encoding_2d,
)
from ._numbers import rounded
from ._sliders import slider_figure

__all__ = [
    "METHODS",
    "SETTINGS",
    "claim_verdict",
    "colour_range",
    "mrope_ids_figure",
    "paper_claims_table",
    "patch_scores_figure",
    "patch_similarity",
    "resize_figure",
    "swin_stand_in_table",
]

METHODS: tuple[str, ...] = ("learned", "sincos-2d", "rope-axial", "rope-mixed", "swin-bias")
"""The methods the patch figure and the explorer draw, in order."""

SETTINGS: dict[str, float] = {"dim": 64, "sincos_base": 10000.0, "axial_base": 100.0, "mixed_base": 10.0, "seed": 2}
"""The figure's head width and bases: MAE's 10,000 for sin-cos, RoPE-ViT's 100 for axial RoPE and
RoPE-Mixed's 10 for mixed RoPE; ``seed`` draws RoPE-Mixed's per-head angle (seed 2: about 221 degrees,
whose cross is turned well away from the axes)."""

_METHOD_NAMES = {
    "learned": N_("learned table, resized (stand-in)"),
    "sincos-2d": N_("2-D sin-cos (MAE)"),
    "rope-axial": N_("axial RoPE"),
    "rope-mixed": N_("mixed RoPE (at initialisation)"),
    "swin-bias": N_("Swin bias (stand-in table)"),
}
_QUANTITY = {
    "learned": N_("cosine of the table rows"),
    "sincos-2d": N_("cosine of the table rows"),
    "rope-axial": N_("score of a rotated unit vector"),
    "rope-mixed": N_("score of a rotated unit vector"),
    "swin-bias": N_("bias added to the score"),
}
_DIM = 64


def swin_stand_in_table(window: int) -> torch.Tensor:
    r"""A stand-in for a trained Swin table over an ``M x M`` window: row :math:`(\Delta r, \Delta c)` holds
    :math:`-\lVert(\Delta r, \Delta c)\rVert/(M-1)` (0 for the patch itself), ``[(2M-1)^2]`` float64.

    Rows are in the order of :func:`posviz.relative_position_index_2d` (row offset major).
    """
    window = check_int("window", window, minimum=2)
    offsets = (patch_positions(2 * window - 1, 2 * window - 1, device="cpu") - (window - 1)).double()
    return -offsets.norm(dim=-1) / (window - 1)


def _cosine(table: torch.Tensor) -> torch.Tensor:
    unit = table / table.norm(dim=-1, keepdim=True)
    return unit @ unit.T


def patch_similarity(method: str, grid: int, *, train_grid: int = 8) -> torch.Tensor:
    """What the figure shows for every (query, key) pair of a ``grid x grid`` grid, ``[T, T]`` float64.

    ``train_grid`` is the grid the method was set up on: the learned table is built there and
    resized to ``grid``; Swin's table covers offsets up to ``train_grid - 1`` and clips the rest.
    Sin-cos and the rotations need no training grid: they extend with their formula.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    grid = check_int("grid", grid, minimum=1)
    train_grid = check_int("train_grid", train_grid, minimum=2)
    f64 = {"device": "cpu", "dtype": torch.float64}
    pos = patch_positions(grid, grid, device="cpu")
    if method == "learned":
        table = sinusoidal_encoding_2d(train_grid, train_grid, _DIM, SETTINGS["sincos_base"], cls_token=True, **f64)
        return _cosine(resize_position_table(table, grid, cls_tokens=1)[1:])
    if method == "sincos-2d":
        return _cosine(sinusoidal_encoding_2d(grid, grid, _DIM, SETTINGS["sincos_base"], **f64))
    if method == "swin-bias":
        index = relative_position_index_2d(grid, grid, max_offset=train_grid - 1, device="cpu")
        return swin_stand_in_table(train_grid)[index]
    unit = torch.full((grid * grid, _DIM), _DIM ** -0.5, dtype=torch.float64)
    if method == "rope-axial":
        rotated = axial_rope_2d(unit, pos, SETTINGS["axial_base"])
    else:
        gen = torch.Generator().manual_seed(int(SETTINGS["seed"]))
        freqs = mixed_rope_frequencies(1, _DIM, SETTINGS["mixed_base"], generator=gen, **f64)
        rotated = apply_mixed_rope(unit[None], pos, freqs)[0]
    return rotated @ rotated.T


def colour_range(method: str, train_grid: int = 8) -> tuple[float, float]:
    """The colour scale of ``method``: from its lowest value on a grid twice the training grid (to
    one decimal, downwards) to its highest, so the figures at both grids share one scale."""
    values = patch_similarity(method, 2 * train_grid, train_grid=train_grid)
    return float(np.floor(values.min().item() * 10) / 10), float(np.ceil(values.max().item() * 10) / 10)


def _default_queries(grid: int) -> list[int]:
    if grid <= 8:
        return list(range(grid * grid))
    lattice = sorted({*range(0, grid, 3), grid // 2, grid - 1})
    return [r * grid + c for r in lattice for c in lattice]


@translatable
def patch_scores_figure(
    grid: int = 8,
    *,
    train_grid: int = 8,
    queries: Sequence[int] | None = None,
    active: int | None = None,
    height: int = 580,
) -> go.Figure:
    r"""A ``grid x grid`` patch grid: the slider picks the query patch, the menu the method.

    The heatmap shows :func:`patch_similarity` from the query patch (marked) to every patch.
    When ``grid > train_grid`` the training grid is outlined. ``queries`` are the patch indices
    (row-major) the slider offers (default: every patch up to 8 x 8, else a lattice of every
    third row and column plus the middle and the last); the middle patch is shown first.
    """
    grid = check_int("grid", grid, minimum=2)
    train_grid = check_int("train_grid", train_grid, minimum=2)
    queries = _default_queries(grid) if queries is None else [check_int("queries[i]", q, minimum=0) for q in queries]
    if not queries or max(queries) >= grid * grid:
        raise ValueError(f"queries must be patch indices in [0, {grid * grid - 1}], got {queries!r}")
    sims = {method: patch_similarity(method, grid, train_grid=train_grid) for method in METHODS}
    ranges = {method: colour_range(method, train_grid) for method in METHODS}
    axis = list(range(grid))

    def traces(query: int) -> list[go.BaseTraceType]:
        out: list[go.BaseTraceType] = []
        for method in METHODS:
            lo, hi = ranges[method]
            out.append(go.Heatmap(
                z=rounded(sims[method][query].reshape(grid, grid), 2), x=axis, y=axis, zmin=lo, zmax=hi,
                colorscale="Viridis",
                colorbar={"thickness": 12, "len": 0.9, "title": {"text": tr(_QUANTITY[method]), "side": "right"}},
                hovertemplate=tr("key patch (row %{y}, col %{x})<br>value %{z:.3f}") + "<extra></extra>",
            ))
        r, c = divmod(query, grid)
        out.append(go.Scatter(x=[c], y=[r], mode="markers", marker={"symbol": "x", "size": 12, "color": "#000000"},
                              name=tr("query patch"), hoverinfo="skip", showlegend=False))
        return out

    steps = [(f"({q // grid}, {q % grid})", (lambda q=q: traces(q))) for q in queries]
    shapes = []
    if grid > train_grid:
        shapes.append({"type": "rect", "x0": -0.5, "y0": -0.5, "x1": train_grid - 0.5, "y1": train_grid - 0.5,
                       "line": {"color": "#2ca02c", "width": 3}})
    views = [(tr(_METHOD_NAMES[m]), [i, len(METHODS)]) for i, m in enumerate(METHODS)]
    title = tr("{grid}×{grid} patches, trained on {train}×{train}: every patch seen from the query patch (×)",
               grid=grid, train=train_grid)
    layout = {
        "height": height,
        "margin": {"t": 110, "b": 110, "l": 50, "r": 20},
        "title": {"text": title, "y": 0.98, "yanchor": "top", "font": {"size": 14}},
        "xaxis": {"title": {"text": tr("column")}, "range": [-0.5, grid - 0.5]},
        "yaxis": {"title": {"text": tr("row")}, "range": [grid - 0.5, -0.5]},
        "shapes": shapes,
    }
    centre = (grid // 2) * grid + grid // 2
    if active is None:
        active = queries.index(centre) if centre in queries else 0
    fig = slider_figure(steps, slider_label=tr("query patch (row, col)"), layout=layout, views=views, active=active)
    fig.layout.updatemenus[0].update(type="dropdown", direction="down", y=1.0, yanchor="bottom", pad={"b": 6})
    return fig


@translatable
def resize_figure(train_grid: int = 8, new_grids: Sequence[int] = (4, 8, 12, 16), *, channel: int = 1) -> go.Figure:
    r"""One dimension of a table resized as ViT does: the old grid (left) and the new one (right).

    The table is the training grid's 2-D sin-cos table with a class row (the stand-in of a
    learned table); the slider picks the new grid, :func:`posviz.resize_position_table` resizes
    it (bicubic, ``align_corners=False``, class row kept). ``channel`` is the dimension drawn.
    """
    train_grid = check_int("train_grid", train_grid, minimum=2)
    channel = check_int("channel", channel, minimum=0, maximum=_DIM - 1)
    if not new_grids:
        raise ValueError("new_grids must not be empty")
    table = sinusoidal_encoding_2d(train_grid, train_grid, _DIM, SETTINGS["sincos_base"], cls_token=True,
                                   device="cpu", dtype=torch.float64)
    old = table[1:, channel].reshape(train_grid, train_grid)
    def traces(n: int) -> list[go.Heatmap]:
        new = resize_position_table(table, n, cls_tokens=1)[1:, channel].reshape(n, n)
        style = {"zmin": -1.1, "zmax": 1.1, "colorscale": "RdBu", "reversescale": True, "showscale": False}
        # both panels span the same field of view: cell centres at (i + 1/2) / n of the image
        return [
            go.Heatmap(z=rounded(old, 3), x=(np.arange(train_grid) + 0.5) / train_grid,
                       y=(np.arange(train_grid) + 0.5) / train_grid, xaxis="x", yaxis="y", **style,
                       hovertemplate=tr("old table, value %{z:.3f}") + "<extra></extra>"),
            go.Heatmap(z=rounded(new, 3), x=(np.arange(n) + 0.5) / n, y=(np.arange(n) + 0.5) / n,
                       xaxis="x2", yaxis="y2", **style,
                       hovertemplate=tr("resized table, value %{z:.3f}") + "<extra></extra>"),
        ]

    base = make_subplots(rows=1, cols=2, horizontal_spacing=0.08, subplot_titles=[
        tr("{n}×{n} table (trained)", n=train_grid), tr("resized (bicubic)")])
    layout = base.layout.to_plotly_json()
    layout.update({"height": 420, "margin": {"t": 90, "b": 80, "l": 40, "r": 20},
                   "title": {"text": tr("Dimension {k} of the table as an image, resized", k=channel), "y": 0.97,
                             "yanchor": "top"}})
    for name in ("yaxis", "yaxis2"):
        layout[name] = {**layout.get(name, {}), "autorange": "reversed", "showticklabels": False}
    for name in ("xaxis", "xaxis2"):
        layout[name] = {**layout.get(name, {}), "showticklabels": False}
    layout["yaxis"]["scaleanchor"], layout["yaxis2"]["scaleanchor"] = "x", "x2"
    steps = [(tr("{n}×{n}", n=n), (lambda n=n: traces(n))) for n in new_grids]
    return slider_figure(steps, slider_label=tr("new grid"), layout=layout, active=len(new_grids) - 1)


_AXES = (N_("time t"), N_("height h"), N_("width w"))


@translatable
def mrope_ids_figure(segments: Sequence[int | tuple], *, spatial_merge_size: int = 2,
                     tokens_per_second: float | None = None) -> go.Figure:
    """The three M-RoPE id rows of a mixed sequence (:func:`posviz.mrope_position_ids`), one cell per token."""
    ids = mrope_position_ids(segments, spatial_merge_size=spatial_merge_size, tokens_per_second=tokens_per_second,
                             device="cpu")
    kinds: list[str] = []
    for item in segments:
        if isinstance(item, (tuple, list)) and item[0] in ("image", "video"):
            t, h, w = item[1]
            kinds += [tr("image") if item[0] == "image" else tr("video")] * (t * (h // spatial_merge_size)
                                                                             * (w // spatial_merge_size))
        else:
            n = item[1] if isinstance(item, (tuple, list)) else item
            kinds += [tr("text")] * int(n)
    tokens = list(range(ids.shape[1]))
    z = ids.numpy()
    fig = go.Figure(go.Heatmap(
        # the ids written in the cells: %{z}, not %{text} (a figure's translation rewrites the word "text")
        z=z, x=tokens, y=[tr(a) for a in _AXES], texttemplate="%{z}", textfont={"size": 11},
        customdata=np.array([kinds] * 3), colorscale="Viridis", showscale=False,
        hovertemplate=tr("token %{x} (%{customdata})<br>%{y} id = %{z}") + "<extra></extra>",
    ))
    for start, kind in _runs(kinds):
        fig.add_annotation(x=start[0] + (start[1] - start[0] - 1) / 2, y=1.0, yref="paper", yanchor="bottom",
                           text=kind, showarrow=False, font={"size": 12})
    fig.update_layout(
        height=300, margin={"t": 90, "b": 60, "l": 95, "r": 24},
        title={"text": tr("M-RoPE position ids, one column per token"), "y": 0.96, "yanchor": "top"},
        xaxis={"title": {"text": tr("token index")}, "dtick": 2},
        yaxis={"autorange": "reversed", "title": {"text": tr("id axis")}},
    )
    return fig


def _runs(kinds: Sequence[str]) -> list[tuple[tuple[int, int], str]]:
    """Maximal runs of equal kinds: ((start, stop), kind)."""
    out, start = [], 0
    for i in range(1, len(kinds) + 1):
        if i == len(kinds) or kinds[i] != kinds[start]:
            out.append(((start, i), kinds[start]))
            start = i
    return out


def claim_verdict(diff: float, inside_spread: bool | None) -> str:
    """``"agrees"`` (the paper's better method ahead, outside the seed spread), ``"inside spread"``
    (not told apart), ``"one seed"`` (no spread to judge) or ``"disagrees"`` (behind, outside the spread)."""
    if inside_spread is None:
        return "one seed"
    if inside_spread:
        return "inside spread"
    return "agrees" if diff > 0 else "disagrees"


_VERDICTS = {
    "agrees": N_("agrees"),
    "inside spread": N_("not told apart (inside the spread)"),
    "one seed": N_("one seed: no spread"),
    "disagrees": N_("disagrees"),
}


@_table
def paper_claims_table(results: dict) -> str:
    """Markdown table: each resolution claim of Heo et al. (2024) that the miniature can test
    (:data:`posviz.vislab.results.PAPER_COMPARISONS`, "A > B"), per grid past the training one: the
    paired difference A - B in accuracy points (mean ± std over seeds) and the verdict of
    :func:`claim_verdict`. Method ids are code, the same in both editions."""
    from ..vislab import glue_values

    values = glue_values(results)
    grids = [g for g in values["eval_grids"] if g > values["train_grid"]]
    rows = []
    for claim, per_grid in values["paper"].items():
        a, b = claim.split(" > ")
        cells = [f"`{a}` > `{b}`"]
        for g in grids:
            c = per_grid[g]
            spread = "" if c["std"] is None else f" ± {100 * c['std']:.1f}"
            cells.append(tr("{diff}{spread} points: {verdict}", diff=f"{100 * c['diff']:+.1f}", spread=spread,
                            verdict=tr(_VERDICTS[claim_verdict(c["diff"], c["inside_spread"])])))
        rows.append(cells)
    head = [tr("claim (Heo et al., 2024)"), *[tr("at {n}×{n}", n=g) for g in grids]]
    return _rows(head, rows)
