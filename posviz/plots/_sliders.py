"""Plotly figures whose slider switches between precomputed states, with no kernel.

Every state's trace data is stored in the figure itself (the slider steps call Plotly's
``update``), so the slider works in the static web page, in JupyterLab, Colab and Binder alike,
and no animation ever starts on load.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.basedatatypes import BaseTraceType
from plotly.utils import PlotlyJSONEncoder

from ..i18n import tr

Traces = Sequence[BaseTraceType]
Step = tuple[str, Traces | Callable[[], Traces]] | tuple[str, Traces | Callable[[], Traces], Mapping[str, Any]]
"""``(label, traces)`` or ``(label, traces, layout_update)``; ``traces`` may be a zero-argument
function that returns them."""

# Owned by the view buttons (``visible``) or fixed per trace (``type``): never set by a step.
_NOT_STEPPED = frozenset({"type", "visible"})


def _resolve(step: Step, index: int) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
    if len(step) not in (2, 3):
        raise ValueError(f"step {index} must be (label, traces) or (label, traces, layout_update), got {step!r}")
    label, traces = step[0], step[1]
    if callable(traces):
        traces = traces()
    dicts = [trace.to_plotly_json() for trace in traces]
    return str(label), dicts, dict(step[2]) if len(step) == 3 else {}


def slider_figure(
    steps: Sequence[Step],
    *,
    slider_label: str,
    layout: Mapping[str, Any] | go.Layout | None = None,
    active: int = 0,
    views: Sequence[tuple[str, Sequence[int]]] | None = None,
) -> go.Figure:
    """A figure with one slider step per state, plus optional view buttons.

    Args:
        steps: one ``(label, traces)`` or ``(label, traces, layout_update)`` per slider position.
            Every step must give the same number of traces with the same types, in the same
            order: step ``s`` replaces the data of trace ``k`` with its own trace ``k`` (a property
            that is the same in every step is stored once, in the figure's traces). A
            ``layout_update`` (e.g. ``{"title.text": "m = 3"}``) is applied with the step;
            give every step the same layout keys, since a key a step leaves out keeps its
            previous value.
        slider_label: the name shown before the current step's label.
        layout: the figure layout (fix axis ranges and ``zmin``/``zmax`` if states should be
            comparable: Plotly otherwise rescales at each step).
        active: the index of the step shown first.
        views: optional buttons above the plot, a second control independent of the slider:
            ``(label, indices of the traces it shows)``; the first view is shown first. Steps
            never change visibility, so the slider keeps working in every view.

    Raises:
        ValueError: no steps, steps with different trace counts or types, ``active`` out of
            range, or a view naming a trace that does not exist.
    """
    resolved = [_resolve(step, i) for i, step in enumerate(steps)]
    if not resolved:
        raise ValueError("steps must not be empty")
    if isinstance(active, bool) or not isinstance(active, int) or not 0 <= active < len(resolved):
        raise ValueError(f"active must be an integer in [0, {len(resolved) - 1}], got {active!r}")
    types = [trace.get("type") for trace in resolved[0][1]]
    for label, traces, _ in resolved:
        if [trace.get("type") for trace in traces] != types:
            raise ValueError(
                f"every step must have traces of types {types}, step {label!r} has "
                f"{[trace.get('type') for trace in traces]}"
            )
    keys = sorted({key for _, traces, _ in resolved for trace in traces for key in trace} - _NOT_STEPPED)
    # A property that every step gives the same value (axes, colour bars, hover templates...) is
    # stored once, in the traces, rather than once per step: the page carries every step.
    keys = [key for key in keys if len({_encoded([t.get(key) for t in traces]) for _, traces, _ in resolved}) > 1]

    slider_steps = [
        {
            "label": label,
            "method": "update",
            "args": [{key: [trace.get(key) for trace in traces] for key in keys}, layout_update],
        }
        for label, traces, layout_update in resolved
    ]
    fig = go.Figure(layout=layout)
    for trace in resolved[active][1]:
        fig.add_trace(trace)
    fig.update_layout(resolved[active][2])
    fig.update_layout(
        sliders=[
            {
                "active": active,
                "steps": slider_steps,
                "currentvalue": {"prefix": tr("{label}: ", label=slider_label)},
                "pad": {"t": 40},
            }
        ]
    )
    if views:
        _add_views(fig, views)
    return fig


def _encoded(values: object) -> str:
    return json.dumps(values, cls=PlotlyJSONEncoder, sort_keys=True)


def _add_views(fig: go.Figure, views: Sequence[tuple[str, Sequence[int]]]) -> None:
    n = len(fig.data)
    buttons = []
    for label, shown in views:
        bad = [i for i in shown if not (isinstance(i, int) and 0 <= i < n)]
        if bad:
            raise ValueError(f"view {label!r} names traces {bad}, but the figure has traces 0..{n - 1}")
        visible = [i in shown for i in range(n)]
        buttons.append({"label": str(label), "method": "restyle", "args": [{"visible": visible}]})
    for trace, visible in zip(fig.data, buttons[0]["args"][0]["visible"]):
        trace.visible = visible
    fig.update_layout(
        updatemenus=[
            {
                "type": "buttons",
                "direction": "right",
                "active": 0,
                "buttons": buttons,
                "x": 0,
                "xanchor": "left",
                "y": 1.02,
                "yanchor": "bottom",
                "showactive": True,
            }
        ]
    )


def heatmap_trace(values: Any, *, symmetric: bool = False, **kwargs: Any) -> go.Heatmap:
    """A ``go.Heatmap`` of a 2-D tensor or array (a torch tensor is detached and moved to CPU).

    ``symmetric=True`` centres a diverging colour scale on 0 (scores, biases, encodings).
    Other keyword arguments go to ``go.Heatmap`` (e.g. ``x``, ``y``, ``zmin``, ``zmax``). Integer
    values keep their dtype (a page stores int8 in one byte); others become float64.
    """
    if hasattr(values, "detach"):  # a torch tensor (any device or dtype, bfloat16 included)
        values = values.detach().cpu().double().numpy()
    z = np.asarray(values)
    if not np.issubdtype(z.dtype, np.integer):  # integers stay integers: Plotly stores them compactly
        z = z.astype(float)
    if z.ndim != 2:
        raise ValueError(f"heatmap values must be 2-D, got shape {list(z.shape)}")
    if symmetric:
        kwargs = {"zmid": 0.0, "colorscale": "RdBu", "reversescale": True, **kwargs}
    return go.Heatmap(z=z, **kwargs)
