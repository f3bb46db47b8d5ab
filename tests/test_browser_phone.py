"""The built book on a phone's screen (390 x 844, touch) in headless Chromium: every figure fits,
its plot keeps most of the width, its slider answers a finger; no page scrolls sideways.

Needs ``make book`` first and Debian's Chromium at /usr/bin/chromium. Screenshots for review, when
asked for (``make shots``): every page with figures at a phone's width.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browser_pages import API_PAGES, FIGURE_PAGES, PAGES, figure_count, needs_browser_and_site
from browser_visit import PHONE, Tab, Visit
from conftest import screenshot

MIN_PLOT_SHARE = 0.6  # of the figure's width, for every panel's plot area

pytestmark = pytest.mark.browser
sync_api = needs_browser_and_site()

# Each panel's plot area as a share of its figure's width, and whether anything sticks out.
_PHONE_JS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => {
    const fl = gd._fullLayout, width = fl.width;
    const axes = Object.keys(fl).filter(k => /^xaxis\\d*$/.test(k)).map(k => fl[k]).filter(a => a._length > 0);
    const box = gd.getBoundingClientRect();
    const legend = gd.querySelector('.legend');
    const lb = legend ? legend.getBoundingClientRect() : null;
    return {
        id: gd.id,
        share: Math.min(...axes.map(a => a._length / width)),
        right: Math.max(box.right, ...[...gd.querySelectorAll('.main-svg')].map(s => s.getBoundingClientRect().right)),
        legendInside: !lb || (lb.left >= box.left - 1 && lb.right <= box.right + 1),
        // the title and axis titles within the figure's width; the legend clear of all of them
        cut: [...gd.querySelectorAll('.gtitle, .g-xtitle text, .g-x2title text, .g-x3title text')]
            .map(t => [t.textContent, t.getBoundingClientRect()])
            .filter(([, r]) => r.width && (r.left < box.left - 1 || r.right > box.right + 1)).map(([t]) => t),
        legendOver: !lb ? [] : [...gd.querySelectorAll('.gtitle, [class^="g-"][class$="title"] text')]
            .map(t => [t.textContent, t.getBoundingClientRect()])
            .filter(([, r]) => r.width && r.left < lb.right && lb.left < r.right && r.top < lb.bottom - 2
                && lb.top + 2 < r.bottom).map(([t]) => t)
            .concat([...gd.querySelectorAll('.updatemenu-container > g')].map(m => m.getBoundingClientRect())
                .filter(r => r.width && r.left < lb.right && lb.left < r.right && r.top < lb.bottom - 2
                    && lb.top + 2 < r.bottom).map(() => 'buttons')),
        // a slider's label clear of the x axis titles above it, its step labels within the figure
        sliderOver: [...gd.querySelectorAll('.slider-container')].flatMap(s => {
            const sb = s.getBoundingClientRect();
            return [...gd.querySelectorAll('[class^="g-x"][class$="title"] text')]
                .map(t => [t.textContent, t.getBoundingClientRect()])
                .filter(([, r]) => r.width && r.left < sb.right && sb.left < r.right && r.bottom > sb.top + 2
                    && r.top < sb.top).map(([t]) => t);
        }),
        buttonsCut: [...gd.querySelectorAll('.updatemenu-button')].map(b => [b.textContent, b.getBoundingClientRect()])
            .filter(([, r]) => r.width && r.right > box.right + 1).map(([t]) => t),
        stepsCut: [...gd.querySelectorAll('.slider-container .slider-labels text, .slider-labels text')]
            .map(t => [t.textContent, t.getBoundingClientRect()])
            .filter(([, r]) => r.width && r.right > box.right + 1).map(([t]) => t),
    };
})"""


MIN_TOUCH = 24  # px: WCAG 2.2's minimum target size (2.5.8), for the height of a slider's touch area
_SLIDERS_JS = """() => [...document.querySelectorAll('.js-plotly-plot')].filter(gd => (gd.layout.sliders || []).length)
    .map(gd => {
        const box = gd.querySelector('.slider-rail-touch-rect').getBoundingClientRect();
        return {id: gd.id, width: box.width, height: box.height, active: gd.layout.sliders[0].active || 0,
                steps: gd.layout.sliders[0].steps.length, plot: gd.getBoundingClientRect().width};
    })"""


def _touch_sliders(page: object) -> list[str]:
    """Every slider has a touch area at least MIN_TOUCH high over most of the figure's width, and
    a finger's tap on its far end moves it there."""
    short = []
    for slider in page.evaluate(_SLIDERS_JS):
        if slider["height"] < MIN_TOUCH or slider["width"] < 0.5 * slider["plot"]:
            short.append(f"{slider['id']}: slider touch area {slider['width']:.0f} x {slider['height']:.0f} px")
        if slider["steps"] < 2:
            continue
        target = 0 if slider["active"] == slider["steps"] - 1 else slider["steps"] - 1
        plot = page.locator(f"#{slider['id']}")
        rail = plot.locator(".slider-container .slider-rail-rect").first
        rail.scroll_into_view_if_needed()  # on screen: a tall stacked figure may hide it below
        tick, box = plot.locator(".slider-container .slider-tick-rect").nth(target).bounding_box(), rail.bounding_box()
        page.touchscreen.tap(tick["x"] + tick["width"] / 2, box["y"] + box["height"] / 2)
        try:
            page.wait_for_function(
                "([id, k]) => document.getElementById(id).layout.sliders[0].active === k",
                arg=[slider["id"], target],
                timeout=5000,
            )
        except sync_api.TimeoutError:
            short.append(f"{slider['id']}: a tap on step {target} did not move the slider")
    return short


@pytest.mark.parametrize("page_path", FIGURE_PAGES)
def test_phone(page_path: str, browser: object, base_url: str, shots: Path | None, tabs: dict[str, Tab]) -> None:
    """At 390 x 844 every figure fits the screen, its plot keeps most of the width, and its
    slider answers a finger."""
    visit = Visit(browser, f"{base_url}/{page_path}", phone=True, tab=tabs["phone"])
    try:
        visit.figures_ready(figure_count(page_path))
        visit.page.wait_for_timeout(300)
        name = re.sub(r"[/\\]", "__", page_path)
        screenshot(visit.page, shots, f"{name}.phone.png", full_page=True)
        figures = visit.page.evaluate(_PHONE_JS)
        assert len(figures) == figure_count(page_path)
        assert not visit.unexpected_errors(), visit.unexpected_errors()
        short = []  # issue #15's phone goals
        for figure in figures:
            if figure["share"] < MIN_PLOT_SHARE:
                short.append(f"{figure['id']}: plot area {figure['share']:.0%} of the width")
            if figure["right"] > PHONE["width"] + 1:
                short.append(f"{figure['id']} sticks out to {figure['right']} px")
            if not figure["legendInside"]:
                short.append(f"{figure['id']}: the legend sticks out")
            if figure["cut"]:
                short.append(f"{figure['id']}: titles wider than the figure: {figure['cut']}")
            if figure["legendOver"]:
                short.append(f"{figure['id']}: the legend covers {figure['legendOver']}")
            if figure["sliderOver"]:
                short.append(f"{figure['id']}: the slider's label covers {figure['sliderOver']}")
            if figure["buttonsCut"]:
                short.append(f"{figure['id']}: buttons cut at the right edge: {figure['buttonsCut']}")
            if figure["stepsCut"]:
                short.append(f"{figure['id']}: slider steps cut at the right edge: {figure['stepsCut']}")
        wide = visit.page.evaluate(
            "() => [...document.querySelectorAll('figure.posviz-figure')]"
            ".filter(f => f.getBoundingClientRect().right > window.innerWidth + 1).length"
        )
        if wide:
            short.append(f"{wide} figures wider than the screen")
        short += _sideways(visit.page)
        short += _touch_sliders(visit.page)
        assert not short, "; ".join(short)
    finally:
        visit.close()


def _sideways(page: object) -> list[str]:
    """What makes a page scroll sideways on a phone (nothing, for a page that fits)."""
    page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
    width, culprits = page.evaluate(
        """() => { const W = document.documentElement.clientWidth, out = [];
        for (const e of document.querySelectorAll('main *')) {
            const r = e.getBoundingClientRect();
            if (r.width && r.right > W + 1 && !e.querySelector('*') && e.closest('main') &&
                !e.parentElement.closest('.highlight, .MathJax[display="true"], table, .js-plotly-plot, pre')
                && ![...function* (n) { for (; n; n = n.parentElement) yield n; }(e.parentElement)]
                    .some(n => /(auto|scroll|hidden|clip)/.test(getComputedStyle(n).overflowX)))
                out.push(e.tagName + ' ' + (e.textContent || '').trim().slice(0, 40));
        }
        return [document.documentElement.scrollWidth - W, out.slice(0, 5)]; }"""
    )
    return [f"the page scrolls sideways by {width} px: {culprits}"] if width > 1 else []


# Pages without figures at a phone's width: nothing scrolls sideways (the API reference's
# signatures and field lists once made it 712 px wide, the general index 620 px). The Chinese API
# pages have the English ones' docstrings and CSS; the redirects have no content.
ZH_API_PAGES = [p for p in API_PAGES if p.startswith("zh/")]
NARROW_PAGES = [p for p in PAGES if not figure_count(p) and p not in ("index.html", "zh/index.html", *ZH_API_PAGES)]


@pytest.mark.parametrize("page_path", NARROW_PAGES)
def test_phone_page_fits_the_screen(page_path: str, browser: object, base_url: str, tabs: dict[str, Tab]) -> None:
    visit = Visit(browser, f"{base_url}/{page_path}", phone=True, tab=tabs["phone"])
    try:
        assert not _sideways(visit.page)
    finally:
        visit.close()
