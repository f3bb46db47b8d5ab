"""The *Relative position encoding* chapter's explorer (for readers running a kernel).

Two heatmaps recomputed live with ``posviz``: Shaw et al.'s clipped relative positions
``clip(m - n, Rmin, Rmax)`` and T5's bucket of every (query, key) pair.
"""

from __future__ import annotations

import ipywidgets as widgets
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from .. import relative_positions, t5_relative_bucket
from ..i18n import tr
from . import Explorer, explorer

__all__ = ["relative_explorer"]


def _figure() -> go.Figure:
    fig = make_subplots(
        rows=1,
        cols=2,
        horizontal_spacing=0.16,
        subplot_titles=(tr("Shaw: r = clip(m − n, R<sub>min</sub>, R<sub>max</sub>)"), tr("T5: bucket(n − m)")),
    )
    fig.add_trace(
        go.Heatmap(
            z=[[0]],
            colorscale="RdBu",
            reversescale=True,
            colorbar={"title": {"text": "r"}, "x": 0.42, "len": 0.9},
            hovertemplate=tr("query m = %{y}<br>key n = %{x}<br>r = %{z}<extra></extra>"),
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Heatmap(
            z=[[0]],
            colorscale="Viridis",
            colorbar={"title": {"text": tr("bucket")}, "len": 0.9},
            hovertemplate=tr("query m = %{y}<br>key n = %{x}<br>bucket %{z}<extra></extra>"),
        ),
        row=1,
        col=2,
    )
    fig.update_yaxes(autorange="reversed", title_text=tr("query position m"), col=1)
    fig.update_yaxes(autorange="reversed", col=2)
    fig.update_xaxes(title_text=tr("key position n"))
    # The default template's layout only: its per-trace-type defaults (unused here) would only
    # enlarge the widget's state.
    template = go.layout.Template(layout=pio.templates["plotly"].layout)
    fig.update_layout(height=460, margin={"t": 60, "b": 50}, template=template)
    return fig


def relative_explorer(
    length: int = 32,
    rmin: int = -8,
    rmax: int = 8,
    num_buckets: int = 32,
    max_distance: int = 128,
    bidirectional: bool = True,
) -> Explorer:
    """Sliders for the length, ``Rmin``, ``Rmax``, T5's ``num_buckets`` and ``max_distance``,
    and a bidirectional checkbox; shows the clipped relative positions and T5's bucket map.

    An invalid T5 setting (``max_distance`` not above the number of exact buckets, or fewer
    than 4 buckets when bidirectional) leaves the last good picture and shows the reason.
    """
    style = {"description_width": "initial"}
    controls = {
        "length": widgets.IntSlider(value=length, min=1, max=256, description=tr("length L"), style=style),
        "rmin": widgets.IntSlider(value=rmin, min=-64, max=0, description="R_min", style=style),
        "rmax": widgets.IntSlider(value=rmax, min=0, max=64, description="R_max", style=style),
        "num_buckets": widgets.IntSlider(value=num_buckets, min=2, max=128, description="num_buckets", style=style),
        "max_distance": widgets.IntSlider(value=max_distance, min=1, max=1024, description="max_distance", style=style),
        "bidirectional": widgets.Checkbox(value=bidirectional, description=tr("bidirectional (T5 encoder)")),
    }

    def update(
        length: int, rmin: int, rmax: int, num_buckets: int, max_distance: int, bidirectional: bool
    ) -> list[dict]:
        r = relative_positions(length, max_distance=(rmin, rmax), device="cpu")  # clip(m - n, Rmin, Rmax)
        offsets = relative_positions(length, device="cpu")  # m - n
        buckets = t5_relative_bucket(
            -offsets,  # T5's sign: key minus query
            bidirectional=bidirectional,
            num_buckets=num_buckets,
            max_distance=max_distance,
        )
        lim = max(-rmin, rmax, 1)  # symmetric colour range: r = 0 stays white
        return [
            {"z": r.numpy(), "zmin": -lim, "zmax": lim},
            {"z": buckets.numpy(), "zmin": 0, "zmax": num_buckets - 1},
        ]

    return explorer(controls, update, _figure())
