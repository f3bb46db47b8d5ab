"""posviz.sphinxext's page stylesheet: a heading's or an equation's "#" link, which shows when the
pointer rests on it, is told apart from the text around it by more than its colour (axe's
link-in-text-block). It failed intermittently in dark mode, whenever the pointer happened to rest
on an equation while the page was checked. Headless Chromium (``browser``, tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import serve

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"


@pytest.fixture(scope="module")
def site_url():
    if not (SITE / "book" / "vision.html").exists() or not AXE.exists():
        pytest.skip("needs the built book (make book) and axe-core (npm ci)")
    with serve(SITE) as url:
        yield url


def _violations(page) -> list:
    check = "() => axe.run(document, {runOnly: ['link-in-text-block']}).then(r => r.violations.map(v => v.nodes))"
    return page.evaluate(check)


def test_an_equations_link_under_the_pointer_passes_in_dark_mode(browser, site_url) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{site_url}/book/vision.html", wait_until="load")
    page.evaluate("() => document.documentElement.dataset.theme = 'dark'")
    page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
    equation = page.locator("#equation-vision-rope-offset").first
    equation.scroll_into_view_if_needed()
    equation.hover()
    page.wait_for_timeout(300)
    assert _violations(page) == []
    page.add_style_tag(content="a.headerlink { text-decoration: none !important; }")  # without the rule
    assert _violations(page) != [], "the check no longer sees the link: the test would pass whatever the CSS"
    page.close()
