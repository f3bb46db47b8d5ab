"""posviz.sphinxext's page script (``static/figures.js``) in bare pages: a figure is drawn once, in
the layout its screen needs (a phone's column, the dark theme), and is the figure a wide screen
draws once the screen widens, or the light one once the reader switches back.

Headless Chromium (``browser``, tests/conftest.py); no built book.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser_visit import DESKTOP, PHONE, bare_page, click_slider_step, new_context

ROOT = Path(__file__).resolve().parents[1]
STATIC = ROOT / "posviz" / "sphinxext" / "static"
VIEWPORT = '<meta name="viewport" content="width=device-width, initial-scale=1">'
# Counts the redraws the page script asks for (it calls Plotly.update and Plotly.relayout by name),
# and the layout keys each relayout sets.
COUNT = """<script>
window.posvizCalls = {update: 0, relayout: 0, relaid: []};
["update", "relayout"].forEach(function (name) {
  var call = Plotly[name];
  Plotly[name] = function (gd, change) {
    window.posvizCalls[name]++;
    if (name === "relayout") window.posvizCalls.relaid.push.apply(window.posvizCalls.relaid, Object.keys(change));
    return call.apply(this, arguments);
  };
});
</script>"""
# What a reader sees of the figure: its size and margins, every axis's domain and range, titles,
# colour bars, legend and slider placement.
SHOWN = """() => {
  const gd = document.querySelector('.js-plotly-plot'), fl = gd._fullLayout;
  const axes = Object.keys(fl).filter(k => /^[xy]axis\\d*$/.test(k)).sort()
    .map(k => [k, fl[k].domain.map(v => +v.toFixed(4)), fl[k].range.map(v => +(+v).toFixed(4))]);
  return {width: fl.width, height: fl.height, margin: [fl.margin.l, fl.margin.r, fl.margin.t, fl.margin.b],
          axes, title: fl.title.text, font: fl.font.size, paper: fl.paper_bgcolor,
          legend: [fl.legend.orientation, fl.legend.x, fl.legend.y],
          colorbars: gd._fullData.filter(t => t.colorbar)
            .map(t => [t.colorbar.x, t.colorbar.len, t.colorbar.thickness]),
          slider: fl.sliders.map(s => [s.len, s.pad.t]), narrow: gd.classList.contains('posviz-narrow')};
}"""


def _page() -> str:
    """Two panels side by side (a heatmap with its colour bar, a square scatter panel), a legend, a
    long title and a slider: every kind of change a phone's layout makes."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from posviz.plots import slider_figure
    from posviz.sphinxext import plotly_html
    from posviz.sphinxext._assets import PLOTLY_JS_DEFAULT, _figures_js

    def panels(k: int) -> list[object]:
        z = [[(i * j + k) % 5 for j in range(6)] for i in range(6)]
        return [go.Heatmap(z=z, colorbar={"title": {"text": "weight<br>a<sub>mn</sub>"}}),
                go.Scatter(x=[0, 1, -1], y=[k, 1, -1], name="query", xaxis="x2", yaxis="y2"),
                go.Scatter(x=[0, -1, 1], y=[-1, k, 1], name="key", xaxis="x2", yaxis="y2")]

    steps = [(str(k), panels(k), {"title.text": f"step {k}: a title long enough to wrap on a phone's narrow screen"})
             for k in range(3)]
    fig = slider_figure(steps, slider_label="k")
    grid = make_subplots(rows=1, cols=2, subplot_titles=["weights", "vectors"])
    fig.update_layout(grid.layout, overwrite=False)
    fig.update_layout(height=480, title_text=steps[0][2]["title.text"],  # no width: the column's, as in the book
                      xaxis2={"domain": grid.layout.xaxis2.domain, "anchor": "y2"},
                      yaxis2={"domain": grid.layout.yaxis2.domain, "anchor": "x2", "scaleanchor": "x2"})
    body = plotly_html({**json.loads(fig.to_json()), "config": {"responsive": True}})  # as the book's figures
    bundle = ROOT / PLOTLY_JS_DEFAULT  # the book's own plotly.js (built by npm); else plotly's, which the package ships
    if bundle.exists():
        plotly_js = bundle.read_text(encoding="utf-8")
    else:
        from plotly.offline import get_plotlyjs

        plotly_js = get_plotlyjs()
    style = "body { margin: 0 16px; } figure.posviz-figure { padding: 0 8px; box-sizing: border-box; } " + (
        STATIC / "figures.css"
    ).read_text(encoding="utf-8")
    return (
        f"<html><head>{VIEWPORT}<style>{style}</style><script>{plotly_js}</script>"
        f"<script>{_figures_js()}</script>{COUNT}</head><body>{body}</body></html>"
    )


@pytest.fixture(scope="module")
def page_html() -> str:
    return _page()


def _open(browser: object, html: str, *, phone: bool = False, dark: bool = False) -> tuple[object, object]:
    context = new_context(browser, phone=phone)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.on("console", lambda msg: msg.type == "error" and errors.append(msg.text))
    page.errors = errors
    page.set_content(html.replace("<html>", '<html data-theme="dark">' if dark else "<html>", 1))
    page.wait_for_selector(".js-plotly-plot[data-posviz-ready]")
    return context, page


def _shown_after_resize(page: object, size: dict[str, int], narrow: bool) -> dict:
    page.set_viewport_size(size)
    key = "n" if narrow else "w"
    page.wait_for_function(f"() => document.querySelector('.js-plotly-plot').__posviz.key.startsWith('{key}')")
    page.wait_for_timeout(400)  # the update's promise: titles, a phone's settling
    return page.evaluate(SHOWN)


def test_a_phone_draws_each_figure_once_in_its_layout(browser: object, page_html: str) -> None:
    context, page = _open(browser, page_html, phone=True)
    try:
        shown = page.evaluate(SHOWN)
        assert shown["narrow"] and shown["width"] <= PHONE["width"], shown
        assert len({round(a[1][0], 2) for a in shown["axes"] if a[0].startswith("y")}) == 2, "panels not stacked"
        assert "<br>" in shown["title"], "the long title is not wrapped"
        assert page.evaluate("() => window.posvizCalls.update") == 0, "the phone's layout was a second draw"
        relaid = page.evaluate("() => window.posvizCalls.relaid")  # what only the drawn figure shows may follow
        assert not [k for k in relaid if "title" in k], f"titles wrapped after the first draw: {relaid}"
        assert not page.errors, page.errors
    finally:
        context.close()


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_a_figure_first_drawn_on_a_phone_widens_to_the_wide_screens_figure(browser: object, page_html: str,
                                                                           dark: bool) -> None:
    context, page = _open(browser, page_html, dark=dark)
    try:
        wide = page.evaluate(SHOWN)
        narrowed = _shown_after_resize(page, PHONE, narrow=True)
    finally:
        context.close()
    context, page = _open(browser, page_html, phone=True, dark=dark)
    try:
        first = page.evaluate(SHOWN)
        widened = _shown_after_resize(page, DESKTOP, narrow=False)
        assert not page.errors, page.errors
    finally:
        context.close()
    assert not wide["narrow"] and first["narrow"]
    assert widened == wide  # back exactly: the phone's changes were recorded with what they replaced
    assert {k: v for k, v in first.items() if k != "axes"} == {k: v for k, v in narrowed.items() if k != "axes"}
    assert [a[:2] for a in first["axes"]] == [a[:2] for a in narrowed["axes"]]  # same panels; ranges may differ


def test_dark_from_the_start_is_one_draw_and_switches_back_to_the_light_figure(browser: object, page_html: str) -> None:
    context, page = _open(browser, page_html)
    try:
        light = page.evaluate(SHOWN)
    finally:
        context.close()
    context, page = _open(browser, page_html, dark=True)
    try:
        dark = page.evaluate(SHOWN)
        assert page.evaluate("() => window.posvizCalls.update") == 0, "the dark theme was a second draw"
        page.evaluate("() => { document.documentElement.dataset.theme = 'light'; }")
        page.wait_for_function("() => document.querySelector('.js-plotly-plot').__posviz.key === 'wl'")
        page.wait_for_timeout(300)
        assert page.evaluate(SHOWN) == light
        assert not page.errors, page.errors
    finally:
        context.close()
    assert dark["paper"] != light["paper"]


# Slider figures (posviz.plots.slider_figure) as the book stores them (posviz.sphinxext.plotly_html).


def test_slider_and_view_buttons_are_independent(browser: object) -> None:
    """posviz.plots.slider_figure in a bare page: the slider keeps the view, the view keeps the step."""
    import json

    import plotly.graph_objects as go

    from posviz.plots import slider_figure
    from posviz.sphinxext import plotly_html

    steps = [(str(k), [go.Scatter(y=[k, k]), go.Scatter(y=[-k, -k])]) for k in range(3)]
    fig = slider_figure(steps, slider_label="k", views=[("first", [0]), ("second", [1])])
    body = plotly_html(json.loads(fig.to_json()))
    context, page = _open(browser, bare_page(body))
    try:
        div_id = page.locator(".plotly-graph-div").get_attribute("id")

        def state() -> list[object]:
            return page.evaluate(
                "id => document.getElementById(id).data.map(t => [t.visible, Array.from(t.y)])", div_id
            )

        assert state() == [[True, [0, 0]], [False, [0, 0]]]
        click_slider_step(page, div_id, 2, 3)
        page.wait_for_function("id => document.getElementById(id).data[0].y[0] === 2", arg=div_id)
        assert state() == [[True, [2, 2]], [False, [-2, -2]]]
        page.locator(f"#{div_id} .updatemenu-button").nth(1).click()
        page.wait_for_function("id => document.getElementById(id).data[1].visible === true", arg=div_id)
        assert state() == [[False, [2, 2]], [True, [-2, -2]]]
        click_slider_step(page, div_id, 1, 3)
        page.wait_for_function("id => document.getElementById(id).data[0].y[0] === 1", arg=div_id)
        assert state() == [[False, [1, 1]], [True, [-1, -1]]]
        assert page.locator(f"#{div_id} .scatterlayer .trace").count() == 1  # only the shown view is drawn
    finally:
        context.close()


def test_phone_titles_wrap_with_each_slider_step_and_come_back_whole(browser: object) -> None:
    """On a phone a long title wraps; a slider step's new title wraps too; on a wide screen the
    title is the current step's own (not the one the page opened with)."""
    import json

    import plotly.graph_objects as go

    from posviz.plots import slider_figure
    from posviz.sphinxext import plotly_html

    def title(k: int) -> str:
        return f"step {k}: a title far too long to fit on one line of a phone, with words to spare {k}"

    steps = [(str(k), [go.Scatter(y=[k, k])], {"title.text": title(k)}) for k in range(3)]
    body = plotly_html(json.loads(slider_figure(steps, slider_label="k").to_json()))
    context, page = _open(browser, bare_page(body, head=VIEWPORT), phone=True)  # a phone's own width
    try:
        div_id = page.locator(".plotly-graph-div").get_attribute("id")
        shown = f"() => document.getElementById('{div_id}').layout.title.text"
        assert "<br>" in page.evaluate(shown) and page.evaluate(shown).replace("<br>", " ") == title(0)
        click_slider_step(page, div_id, 2, 3)
        page.wait_for_function(f"() => ({shown})().startsWith('step 2') && ({shown})().includes('<br>')")
        assert page.evaluate(shown).replace("<br>", " ") == title(2)
        page.set_viewport_size({"width": 1280, "height": 900})
        page.wait_for_function(f"() => !({shown})().includes('<br>')")
        assert page.evaluate(shown) == title(2)
    finally:
        context.close()


def test_compact_figures_expand_to_the_same_numbers(browser: object) -> None:
    """The page stores figures compactly (posviz.sphinxext): what plotly.js gets back is every
    number exactly, or, where a template shows a fixed precision, a number shown the same."""
    import json

    import numpy as np
    import plotly.graph_objects as go

    from posviz.plots import slider_figure
    from posviz.sphinxext import plotly_html

    rng = np.random.default_rng(0)
    exact = rng.normal(size=(3, 6, 5))  # no template: every digit is kept
    short = np.round(rng.normal(size=(3, 6, 5)), 3)  # few decimals: stored as integers, exactly
    shown = rng.normal(size=(3, 6, 5))  # hover shows 3 decimals
    scales = rng.lognormal(sigma=4, size=(3, 40))  # hover shows 4 significant digits, many scales
    repeated = np.round(rng.normal(size=(2, 50)), 2)  # steps 0 and 2 hold the same array
    steps = [
        (
            str(k),
            [
                go.Heatmap(z=exact[k]),
                go.Heatmap(z=short[k], hovertemplate="%{z}"),
                go.Heatmap(z=shown[k], hovertemplate="%{z:.3f}<extra></extra>"),
                go.Scatter(y=scales[k], hovertemplate="%{y:.4g}"),
                go.Scatter(y=repeated[k % 2]),
            ],
        )
        for k in range(3)
    ]
    fig = json.loads(slider_figure(steps, slider_label="k").to_json())
    body = plotly_html(fig)
    assert len(body) < len(json.dumps(fig)) / 2
    assert '"posviz_decimals"' in body and '"posviz_same"' in body
    context, page = _open(browser, bare_page(body))
    try:
        div_id = page.locator(".plotly-graph-div").get_attribute("id")
        got = page.evaluate(
            """id => {
                const gd = document.getElementById(id);
                const list = a => (a ? Array.from(a, r => (r.length !== undefined ? Array.from(r) : r)) : a);
                const steps = gd.layout.sliders[0].steps.map(s => Object.fromEntries(
                    Object.entries(s.args[0]).map(([k, v]) => [k, v.map(list)])));
                return {data: gd.data.map(t => list(t.z || t.y)), steps};
            }""",
            div_id,
        )
    finally:
        context.close()
    assert got["data"] == [exact[0].tolist(), short[0].tolist(), got["data"][2], got["data"][3], repeated[0].tolist()]
    for k, step in enumerate(got["steps"]):
        z, y = step["z"], step["y"]
        assert z[0] == exact[k].tolist() and z[1] == short[k].tolist() and y[4] == repeated[k % 2].tolist()
        assert [f"{v:.3f}" for v in np.ravel(z[2])] == [f"{v:.3f}" for v in shown[k].ravel()]
        assert [float(f"{v:.4g}") for v in y[3]] == [float(f"{v:.4g}") for v in scales[k]]
