"""The built book in headless Chromium: offline, error-free, math typeset, sliders that work.

Needs ``make book`` first (``_build/html``) and Debian's Chromium at /usr/bin/chromium;
Playwright never downloads a browser. Full-page screenshots go to ``screenshots/`` for review.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
# POSVIZ_SITE / POSVIZ_SHOTS let an author check a partial build (e.g. one chapter) elsewhere.
SITE = Path(os.environ.get("POSVIZ_SITE", ROOT / "_build" / "html"))
SHOTS = Path(os.environ.get("POSVIZ_SHOTS", ROOT / "screenshots"))
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
IGNORED_ERRORS = {
    # sphinx-thebe 0.3.1 declares `const THEBE_JS_URL` in two inline scripts on every page
    # (upstream bug; thebe itself only loads when a reader clicks "Live code").
    "Identifier 'THEBE_JS_URL' has already been declared",
}
RAW_MATH = ("$$", "\\(", "\\)", "\\[", "\\]")

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is absent (apt-get install chromium)", allow_module_level=True)
if not (SITE / "index.html").exists():
    pytest.skip(f"{SITE} is not built: run `make book` first", allow_module_level=True)

PAGES = sorted(
    path.relative_to(SITE).as_posix()
    for path in SITE.rglob("*.html")
    if not path.relative_to(SITE).parts[0].startswith("_")
)


def _source(page: str) -> str:
    return (SITE / page).read_text(encoding="utf-8")


def _has_math(page: str) -> bool:
    return 'class="math notranslate' in _source(page)


def _figure_count(page: str) -> int:
    return _source(page).count('class="plotly-graph-div"')


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="session")
def base_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=SITE))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def shots() -> Path:
    shutil.rmtree(SHOTS, ignore_errors=True)
    SHOTS.mkdir()
    return SHOTS


class _Visit:
    """A page opened with every request, console error and page error recorded."""

    def __init__(self, browser: object, url: str) -> None:
        self.foreign: list[str] = []
        self.failed: list[str] = []
        self.errors: list[str] = []
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda msg: msg.type == "error" and self.errors.append(msg.text))
        self.page.on("pageerror", lambda err: self.errors.append(str(err)))
        self.page.on("response", lambda r: r.status >= 400 and self.failed.append(f"{r.status} {r.url}"))
        self.page.on("requestfailed", lambda r: self.failed.append(f"{r.failure} {r.url}"))
        self.page.goto(url, wait_until="load")

    def _route(self, route: object) -> None:
        url = route.request.url
        if urlsplit(url).scheme in ("data", "blob") or urlsplit(url).hostname == "127.0.0.1":
            route.continue_()
        else:  # never let the browser reach out, and fail the test
            self.foreign.append(url)
            route.abort()

    def unexpected_errors(self) -> list[str]:
        return [e for e in self.errors if not any(known in e for known in IGNORED_ERRORS)]


def test_the_build_has_pages_math_and_slider_figures() -> None:
    """Guard against a vacuous pass: the pages below must exercise every check."""
    assert len(PAGES) >= 10, PAGES
    assert "book/intro.html" in PAGES and "book/api.html" in PAGES
    assert sum(map(_has_math, PAGES)) >= 2
    assert sum('"sliders"' in _source(p) and _figure_count(p) > 0 for p in PAGES) >= 1


_PLOTS_JS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => ({
    id: gd.id,
    traces: (gd._fullData || []).length,
    svg: !!gd.querySelector('svg.main-svg'),
    sliders: (gd.layout.sliders || []).map(s => ({active: s.active || 0, steps: s.steps.length})),
}))"""
# What the figure holds (trace data) and what it draws (the plot layer's SVG).
_STATE_JS = """id => {
    const gd = document.getElementById(id);
    return [JSON.stringify(gd.data), gd.querySelector('.cartesianlayer, .polarlayer').innerHTML];
}"""
_CHANGED_JS = f"""([id, before]) => {{
    const now = ({_STATE_JS})(id);
    return now[0] !== before[0] && now[1] !== before[1];
}}"""


def _move_slider(page: object, div_id: str, target: int, steps: int) -> None:
    """Click the slider rail where step ``target`` sits, as a reader would."""
    plot = page.locator(f"#{div_id}")
    plot.scroll_into_view_if_needed()
    rail = plot.locator(".slider-container .slider-rail-rect").first
    ticks = plot.locator(".slider-container .slider-tick-rect")
    assert ticks.count() == steps, f"{div_id}: {ticks.count()} slider ticks for {steps} steps"
    tick, box = ticks.nth(target).bounding_box(), rail.bounding_box()
    page.mouse.click(tick["x"] + tick["width"] / 2, box["y"] + box["height"] / 2)


@pytest.mark.parametrize("page_path", PAGES)
def test_page(page_path: str, browser: object, base_url: str, shots: Path) -> None:
    visit = _Visit(browser, f"{base_url}/{page_path}")
    page = visit.page
    try:
        if 'http-equiv="Refresh"' in _source(page_path):  # index.html: a redirect to the root page
            page.wait_for_url(lambda url: not url.endswith(page_path))
        page.wait_for_load_state("networkidle")
        page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")

        if _has_math(page_path):
            assert page.locator("mjx-container").count() > 0, "MathJax typeset nothing"
            visible = page.evaluate(
                """() => { const c = (document.querySelector('main') || document.body).cloneNode(true);
                   c.querySelectorAll('pre, code, script, style, mjx-container').forEach(e => e.remove());
                   return c.textContent; }"""
            )
            raw = [token for token in RAW_MATH if token in visible]
            assert not raw, f"raw math delimiters left in the text: {raw}"

        expected = _figure_count(page_path)
        if expected:
            page.wait_for_function(
                "n => document.querySelectorAll('.js-plotly-plot svg.main-svg').length >= n", arg=expected
            )
        plots = page.evaluate(_PLOTS_JS)
        assert len(plots) == expected, f"{len(plots)} figures drawn, {expected} in the HTML"
        for plot in plots:
            assert plot["svg"] and plot["traces"] > 0, f"figure {plot['id']} is not drawn"
            for slider in plot["sliders"]:
                if slider["steps"] < 2:
                    continue
                target = 0 if slider["active"] == slider["steps"] - 1 else slider["steps"] - 1
                before = page.evaluate(_STATE_JS, plot["id"])
                _move_slider(page, plot["id"], target, slider["steps"])
                try:  # both the data and the drawing must change
                    page.wait_for_function(_CHANGED_JS, arg=[plot["id"], before], timeout=5000)
                except sync_api.TimeoutError:
                    pytest.fail(f"figure {plot['id']}: moving the slider to step {target} changed nothing")
                active = page.evaluate("id => document.getElementById(id).layout.sliders[0].active", plot["id"])
                assert active == target, f"figure {plot['id']}: slider at step {active}, clicked step {target}"

        page.screenshot(path=str(shots / (re.sub(r"[/\\]", "__", page_path) + ".png")), full_page=True)
        assert not visit.foreign, f"requests left 127.0.0.1: {visit.foreign}"
        assert not visit.failed, f"failed requests: {visit.failed}"
        assert not visit.unexpected_errors(), f"console/page errors: {visit.unexpected_errors()}"
    finally:
        visit.context.close()


def test_slider_and_view_buttons_are_independent(browser: object) -> None:
    """posviz.plots.slider_figure in a bare page: the slider keeps the view, the view keeps the step."""
    import json

    import plotly.graph_objects as go

    from posviz.plots import slider_figure
    from posviz.sphinxext import plotly_html
    from posviz.sphinxext._assets import PLOTLY_JS

    steps = [(str(k), [go.Scatter(y=[k, k]), go.Scatter(y=[-k, -k])]) for k in range(3)]
    fig = slider_figure(steps, slider_label="k", views=[("first", [0]), ("second", [1])])
    body = plotly_html(json.loads(fig.to_json()))
    context = browser.new_context(viewport={"width": 1000, "height": 700})
    try:
        page = context.new_page()
        page.set_content(f"<html><head><script>{PLOTLY_JS.read_text()}</script></head><body>{body}</body></html>")
        div_id = page.locator(".plotly-graph-div").get_attribute("id")
        page.wait_for_selector(f"#{div_id} svg.main-svg")

        def state() -> list[object]:
            return page.evaluate(
                "id => document.getElementById(id).data.map(t => [t.visible, Array.from(t.y)])", div_id
            )

        assert state() == [[True, [0, 0]], [False, [0, 0]]]
        _move_slider(page, div_id, 2, 3)
        page.wait_for_function("id => document.getElementById(id).data[0].y[0] === 2", arg=div_id)
        assert state() == [[True, [2, 2]], [False, [-2, -2]]]
        page.locator(f"#{div_id} .updatemenu-button").nth(1).click()
        page.wait_for_function("id => document.getElementById(id).data[1].visible === true", arg=div_id)
        assert state() == [[False, [2, 2]], [True, [-2, -2]]]
        _move_slider(page, div_id, 1, 3)
        page.wait_for_function("id => document.getElementById(id).data[0].y[0] === 1", arg=div_id)
        assert state() == [[False, [1, 1]], [True, [-1, -1]]]
        assert page.locator(f"#{div_id} .scatterlayer .trace").count() == 1  # only the shown view is drawn
    finally:
        context.close()
