"""ipywidgets explorers for readers who run the chapters in a kernel (JupyterLab, Colab, Binder).

The static web page cannot run Python: there, figures use :func:`posviz.plots.slider_figure`.
An :class:`Explorer` recomputes a figure from live controls; a bad combination of values (say,
an odd dimension) never raises out of the callback: it shows a one-line message and keeps the
last good figure.

What a reader sees in JupyterLab, Colab or Binder is the frontend's copy of the figure, not the
Python one, and Plotly's ``FigureWidget`` keeps the two in step only partly: the figure state
that a new view draws (the first display, a page reload, a second view) is the one from when
the widget was built, and the frontend patches its copy with each batched update, losing the
coordinates of a trace whose update leaves them out. :class:`Explorer` therefore republishes the
whole figure state after every update (``publish``). It also gives every control a usable
width, lets the control row wrap, and lets the figure fill the output's width and follow resizes.
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from copy import deepcopy
from functools import cache
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import plotly
import plotly.graph_objects as go
import torch
import traitlets
from plotly.basedatatypes import BaseFigure

from ._diff import _changes, _merged

__all__ = [
    "CONTROL_WIDTH",
    "Explorer",
    "ExplorerFigure",
    "Update",
    "colorbar_below",
    "explorer",
    "one_thread",
    "publish",
]

CONTROL_WIDTH = "330px"
"""The width every slider and dropdown of an explorer gets unless it asks for more: a slider's
track is what is left after its label and readout, so ``width="auto"`` (or a narrow width with a
long label) leaves no track to drag."""

_SLIDERS = (
    widgets.IntSlider,
    widgets.FloatSlider,
    widgets.FloatLogSlider,
    widgets.SelectionSlider,
    widgets.IntRangeSlider,
    widgets.FloatRangeSlider,
    widgets.SelectionRangeSlider,
)

Update = BaseFigure | Sequence[Mapping[str, Any]] | tuple[Sequence[Mapping[str, Any]], Mapping[str, Any]]
"""What an update function returns: a figure with as many traces as the explorer's figure
(its traces' properties and its layout are copied over); one dict of trace properties per
trace (e.g. ``[{"z": new_z}]``); or such a list and a dict of layout properties,
``([{"z": new_z}], {"title": {"text": "..."}})``: what changes, without building a figure
(the cheapest)."""


def _validated(target: BaseFigure, result: Update) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Check an update against the figure without touching it: trace count, and every trace
    property and layout key through Plotly's own validators (on fresh objects holding only the
    update, which costs a fraction of copying the figure)."""
    if isinstance(result, BaseFigure):
        traces = [trace.to_plotly_json() for trace in result.data]
        layout = result.layout.to_plotly_json()
    elif isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], Mapping):
        traces, layout = [dict(update) for update in result[0]], dict(result[1])
    else:
        traces, layout = [dict(update) for update in result], {}
    if len(traces) != len(target.data):
        raise ValueError(f"the update gave {len(traces)} traces, the figure has {len(target.data)}")
    checked = []
    for trace, update in zip(target.data, traces):
        kind = update.get("type", trace.type)
        if kind != trace.type:
            raise ValueError(f"the update turns a {trace.type} trace into a {kind} trace")
        # raises on a bad property or value; what it holds is the update as Plotly stores it
        checked.append(type(trace)(**{k: v for k, v in update.items() if k not in ("type", "uid")}).to_plotly_json())
    return checked, go.Layout(**layout).to_plotly_json()


def _apply(target: BaseFigure, traces: list[dict[str, Any]], layout: dict[str, Any]) -> None:
    """Update ``target`` with validated ``traces`` and ``layout``, handing Plotly only what differs
    from the figure it holds: the end state is the same (Plotly leaves a property that already has
    the value alone), but its property machinery costs about as much for a value it already holds
    as for a new one (the models chapter's explorer, its update handed over whole: 180 ms a change
    here; only what changed: 50 ms)."""
    data, held = target._data, target._layout_obj._props
    with target.batch_update():
        for trace, props, update in zip(target.data, data, traces):
            changed = _changes(props, update)
            if changed:
                trace.update(changed)
        changed = _changes(held, layout)
        if changed:
            target.layout.update(changed)
    if isinstance(target, ExplorerFigure):
        target._record(traces, layout)
    publish(target)


_COORDINATES = ("x", "y", "z", "text")


def _given(value: object) -> bool:
    """Not plotly.js's empty default (``text: ""``)."""
    return value is not None and not (isinstance(value, str) and value == "")


def publish(figure: BaseFigure) -> None:
    """Make a ``FigureWidget``'s synced state the figure as it is now (a plain figure: no-op).

    A view draws the widget's ``_widget_data`` and ``_widget_layout``. Plotly sets them when the
    widget is built and when the figure itself is displayed, but not when it sits in a box, so a
    view created later (the box shown after an update, a page reload with the kernel running,
    a second view) would draw the figure as it was built. Batched updates reach the frontend as
    one restyle in which a trace that changes only some properties gets *undefined* for the
    others; the frontend's copy of the state turns those into missing coordinates (a text
    trace updated with only ``text`` loses its x and y). Setting both traits after every update
    replaces that copy with the complete, current figure; views already drawn ignore it.

    "The figure as it is now" is, for an :class:`ExplorerFigure`, the figure it was built as
    with every update since merged in, not Plotly's ``_data``: Plotly drops from ``_data`` any
    property the frontend reports back among its defaults (a heatmap's ``zmin`` once the
    frontend has drawn it, a text trace's x and y), so a view drawn from it after a page reload
    showed another figure (colours rescaled, captions without coordinates). For another
    ``FigureWidget``, ``_data`` with the coordinates Plotly dropped put back.
    """
    if isinstance(figure, ExplorerFigure):
        figure._widget_data = deepcopy(figure._shown[0])
        figure._widget_layout = deepcopy(figure._shown[1])
    elif isinstance(figure, widgets.Widget):
        # Plotly drops from a trace the properties that equal what the frontend reported back
        # (its defaults, e.g. a text trace's unchanged x and y); a new view needs them
        data = [
            {**{k: v for k, v in defaults.items() if k in _COORDINATES and k not in props and _given(v)}, **props}
            for props, defaults in zip(figure._data, figure._data_defaults)
        ]
        figure._widget_data = deepcopy(data)
        figure._widget_layout = deepcopy(figure._layout_obj._props)


# The module anywidget loads for every ExplorerFigure: small, because anywidget gives a model
# 2 s to load its module and initialize, and otherwise drops every later message to it (the
# figure is drawn once and never updates; "[anywidget] Failed to initialize model." in the
# console). Plotly's own widget module is 5 MB: on a busy machine (Binder, CI, a reader's laptop
# running the chapter) evaluating it takes longer than that. So this module only starts loading
# Plotly's (sent as the trait `_plotly_module`, imported once per page and shared by every
# figure) and returns; Plotly's model is set up once it is there, from the figure state as it is
# then (`publish` keeps that state current, so the updates sent meanwhile are not needed), and
# a view waits for it.
#
# It also fits the figure to its output: anywidget renders a view before the output holding it
# is attached to the page, so plotly.js draws at its default 700 px, and nothing tells Plotly's
# widget when the output's width changes. The view redraws the figure at its element's width
# whenever that width changes (plotly.js's `responsive` handler: Plotly.Plots.resize).
_LOADER = """
const KEY = "%s";
const plotlyWidget = (model) => {
  const cache = (globalThis.__posvizPlotlyWidget ??= {});
  if (!cache[KEY]) {
    const url = URL.createObjectURL(new Blob([model.get("_plotly_module")], {type: "text/javascript"}));
    cache[KEY] = import(url).then((module) => module.default).finally(() => URL.revokeObjectURL(url));
  }
  return cache[KEY];
};
export default () => {
  let base = null;
  let ready = null;
  return {
    initialize(context) {
      ready = plotlyWidget(context.model).then((make) => {
        base = make();
        return base.initialize(context);
      });
      ready.catch((error) => console.error("posviz: Plotly's widget module did not load", error));
    },
    async render(context) {
      await ready;
      const cleanup = base.render(context);
      const el = context.el;
      let tries = 0;
      const fit = () => {
        if (!el.isConnected || !el.clientWidth) return;
        if (!el._fullLayout || !el._responsiveChartHandler) {  // still drawing
          if (tries++ < 300) requestAnimationFrame(fit);
          return;
        }
        tries = 0;
        if (Math.abs(el._fullLayout.width - el.clientWidth) > 1) el._responsiveChartHandler();
      };
      const observer = new ResizeObserver(fit);
      observer.observe(el);
      return () => {
        observer.disconnect();
        if (typeof cleanup === "function") cleanup();
      };
    },
  };
};
"""


@cache
def _plotly_widget_module() -> str:
    """Plotly's widget module (its default export: the anywidget widget)."""
    return (Path(plotly.__file__).parent / "package_data" / "widgetbundle.js").read_text(encoding="utf-8")


@cache
def _loader() -> str:
    """The module anywidget loads (:data:`_LOADER`), keyed by the Plotly module it loads."""
    return _LOADER % hashlib.sha256(_plotly_widget_module().encode()).hexdigest()[:16]


class ExplorerFigure(go.FigureWidget):
    """A ``go.FigureWidget`` that reaches the page whole and fills its output's width.

    * Plotly's widget opens its comm (the frontend's copy of the widget) before it holds any
      data, then sends the data as an update; a frontend still loading the widget's module (5 MB,
      slow on a busy machine) drops that update and draws an empty figure. This one opens its
      comm only when it is complete, with the figure in the opening state; ``defer_open=True``
      leaves the opening to :meth:`open`, so that updates made before it arrive whole too.
    * It is drawn at the width of its element and redrawn when that width changes (Plotly's
      widget keeps its first width, usually plotly.js's 700 px default).
    * Its frontend module is small and loads Plotly's 5 MB one itself, once per page: anywidget
      gives a model 2 s to load its module, and a model that misses that never hears of an
      update again (the figure stays as first drawn; see :data:`_LOADER`).
    """

    _esm = _loader()
    _plotly_module = traitlets.Unicode(_plotly_widget_module()).tag(sync=True)

    def __init__(self, *args: Any, defer_open: bool = False, **kwargs: Any) -> None:
        self._opening_deferred = True
        super().__init__(*args, **kwargs)
        self._config = {**self._config, "responsive": True}
        self.layout.width = None
        self.layout.autosize = True
        # what the explorer set: the figure as built, with every update merged in (see publish)
        self._shown: tuple[list[dict[str, Any]], dict[str, Any]] = (
            deepcopy(self._data),
            deepcopy(self._layout_obj._props),
        )
        self._opening_deferred = False
        if not defer_open:
            self.open()

    def _record(self, traces: Sequence[Mapping[str, Any]], layout: Mapping[str, Any]) -> None:
        """Merge an update (validated, one dict per trace) into what :func:`publish` sends."""
        data, shown_layout = self._shown
        self._shown = ([_merged(t, u) for t, u in zip(data, traces)], _merged(shown_layout, layout))

    def open(self) -> None:
        """Open the comm, its state the figure as it is now (no-op while being built)."""
        if getattr(self, "_opening_deferred", False):
            return
        if self.comm is None:
            publish(self)
        super().open()


def _fit(control: widgets.Widget) -> None:
    """A slider or dropdown at least ``CONTROL_WIDTH`` wide (an explicit width in ``px``
    above it stays), not shrunk by the row, with its label at its natural width."""
    if isinstance(control, (*_SLIDERS, widgets.Dropdown)):
        width = control.layout.width or ""
        if not (width.endswith("px") and float(width[:-2]) >= float(CONTROL_WIDTH[:-2])):
            control.layout.width = CONTROL_WIDTH
    control.layout.flex = "0 0 auto"
    style = getattr(control, "style", None)
    if style is not None and hasattr(style, "description_width") and not style.description_width:
        style.description_width = "initial"


def colorbar_below(domain: Sequence[float], plot_height: int, gap: int = 58, **colorbar: Any) -> dict[str, Any]:
    """A horizontal colour bar under the panel whose x domain is ``domain`` (paper fractions),
    as wide as the panel and ``gap`` px below its plot area (under the x-axis title).

    The figure's width is the output's, anywhere from about 700 to 1,900 px, so a vertical bar
    placed between two panels lands on the next panel's tick labels at one width or another;
    one under its own panel never does. ``plot_height`` is the height of the plot area (the
    figure's height less its top and bottom margins): the bottom margin must hold ``gap`` plus
    about 50 px. Other keyword arguments are colour-bar properties.
    """
    left, right = domain
    return {
        "orientation": "h",
        "x": (left + right) / 2,
        "xanchor": "center",
        "len": right - left,
        "y": -gap / plot_height,
        "yanchor": "top",
        "thickness": 10,
        **colorbar,
        "title": {"side": "top", **colorbar.get("title", {})},
    }


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

    The controls sit in a wrapping row, sliders and dropdowns at least ``CONTROL_WIDTH``
    wide; the figure fills the width of the output and follows resizes of the window (a width
    set on the figure's layout is dropped, its height stays); after every update the whole
    figure state is republished (``publish``), so a view drawn later shows the current figure.

    Attributes:
        controls: the control widgets, by keyword name.
        status: an ``ipywidgets.HTML`` line: empty, or the last error.
        figure: the figure being updated: an ``ExplorerFigure``, a copy of the figure given.
    """

    def __init__(
        self,
        controls: Mapping[str, widgets.ValueWidget],
        update: Callable[..., Update],
        figure: BaseFigure,
    ) -> None:
        self.controls = dict(controls)
        self.update = update
        # a copy whose comm opens only once the first update is in it (see ExplorerFigure)
        self.figure = ExplorerFigure(figure, defer_open=True)
        self.status = widgets.HTML(layout=widgets.Layout(min_height="1.5em"))
        for control in self.controls.values():
            _fit(control)
        self.refresh()
        self.figure.open()
        row = widgets.HBox(list(self.controls.values()), layout=widgets.Layout(flex_flow="row wrap"))
        super().__init__([row, self.status, self.figure], layout=widgets.Layout(width="100%"))
        for control in self.controls.values():
            control.observe(self.refresh, names="value")

    def refresh(self, _change: object = None) -> bool:
        """Recompute the figure from the controls; ``False`` (and a message) if that failed."""
        try:
            with one_thread():
                result = self.update(**{name: control.value for name, control in self.controls.items()})
            traces, layout = _validated(self.figure, result)  # the widget changes only if this passes
            _apply(self.figure, traces, layout)
        except Exception as err:  # a callback must never raise
            message = html.escape(f"{type(err).__name__}: {err}")
            self.status.value = f'<span style="color:#b30000">⚠ {message}</span>'
            return False
        self.status.value = ""
        return True


def explorer(
    controls: Mapping[str, widgets.ValueWidget],
    update: Callable[..., Update],
    figure: BaseFigure | None = None,
) -> Explorer:
    """Build an :class:`Explorer`; ``figure`` defaults to the first ``update`` result.

    The figure is copied into an ``ExplorerFigure`` (pass a plain ``go.Figure``: a
    ``go.FigureWidget`` would open a widget that is never shown). Without a figure, ``update``
    is called once with the controls' initial values and must return a figure.
    """
    if figure is None:
        figure = update(**{name: control.value for name, control in controls.items()})
        if not isinstance(figure, BaseFigure):
            raise TypeError(f"without a figure, update must return a figure, got {type(figure).__name__}")
    return Explorer(controls, update, figure)
