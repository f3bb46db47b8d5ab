"""ipywidgets explorers for readers who run the chapters in a kernel (JupyterLab, Colab, Binder).

The static web page cannot run Python: there, figures use :func:`posviz.plots.slider_figure`.
An :class:`Explorer` recomputes a figure from live controls; a bad combination of values (say,
an odd dimension) never raises out of the callback: it shows a one-line message and keeps the
last good figure.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import ipywidgets as widgets
import plotly.graph_objects as go
import torch
from plotly.basedatatypes import BaseFigure

__all__ = ["Explorer", "Update", "explorer", "one_thread"]

Update = BaseFigure | Sequence[Mapping[str, Any]]
"""What an update function returns: a figure with as many traces as the explorer's figure
(its traces' properties and its layout are copied over), or one dict of trace properties per
trace (e.g. ``[{"z": new_z}]``)."""


def _validated(target: BaseFigure, result: Update) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Check an update against the figure without touching it: trace count, and every trace
    property and layout key through Plotly's own validators (on fresh objects holding only the
    update, which costs a fraction of copying the figure)."""
    if isinstance(result, BaseFigure):
        traces = [trace.to_plotly_json() for trace in result.data]
        layout = result.layout.to_plotly_json()
    else:
        traces, layout = [dict(update) for update in result], {}
    if len(traces) != len(target.data):
        raise ValueError(f"the update gave {len(traces)} traces, the figure has {len(target.data)}")
    for trace, update in zip(target.data, traces):
        kind = update.get("type", trace.type)
        if kind != trace.type:
            raise ValueError(f"the update turns a {trace.type} trace into a {kind} trace")
        type(trace)(**{k: v for k, v in update.items() if k != "type"})  # raises on a bad property or value
    go.Layout(**layout)
    return traces, layout


def _apply(target: BaseFigure, traces: list[dict[str, Any]], layout: dict[str, Any]) -> None:
    with target.batch_update():
        for trace, update in zip(target.data, traces):
            trace.update(update)
        target.layout.update(layout)


@contextmanager
def one_thread() -> Iterator[None]:
    """Explorer updates are small: one torch thread answers faster than several, and far faster
    when other processes compete for the cores (thread hand-offs then cost tens of ms)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


class Explorer(widgets.VBox):
    """Controls, a status line and a ``go.FigureWidget``, wired together.

    Each change of a control calls ``update(**values)`` with every control's current value
    (keyword names are the keys of ``controls``) and applies the result to ``figure``. If
    ``update`` raises, or returns something the figure cannot take, the error is shown in
    :attr:`status` and the figure keeps its last good state.

    Attributes:
        controls: the control widgets, by keyword name.
        status: an ``ipywidgets.HTML`` line: empty, or the last error.
        figure: the ``go.FigureWidget`` being updated.
    """

    def __init__(
        self,
        controls: Mapping[str, widgets.ValueWidget],
        update: Callable[..., Update],
        figure: go.FigureWidget,
    ) -> None:
        self.controls = dict(controls)
        self.update = update
        self.figure = figure
        self.status = widgets.HTML(layout=widgets.Layout(min_height="1.5em"))
        super().__init__([widgets.HBox(list(self.controls.values())), self.status, figure])
        for control in self.controls.values():
            control.observe(self.refresh, names="value")
        self.refresh()

    def refresh(self, _change: object = None) -> bool:
        """Recompute the figure from the controls; ``False`` (and a message) if that failed."""
        try:
            with one_thread():
                result = self.update(**{name: control.value for name, control in self.controls.items()})
            traces, layout = _validated(self.figure, result)  # the widget changes only if this passes
        except Exception as err:  # a callback must never raise
            message = html.escape(f"{type(err).__name__}: {err}")
            self.status.value = f'<span style="color:#b30000">⚠ {message}</span>'
            return False
        _apply(self.figure, traces, layout)
        self.status.value = ""
        return True


def explorer(
    controls: Mapping[str, widgets.ValueWidget],
    update: Callable[..., Update],
    figure: BaseFigure | None = None,
) -> Explorer:
    """Build an :class:`Explorer`; ``figure`` defaults to the first ``update`` result.

    A plain ``go.Figure`` is wrapped in a ``go.FigureWidget``. Without a figure, ``update`` is
    called once with the controls' initial values and must return a figure.
    """
    if figure is None:
        figure = update(**{name: control.value for name, control in controls.items()})
        if not isinstance(figure, BaseFigure):
            raise TypeError(f"without a figure, update must return a figure, got {type(figure).__name__}")
    if not isinstance(figure, go.FigureWidget):
        figure = go.FigureWidget(figure)
    return Explorer(controls, update, figure)
