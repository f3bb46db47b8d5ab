"""The built book's pages as the browser tests see them (test_browser*.py): which pages there are,
which have math, figures, self-check questions, a Chinese twin; and the dark-mode checks that the
page test and the dark-mode test both run."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from browser_visit import Visit
from conftest import screenshot

ROOT = Path(__file__).resolve().parents[1]
# POSVIZ_SITE lets an author check a partial build (e.g. one chapter) elsewhere.
SITE = Path(os.environ.get("POSVIZ_SITE", ROOT / "_build" / "html"))
CHROMIUM = "/usr/bin/chromium"


def needs_browser_and_site() -> object:
    """Skip the calling test module, as it is imported, where Playwright, Debian's Chromium or the
    built book is missing (with the reason); else Playwright's sync API."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is absent (apt-get install chromium)", allow_module_level=True)
    if not (SITE / "index.html").exists():
        pytest.skip(f"{SITE} is not built: run `make book` first", allow_module_level=True)
    return sync_api


PAGES = sorted(
    path.relative_to(SITE).as_posix()
    for path in SITE.rglob("*.html")
    if not any(part.startswith("_") for part in path.relative_to(SITE).parts)
)
# The API reference: an overview page and its parts (book/api-*.md), docstrings only, no figures.
# It was one page until its 1.91 MB of HTML (53,600 elements) took an axe audit 76 s and a
# screenshot 19 s here; axe's time grows faster than the page (19,600 elements: 17 s).
API_PAGES = [p for p in PAGES if re.fullmatch(r"(zh/)?book/api(-[a-z]+)?\.html", p)]
# A Chinese page is its English twin's elements, classes and colours with other words
# (test_built_pages.py::test_a_chinese_page_has_its_english_twins_kinds_of_element): the twin's
# audit has read those colours, in light and in dark, so the Chinese page's audit runs every axe
# rule but the colour rules, the slowest (color-contrast: 9 of 14 s on the extrapolation chapter).
COLOURS_READ_ON_THE_TWIN = [p for p in PAGES if p.startswith("zh/") and p.removeprefix("zh/") in PAGES]



def source(page: str) -> str:
    return (SITE / page).read_text(encoding="utf-8")


def has_math(page: str) -> bool:
    return 'class="math notranslate' in source(page)


def figure_count(page: str) -> int:
    return source(page).count('class="plotly-graph-div"')



# The English chapters' self-check questions (posviz.selfcheck) are answered in the page test's
# visit; tests/test_selfcheck.py counts them.
SELF_CHECK_PAGES = [p for p in PAGES if not p.startswith("zh/") and '<fieldset class="self-check"' in source(p)]
FIGURE_PAGES = [p for p in PAGES if figure_count(p)]

# Dark mode is the theme's CSS and the figures' colours, the same in both editions and on every
# page without a figure: it is checked on the English pages with figures, the preface and the API
# reference (the page with the most kinds of element). test_page switches each page with figures,
# and each page of the API reference, to dark as the theme's switch does, in the visit it already
# made (no second load: issue #25), and runs every dark check there (the colour rules: the light
# audit read the rest); test_dark_mode opens the preface and one page with figures in dark mode
# from the start, as a returning reader who chose dark sees them (figures drawn dark at once, not
# switched), and audits them with every rule: what dark mode can change besides colours is what
# the theme shows in it (its dark logo, the same header on every page).
ENGLISH_PAGES = [
    p for p in PAGES if not p.startswith("zh/") and (figure_count(p) or p == "book/intro.html" or p in API_PAGES)
]
SWITCHED_TO_DARK = [p for p in ENGLISH_PAGES if figure_count(p) or p in API_PAGES]
ZH_PAGES = [p for p in PAGES if p.startswith("zh/book/")]
DARK_FROM_THE_START = [
    "book/intro.html",
    *sorted((p for p in SWITCHED_TO_DARK if figure_count(p)), key=lambda p: -source(p).count('"type":"heatmap"'))[:1],
]
assert set(ENGLISH_PAGES) <= set(SWITCHED_TO_DARK) | set(DARK_FROM_THE_START), "every English page is seen in dark"
DARK_PAPER = "#14181e"  # figures.js's dark paper colour


COLOURS_JS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => ({
    id: gd.id,
    theme: document.documentElement.dataset.theme,
    paper: gd._fullLayout.paper_bgcolor,
    font: gd._fullLayout.font.color,
}))"""


def luminance(colour: str) -> float:
    """Relative luminance (WCAG) of an ``rgb()``/``rgba()``/``#rrggbb`` colour."""
    colour = {"white": "#ffffff", "black": "#000000"}.get(colour.strip().lower(), colour)
    if colour.startswith("#") and len(colour) == 4:
        colour = "#" + "".join(c * 2 for c in colour[1:])
    if colour.startswith("#"):
        channels = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    else:
        channels = [float(c) for c in re.findall(r"[\d.]+", colour)[:3]]
    linear = [(c / 255) / 12.92 if c / 255 <= 0.03928 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)



def dark_checks(visit: Visit, page_path: str, shots: Path | None, *, switched: bool) -> list[str]:
    """The theme's dark mode on the page as it is now: no contrast (or other) axe violation;
    figures dark with light text, and back to light when the reader switches. ``switched``: the
    page opened light, and is switched to dark here as the theme's switch does, and only axe's
    colour rules run (test_page audited the page whole, light)."""
    from playwright.sync_api import TimeoutError as Timeout  # here: a module without playwright skips

    page = visit.page
    figures = figure_count(page_path)
    if switched:
        page.evaluate(
            "() => { localStorage.setItem('mode', 'dark'); localStorage.setItem('theme', 'dark');"
            " document.documentElement.dataset.mode = 'dark'; document.documentElement.dataset.theme = 'dark'; }"
        )
    page.wait_for_function("() => document.documentElement.dataset.theme === 'dark'")
    short = []
    if figures:
        try:
            page.wait_for_function(
                "paper => [...document.querySelectorAll('.js-plotly-plot')]"
                ".every(gd => gd._fullLayout.paper_bgcolor === paper)",
                arg=DARK_PAPER,
                timeout=30_000,
            )
        except Timeout:
            short.append("figures did not turn dark")
    # the theme's switch starts CSS transitions (the search button's colours, 150 ms): axe read one
    # half-way once, a busy machine's frames late, and found the light text on a dark button
    page.wait_for_function(
        "() => !document.getAnimations().some(a => a instanceof CSSTransition && a.playState === 'running')"
    )
    if figures:
        name = re.sub(r"[/\\]", "__", page_path)
        screenshot(page, shots, f"{name}{'' if switched else '.opened'}.dark.png", full_page=True)
    for figure in page.evaluate(COLOURS_JS):
        if luminance(figure["paper"]) >= 0.05 or contrast(figure["paper"], figure["font"]) < 7:
            short.append(f"dark: {figure}")
    violations = visit.axe(colours_only=switched)  # switched: the light audit saw the rest
    if violations:
        short.append(f"axe in dark mode: {violations}")
    if figures:
        page.evaluate("() => { document.documentElement.dataset.theme = 'light'; }")  # what the switch does
        try:
            page.wait_for_function(
                "paper => [...document.querySelectorAll('.js-plotly-plot')]"
                ".every(gd => gd._fullLayout.paper_bgcolor !== paper)",
                arg=DARK_PAPER,
                timeout=30_000,
            )
        except Timeout:
            short.append("figures did not switch back to light")
        for figure in page.evaluate(COLOURS_JS):
            if not (luminance(figure["paper"]) > 0.9 and contrast(figure["paper"], figure["font"]) >= 7):
                short.append(f"light again: {figure}")
    if visit.unexpected_errors() or visit.failed:
        short.append(f"errors in dark mode: {visit.unexpected_errors()} {visit.failed}")
    return short

