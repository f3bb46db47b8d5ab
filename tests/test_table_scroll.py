"""posviz.sphinxext's page script on a phone: a table that scrolls sideways says so, and a figure
fits its frame.

Bare pages (the book's page.js and page.css, or figures.js and plotly.js, with the theme's rules
that matter here), so these run without a built book; where the book is built, its vision chapter
is checked too. Headless Chromium (``browser``, tests/conftest.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser_visit import DESKTOP, PHONE  # the browser tests' two screens

ROOT = Path(__file__).resolve().parents[1]
STATIC = ROOT / "posviz" / "sphinxext" / "static"
SITE = ROOT / "_build" / "html"
VIEWPORT = '<meta name="viewport" content="width=device-width, initial-scale=1">'
THEME = ".pst-scrollable-table-container { overflow-x: auto; } body { margin: 0 16px; font: 16px sans-serif; }"


def _table(columns: int, word: str) -> str:
    head = "".join(f"<th>{word} {k}</th>" for k in range(columns))
    row = "".join(f"<td style='white-space: nowrap'>{word} {k} ± 0.01</td>" for k in range(columns))
    table = f"<table class='table'><thead><tr>{head}</tr></thead><tbody><tr>{row}</tr></tbody></table>"
    return f'<div class="pst-scrollable-table-container">{table}</div>'


def _tables_page(lang: str = "en") -> str:
    css = (STATIC / "page.css").read_text(encoding="utf-8")
    js = (STATIC / "page.js").read_text(encoding="utf-8")
    wide = _table(9, "accuracy")  # about 1000 px: wider than a phone, narrower than a desktop column
    narrow = _table(2, "m")
    widest = _table(24, "accuracy")  # wider than a desktop column too
    return (
        f'<html lang="{lang}"><head>{VIEWPORT}<style>{THEME}</style><style>{css}</style></head><body>'
        f'<p>before</p><div id="wide">{wide}</div><p>between</p><div id="narrow">{narrow}</div>'
        f'<p>after</p><div id="widest">{widest}</div><script>{js}</script></body></html>'
    )


STATE_JS = """id => {
    const box = document.querySelector('#' + id + ' .pst-scrollable-table-container');
    const hint = box.previousElementSibling && box.previousElementSibling.classList.contains('posviz-scroll-hint')
        ? box.previousElementSibling : null;
    const r = hint ? hint.getBoundingClientRect() : null;
    return {
        overflows: box.scrollWidth > box.clientWidth + 1,
        hint: hint ? hint.textContent : null,
        hintVisible: !!r && r.width > 0 && r.height > 0 && getComputedStyle(hint).visibility === 'visible',
        hintHidden: hint ? hint.getAttribute('aria-hidden') : null,
        tabindex: box.getAttribute('tabindex'),
        role: box.getAttribute('role'),
        label: box.getAttribute('aria-label'),
        mask: getComputedStyle(box).maskImage || getComputedStyle(box).webkitMaskImage,
        classes: [...box.classList],
    };
}"""


def _open(browser: object, html: str, viewport: dict[str, int]) -> tuple[object, object]:
    phone = viewport["width"] < 600  # a desktop has a mouse (a touch screen shows the hint: no scrollbar there)
    context = browser.new_context(viewport=viewport, is_mobile=phone, has_touch=phone)
    page = context.new_page()
    page.set_content(html)
    return context, page


def test_an_overflowing_table_shows_a_hint_and_a_fade_on_a_phone(browser: object) -> None:
    context, page = _open(browser, _tables_page(), PHONE)
    try:
        wide = page.evaluate(STATE_JS, "wide")
        assert wide["overflows"]
        assert wide["hint"] == "Scroll sideways \u2192" and wide["hintVisible"]
        assert wide["hintHidden"] == "true"  # decorative: the region's name says it to a screen reader
        assert (wide["tabindex"], wide["role"], wide["label"]) == ("0", "region", "Table, scrolls sideways")
        assert "linear-gradient" in wide["mask"] and "posviz-more-right" in wide["classes"]
        assert "posviz-more-left" not in wide["classes"]
        # scrolled to the end: the fade moves to the left edge
        page.evaluate(
            "() => { const b = document.querySelector('#wide .pst-scrollable-table-container'); "
            "b.scrollLeft = b.scrollWidth; }"
        )
        page.wait_for_function("() => document.querySelector('#wide .posviz-more-left:not(.posviz-more-right)')")
        narrow = page.evaluate(STATE_JS, "narrow")
        assert not narrow["overflows"]
        assert narrow["hint"] is None and narrow["tabindex"] is None and narrow["role"] is None
        assert narrow["mask"] in ("none", "", None)
        assert not {"posviz-more-left", "posviz-more-right"} & set(narrow["classes"])
    finally:
        context.close()


def test_the_hint_is_chinese_on_a_chinese_page(browser: object) -> None:
    context, page = _open(browser, _tables_page("zh-CN"), PHONE)
    try:
        wide = page.evaluate(STATE_JS, "wide")
        assert wide["hint"] == "左右滑动 \u2192" and wide["label"] == "表格，可左右滑动"
    finally:
        context.close()


def test_a_table_that_fits_a_wide_screen_gets_nothing(browser: object) -> None:
    """On a desktop the 9-column table fits: no hint, no fade; a phone-sized window that widens
    drops its hint again. A table wider than a desktop column gets its fade there, and its hint
    takes no room: nothing on the page moves when the script runs."""
    context, page = _open(browser, _tables_page(), PHONE)
    try:
        assert page.evaluate(STATE_JS, "wide")["hint"]
        page.set_viewport_size(DESKTOP)
        page.wait_for_function("() => !document.querySelector('#wide .posviz-scroll-hint')", timeout=5000)
        wide = page.evaluate(STATE_JS, "wide")
        assert not wide["overflows"] and wide["tabindex"] is None and wide["mask"] in ("none", "", None)
    finally:
        context.close()
    context, page = _open(browser, _tables_page(), DESKTOP)
    try:
        widest = page.evaluate(STATE_JS, "widest")
        assert widest["overflows"] and widest["hint"] and not widest["hintVisible"]  # in the page, without a box
        assert "linear-gradient" in widest["mask"] and widest["tabindex"] == "0"
        tops = "() => ['wide', 'narrow', 'widest'].map(id => document.getElementById(id).getBoundingClientRect().top)"
        top = page.evaluate(tops)
        html = _tables_page().replace(f"<script>{(STATIC / 'page.js').read_text(encoding='utf-8')}</script>", "")
        page.set_content(html)  # the same page without the script: every table where it was
        assert page.evaluate(tops) == top
    finally:
        context.close()


def _figure_page() -> str:
    """One posviz figure in the book's markup, its frame padded 8 px a side as the theme pads it on a phone."""
    import plotly.graph_objects as go

    from posviz.sphinxext import plotly_html
    from posviz.sphinxext._assets import PLOTLY_JS_DEFAULT, _figures_js

    fig = go.Figure(go.Scatter(x=list(range(0, 101, 10)), y=list(range(11))))
    fig.update_layout(title_text="ticks up to 100", xaxis_title_text="x", width=700, height=400)
    body = plotly_html(json.loads(fig.to_json()))
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
        f"<script>{_figures_js()}</script></head><body>{body}</body></html>"
    )


FIT_JS = """() => [...document.querySelectorAll('.plotly-graph-div')].map(gd => {
    const fig = gd.closest('.posviz-figure'), cs = getComputedStyle(fig);
    const inner = fig.getBoundingClientRect().width - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    const svg = gd.querySelector('.main-svg').getBoundingClientRect();
    const figRight = fig.getBoundingClientRect().right - parseFloat(cs.paddingRight);
    return {plot: gd._fullLayout.width, svg: svg.width, inner, figRight, svgRight: svg.right};
})"""


def test_a_figure_on_a_phone_is_no_wider_than_its_frame(browser: object) -> None:
    """At 390 px the plot takes the figure's content width (the frame's padding left out): it
    was 16 px wider, and the figure's overflow: hidden cut its last x tick."""
    context, page = _open(browser, _figure_page(), PHONE)
    try:
        page.wait_for_selector(".plotly-graph-div[data-posviz-ready]")
        page.wait_for_timeout(200)
        for fit in page.evaluate(FIT_JS):
            assert fit["plot"] <= fit["inner"] + 0.5, fit
            assert fit["svgRight"] <= fit["figRight"] + 0.5, fit
            assert fit["plot"] >= fit["inner"] - 2, fit  # and it still takes the width it has
    finally:
        context.close()


@pytest.mark.skipif(not (SITE / "book" / "vision.html").exists(), reason="the book is not built (make book)")
@pytest.mark.parametrize("page_path", ["book/vision.html", "zh/book/vision.html"])
def test_the_vision_chapter_on_a_phone(page_path: str, browser: object) -> None:
    """The built chapter at 390 px: every table that overflows shows its hint, every figure fits its
    frame; at 1280 px no hint takes room (the tables that overflow a desktop column have their fade)."""
    if not (SITE / page_path).exists():
        pytest.skip(f"{page_path} is not built")
    url = (SITE / page_path).as_uri()
    for viewport in (PHONE, DESKTOP):
        context = browser.new_context(viewport=viewport, is_mobile=viewport is PHONE, has_touch=viewport is PHONE)
        try:
            page = context.new_page()
            page.goto(url, wait_until="load")
            page.wait_for_function(
                "() => [...document.querySelectorAll('.plotly-graph-div')].every(d => d.dataset.posvizReady)"
            )
            page.wait_for_timeout(300)
            tables = page.evaluate(
                """() => [...document.querySelectorAll('.pst-scrollable-table-container')].map(b => ({
                    overflows: b.scrollWidth > b.clientWidth + 1,
                    hint: !!(b.previousElementSibling
                             && b.previousElementSibling.classList.contains('posviz-scroll-hint')),
                    hintShown: !!(b.previousElementSibling
                                  && b.previousElementSibling.classList.contains('posviz-scroll-hint')
                                  && b.previousElementSibling.getBoundingClientRect().height > 0),
                }))"""
            )
            assert tables and all(t["overflows"] == t["hint"] for t in tables), tables
            if viewport is DESKTOP:  # some overflow a desktop column too: their hint takes no room there
                assert not any(t["hintShown"] for t in tables), tables
            else:
                assert all(t["hintShown"] == t["hint"] for t in tables), tables
                assert any(t["hint"] for t in tables), "no table of the chapter overflows a phone: nothing tested"
                for fit in page.evaluate(FIT_JS):
                    assert fit["plot"] <= fit["inner"] + 0.5, fit
        finally:
            context.close()
