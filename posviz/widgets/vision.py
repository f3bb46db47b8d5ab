"""The live explorer of *Beyond one dimension* (needs a running kernel: JupyterLab, Colab, Binder).

Controls: the method (:data:`posviz.plots.vision.METHODS`), the grid, the training grid and the
query patch's row and column. The heatmap is :func:`posviz.plots.vision.patch_similarity` from the
query patch to every patch; past the training grid (outlined) the learned table is resized, the
sin-cos table extended, the rotations turn further and Swin's offsets are clipped.
"""

from __future__ import annotations

import ipywidgets as widgets
import plotly.graph_objects as go
import plotly.io as pio

from .._validate import check_int
from ..i18n import tr
from ..plots._numbers import rounded
from ..plots.vision import _METHOD_NAMES, _QUANTITY, METHODS, colour_range, patch_similarity
from . import CONTROL_WIDTH, Explorer, explorer

__all__ = ["vision_explorer", "vision_state"]


def vision_state(method: str, grid: int, train_grid: int, row: int, col: int) -> dict[str, object]:
    """What the explorer draws: ``z`` (``[grid, grid]``, from the query patch ``(row, col)`` to every
    patch), the colour range ``zmin``/``zmax`` and whether the grid is past the training grid."""
    grid = check_int("grid", grid, minimum=2)
    train_grid = check_int("train_grid", train_grid, minimum=2)
    row = check_int("row", row, minimum=0, maximum=grid - 1)
    col = check_int("col", col, minimum=0, maximum=grid - 1)
    values = patch_similarity(method, grid, train_grid=train_grid)[row * grid + col].reshape(grid, grid)
    lo, hi = colour_range(method, train_grid)
    return {"z": values, "zmin": min(lo, float(values.min())), "zmax": max(hi, float(values.max())),
            "past": grid > train_grid}


def _update(method: str, grid: int, train_grid: int, row: int, col: int) -> tuple[list[dict], dict]:
    """What the controls change: the two traces' properties and the layout's."""
    state = vision_state(method, grid, train_grid, row, col)
    heatmap = {"z": rounded(state["z"], 4), "x": list(range(grid)), "y": list(range(grid)), "zmin": state["zmin"],
               "zmax": state["zmax"], "colorbar": {"title": {"text": tr(_QUANTITY[method])}}}
    # the training grid outlined when the grid is larger (a hidden shape otherwise: an empty list
    # would leave the last outline in place)
    shapes = [{"type": "rect", "x0": -0.5, "y0": -0.5, "x1": train_grid - 0.5, "y1": train_grid - 0.5,
               "line": {"color": "#2ca02c", "width": 3}, "visible": state["past"]}]
    layout = {
        "shapes": shapes, "xaxis": {"range": [-0.5, grid - 0.5]}, "yaxis": {"range": [grid - 0.5, -0.5]},
        "title": {"text": tr("{method}: {grid}×{grid} patches, trained on {train}×{train}, query patch ({row}, {col})",
                             method=tr(_METHOD_NAMES[method]), grid=grid, train=train_grid, row=row, col=col)},
    }
    return [heatmap, {"x": [col], "y": [row]}], layout


def _figure() -> go.Figure:
    fig = go.Figure([
        go.Heatmap(z=[[0.0]], colorscale="Viridis",
                   colorbar={"thickness": 12, "len": 0.9, "title": {"side": "right"}},
                   hovertemplate=tr("key patch (row %{y}, col %{x})<br>value %{z:.3f}") + "<extra></extra>"),
        go.Scatter(x=[0], y=[0], mode="markers", marker={"symbol": "x", "size": 12, "color": "#000000"},
                   name=tr("query patch"), hoverinfo="skip", showlegend=False),
    ])
    fig.update_layout(
        height=560, margin={"t": 70, "b": 60, "l": 50, "r": 20}, title={"y": 0.97, "yanchor": "top"},
        xaxis={"title": {"text": tr("column")}, "constrain": "domain"},
        yaxis={"title": {"text": tr("row")}, "scaleanchor": "x", "constrain": "domain"},
    )
    fig.layout.template = go.layout.Template(layout=pio.templates["plotly"].layout)
    return fig


def vision_explorer(
    method: str = "rope-mixed",
    grid: int = 16,
    train_grid: int = 8,
    row: int = 8,
    col: int = 8,
) -> Explorer:
    """Live explorer of the patch figure: method, grid, training grid and the query patch's row and
    column. A bad combination (a row past the grid) shows a one-line message and keeps the last figure.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    style = {"description_width": "initial"}
    layout = widgets.Layout(width=CONTROL_WIDTH)
    controls = {
        "method": widgets.Dropdown(value=method, options=[(tr(_METHOD_NAMES[m]), m) for m in METHODS],
                                   description=tr("method"), style=style, layout=layout),
        "grid": widgets.IntSlider(value=grid, min=2, max=24, description=tr("grid"), style=style, layout=layout,
                                  continuous_update=False),
        "train_grid": widgets.IntSlider(value=train_grid, min=2, max=16, description=tr("training grid"),
                                        style=style, layout=layout, continuous_update=False),
        "row": widgets.IntSlider(value=row, min=0, max=23, description=tr("query row"), style=style, layout=layout,
                                 continuous_update=False),
        "col": widgets.IntSlider(value=col, min=0, max=23, description=tr("query column"), style=style,
                                 layout=layout, continuous_update=False),
    }
    return explorer(controls, _update, _figure())  # the explorer draws the first values into it
