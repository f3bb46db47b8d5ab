"""posviz.widgets: explorers update their figure and never raise out of a callback (no frontend)."""

from __future__ import annotations

import ipywidgets as widgets
import plotly.graph_objects as go
import pytest

import posviz
import posviz.widgets as widgets_pkg
from posviz.widgets import Explorer, explorer
from posviz.widgets._diff import _same


def _encoding_explorer() -> tuple[Explorer, widgets.IntSlider]:
    dim = widgets.IntSlider(value=8, min=1, max=32, description="dim")
    base = widgets.FloatLogSlider(value=1e4, min=1, max=5, description="base")

    def update(dim: int, base: float) -> list[dict]:
        return [{"z": posviz.sinusoidal_encoding(6, dim, base, device="cpu").numpy()}]

    fig = go.FigureWidget(go.Heatmap(z=[[0.0]]))
    return explorer({"dim": dim, "base": base}, update, fig), dim


def _width(box: Explorer) -> int:
    return len(box.figure.data[0].z[0])


def test_initial_values_are_drawn() -> None:
    box, _ = _encoding_explorer()
    assert isinstance(box, widgets.VBox)
    assert _width(box) == 8 and box.status.value == ""
    assert box.children[1] is box.status and box.children[2] is box.figure


def test_setting_a_control_updates_the_figure() -> None:
    box, dim = _encoding_explorer()
    dim.value = 12
    assert _width(box) == 12 and box.status.value == ""


def test_a_bad_value_shows_a_message_and_keeps_the_last_good_figure() -> None:
    box, dim = _encoding_explorer()
    dim.value = 12
    dim.value = 7  # odd: posviz raises ValueError inside the callback
    assert _width(box) == 12
    assert "ValueError" in box.status.value and "even" in box.status.value
    dim.value = 10  # recovers, and the message goes away
    assert _width(box) == 10 and box.status.value == ""


def test_the_message_is_escaped() -> None:
    def update(x: int) -> list[dict]:
        raise RuntimeError("<b>x</b>")

    box = explorer({"x": widgets.IntSlider()}, update, go.Figure(go.Scatter(y=[1])))
    assert "&lt;b&gt;" in box.status.value and "<b>" not in box.status.value


def test_an_invalid_property_is_reported_not_half_applied() -> None:
    fig = go.FigureWidget([go.Scatter(y=[1, 2]), go.Scatter(y=[3])])
    calls = {"bad": False}

    def update(x: int) -> list[dict]:
        if calls["bad"]:
            return [{"y": [9, 9]}, {"no_such_property": 1}]
        return [{"y": [x, x]}, {"y": [x]}]

    slider = widgets.IntSlider(value=5)
    box = explorer({"x": slider}, update, fig)
    calls["bad"] = True
    slider.value = 6
    assert list(box.figure.data[0].y) == [5, 5]  # the first trace was not changed either
    assert "no_such_property" in box.status.value


def test_a_wrong_number_of_traces_is_reported() -> None:
    slider = widgets.IntSlider(value=1)
    box = explorer({"x": slider}, lambda x: [{"y": [x]}] * x, go.Figure(go.Scatter(y=[0])))
    assert box.status.value == ""
    slider.value = 2
    assert "2 traces" in box.status.value and list(box.figure.data[0].y) == [1]


def test_update_may_return_a_figure_and_provide_the_first_one() -> None:
    def update(n: int) -> go.Figure:
        return go.Figure(go.Scatter(y=list(range(n))), layout={"title": {"text": f"n = {n}"}})

    slider = widgets.IntSlider(value=3)
    box = explorer({"n": slider}, update)
    assert isinstance(box.figure, go.FigureWidget) and len(box.figure.data[0].y) == 3
    slider.value = 5
    assert len(box.figure.data[0].y) == 5 and box.figure.layout.title.text == "n = 5"


def test_update_may_return_trace_and_layout_changes() -> None:
    """The cheapest form: ``([trace changes], {layout changes})``, no figure built."""
    slider = widgets.IntSlider(value=3)
    fig = go.Figure(go.Scatter(y=[0]), layout={"title": {"text": "start"}, "height": 300})
    box = explorer({"n": slider}, lambda n: ([{"y": list(range(n))}], {"title": {"text": f"n = {n}"}}), fig)
    slider.value = 5
    assert list(box.figure.data[0].y) == [0, 1, 2, 3, 4] and box.figure.layout.title.text == "n = 5"
    assert box.figure.layout.height == 300  # what the update leaves out stays
    assert box.figure._widget_layout["title"]["text"] == "n = 5"  # and a later view draws it


def test_a_bad_layout_change_is_reported_not_half_applied() -> None:
    slider = widgets.IntSlider(value=1)
    fig = go.Figure(go.Scatter(y=[0]))
    box = explorer({"n": slider}, lambda n: ([{"y": [n]}], {"no_such_layout_key": n} if n > 1 else {}), fig)
    slider.value = 2
    assert "no_such_layout_key" in box.status.value and list(box.figure.data[0].y) == [1]


def test_without_a_figure_update_must_return_one() -> None:
    with pytest.raises(TypeError, match="must return a figure"):
        explorer({"x": widgets.IntSlider()}, lambda x: [{"y": [x]}])


# ---- what reaches the frontend (the JupyterLab test drives the real thing) ---------------------


def test_the_synced_state_is_the_current_figure() -> None:
    """A view drawn later (a page reload, a second view) draws ``_widget_data``: after every
    update it is the whole current figure, text traces with their coordinates."""
    fig = go.Figure([go.Scatter(x=[0], y=[0]), go.Scatter(x=[0, 1], y=[0, 0], mode="text", text=["", ""])])
    slider = widgets.IntSlider(value=1)
    box = explorer({"n": slider}, lambda n: [{"x": list(range(n)), "y": [n] * n}, {"text": [f"n={n}", "b"]}], fig)
    for n in (1, 4):
        slider.value = n
        data = box.figure._widget_data
        assert list(data[0]["x"]) == list(range(n)) and data[1]["text"] == [f"n={n}", "b"]
        assert list(data[1]["x"]) == [0, 1] and list(data[1]["y"]) == [0, 0]  # the text keeps its place


def test_the_synced_state_keeps_what_plotly_drops_as_a_frontend_default() -> None:
    """Plotly removes from a FigureWidget's ``_data`` every property the frontend reports back
    among its defaults (``_js2py_traceDeltas``: a heatmap's ``zmin``, a text trace's x and y);
    the published state is still the figure the explorer built and updated."""
    fig = go.Figure(
        [go.Heatmap(z=[[0.0]], zmin=0.0, zmax=1.0, colorbar={"title": {"text": "w"}}), go.Scatter(mode="text")]
    )
    slider = widgets.IntSlider(value=1)
    update = lambda n: [{"z": [[n, 0.5]], "zmax": float(n)}, {"x": [0], "y": [0], "text": [f"n={n}"]}]  # noqa: E731
    box = explorer({"n": slider}, update, fig)
    for props in box.figure._data:  # what _handler_js2py_traceDeltas does with a delta holding them
        for key in ("zmin", "x", "y", "colorbar"):
            props.pop(key, None)
    slider.value = 3
    heatmap, text = box.figure._widget_data
    assert heatmap["zmin"] == 0.0 and heatmap["zmax"] == 3.0 and list(heatmap["z"][0]) == [3, 0.5]
    assert heatmap["colorbar"]["title"]["text"] == "w" and heatmap["uid"] == box.figure.data[0].uid
    assert list(text["x"]) == [0] and list(text["y"]) == [0] and list(text["text"]) == ["n=3"]


def test_the_figure_opens_its_comm_complete(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comm opens with the figure after the first update in its state (an update sent right
    after the opening can be dropped by a frontend still loading the widget's module)."""
    opened = []
    original = widgets.Widget.open

    def record(self: widgets.Widget) -> None:
        if self.comm is None and isinstance(self, widgets_pkg.ExplorerFigure):
            opened.append(list(self._widget_data[0]["z"][0]))
        original(self)

    monkeypatch.setattr(widgets.Widget, "open", record)
    _encoding_explorer()
    assert [len(z) for z in opened] == [8]  # opened once, with the first update's 8 columns


def test_figure_fills_the_width_and_controls_have_room() -> None:
    fig = go.Figure(go.Heatmap(z=[[0.0]]), layout={"width": 900, "height": 400})
    slider = widgets.IntSlider(layout=widgets.Layout(width="auto"), description="a long description")
    box = explorer({"x": slider, "c": widgets.Checkbox(description="c")}, lambda x, c: [{"z": [[x]]}], fig)
    assert box.figure.layout.width is None and box.figure.layout.autosize and box.figure.layout.height == 400
    assert box.figure._config["responsive"]
    assert slider.layout.width == widgets_pkg.CONTROL_WIDTH and slider.style.description_width == "initial"
    assert box.children[0].layout.flex_flow == "row wrap"
    assert "ResizeObserver" in box.figure._esm and "export default" in box.figure._esm
    # the module anywidget loads is small (it has 2 s); Plotly's 5 MB one comes as a trait
    assert len(box.figure._esm) < 10_000 and len(box.figure._plotly_module) > 1_000_000


def test_colorbar_below_its_panel() -> None:
    bar = widgets_pkg.colorbar_below([0.0, 0.4], plot_height=300, title={"text": "PE"})
    assert bar["orientation"] == "h" and bar["len"] == pytest.approx(0.4) and bar["x"] == pytest.approx(0.2)
    assert bar["y"] < 0 and bar["title"] == {"side": "top", "text": "PE"}


# ---- only what changes is handed to Plotly (posviz.widgets._apply) -------------------------------


def test_an_explorer_hands_plotly_only_the_changes_and_ends_where_the_whole_updates_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def update(n: int) -> go.Figure:  # a whole figure each time, as a chapter's explorer may return
        fig = go.Figure([go.Scatter(y=[n, 1], name="moves"), go.Scatter(y=[5, 6], name="still")])
        return fig.update_layout(title={"text": f"n = {n}"}, height=400, xaxis={"title": {"text": "x"}})

    slider = widgets.IntSlider(value=0)
    box = explorer({"n": slider}, update)
    handed: list[tuple[str, dict]] = []
    for k, trace in enumerate(box.figure.data):
        real = trace.update
        monkeypatch.setattr(trace, "update", lambda d, real=real, k=k: handed.append((f"trace {k}", d)) or real(d))
    real_layout = box.figure.layout.update
    monkeypatch.setattr(box.figure.layout, "update", lambda d: handed.append(("layout", d)) or real_layout(d))
    expected = go.Figure(update(0))
    for n in (3, 3, 7):
        slider.value = n
        whole = update(n)
        for trace, new in zip(expected.data, whole.data):
            trace.update(new.to_plotly_json())
        expected.layout.update(whole.layout.to_plotly_json())
    assert handed == [("trace 0", {"y": [3, 1]}), ("layout", {"title": {"text": "n = 3"}}),
                      ("trace 0", {"y": [7, 1]}), ("layout", {"title": {"text": "n = 7"}})]  # fmt: skip
    ours, theirs = box.figure.to_plotly_json(), expected.to_plotly_json()
    for trace in ours["data"] + theirs["data"]:
        trace.pop("uid", None)
    assert ours["layout"].pop("autosize") is True  # the explorer's figure follows its output's width
    assert _same(ours, theirs), [k for k in ours["layout"] if not _same(ours["layout"][k], theirs["layout"].get(k))]
