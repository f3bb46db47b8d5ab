"""The built book in dark mode, in headless Chromium: a page opened dark (the theme's switch left it
so) is dark from the start; and the axe audit that every browser test runs (tests/axe_audit.py),
held to what it claims: it finds violations in each of its modes, and its colour audit of kinds of
text decides as the whole page's audit does, light and dark.

Needs ``make book`` first, ``npm ci`` (axe-core) and Debian's Chromium at /usr/bin/chromium.
"""

from __future__ import annotations

import re
from pathlib import Path

import axe_audit
import pytest
from browser_pages import (
    DARK_FROM_THE_START,
    DARK_PAPER,
    SWITCHED_TO_DARK,
    dark_checks,
    figure_count,
    needs_browser_and_site,
    source,
)
from browser_visit import Visit

pytestmark = pytest.mark.browser
needs_browser_and_site()


@pytest.mark.parametrize("page_path", DARK_FROM_THE_START)
def test_dark_mode(page_path: str, browser: object, base_url: str, shots: Path | None) -> None:
    """A page opened in dark mode (the theme's switch left it so): dark from the start."""
    visit = Visit(browser, f"{base_url}/{page_path}", dark=True)
    try:
        visit.figures_ready(figure_count(page_path))
        page = visit.page
        page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
        short = dark_checks(visit, page_path, shots, switched=False)
        assert not short, "; ".join(short)[:3000]
    finally:
        visit.close()


def test_the_audit_finds_violations_in_each_of_its_modes(browser: object) -> None:
    """axe as Visit.axe runs it (violations only): whole, without the colour rules (a Chinese
    twin), and the colour rules only (dark mode); a faint text that is no kind's first element
    is found, and so is one whose kind's representatives are all overlapped (axe cannot judge
    them), by the audit of the rest of that kind."""
    context = browser.new_context()
    try:
        visit = Visit.__new__(Visit)
        visit.page = context.new_page()
        faint = '<p style="color:#ccc;background:#fff">faint</p>'
        plain = "".join(f"<p>text {k}</p>" for k in range(5))
        visit.page.set_content(f'<html lang="en"><body><main>{plain}{faint}<img src="x.png"></main></body></html>')
        found = {mode: {v.split(" ")[0] for v in visit.axe(**kw)} for mode, kw in
                 {"whole": {}, "twin": {"colours": False}, "dark": {"colours_only": True}}.items()}  # fmt: skip
        # five faint paragraphs of one kind; the first, middle and last under an overlay
        cover = '<div style="position:absolute;left:0;top:{}px;width:300px;height:30px;background:#fff"></div>'
        rows = "".join(
            f'<p class="f" style="position:relative;margin:0;height:40px">faint {k}</p>'
            + (cover.format(40 * k + 5) if k in (0, 2, 4) else "")
            for k in range(5)
        )
        css = "<style>body{margin:0} .f{color:#ccc}</style>"
        visit.page.set_content(f'<html lang="en"><head>{css}</head><body><main>{rows}</main></body></html>')
        axe_audit.load(visit.page)
        hidden = visit.page.evaluate(axe_audit.AUDIT_JS, {"options": axe_audit.AXE_OPTIONS,
                                                          "colourRules": axe_audit.AXE_COLOUR_RULES})  # fmt: skip
    finally:
        context.close()
    assert {"color-contrast", "image-alt"} <= found["whole"]
    assert "image-alt" in found["twin"] and "color-contrast" not in found["twin"]
    assert found["dark"] == {"color-contrast"}
    contrast = [v for v in hidden["violations"] if v["id"] == "color-contrast"]
    assert hidden["kinds"] == 1 and hidden["checked"] == 5, hidden  # three representatives, then the other two
    assert [n["html"] for n in contrast[0]["nodes"]] == [
        '<p class="f" style="position:relative;margin:0;height:40px">faint 1</p>',
        '<p class="f" style="position:relative;margin:0;height:40px">faint 3</p>',
    ], hidden


# The page on which the audit of kinds is held to the whole audit: the English page with figures
# that has the most kinds of element in its HTML (distinct tag and class pairs).
KINDS_PAGE = max(
    (p for p in SWITCHED_TO_DARK if figure_count(p)),
    key=lambda p: len(set(re.findall(r'<([a-z][a-z0-9-]*)\b[^>]*?class="([^"]*)"', source(p)))),
)

_WHOLE_COLOUR_AUDIT_JS = r"""async (colourRules) => {
  axe.reset();  // the rules' own selectors: every element
  const kinds = (%KINDS%)();
  const kindOf = new Map();
  [...kinds.values()].forEach((elements, k) => elements.forEach(e => kindOf.set(e, k)));
  const r = await axe.run(document, {preload: false, runOnly: {type: 'rule', values: colourRules}, elementRef: true});
  const verdicts = {}, outside = [];
  let judged = 0;
  for (const type of ['violations', 'passes', 'incomplete']) for (const rule of r[type]) for (const n of rule.nodes) {
    if (!kindOf.has(n.element)) { outside.push(`${rule.id}: ${n.html.slice(0, 100)}`); continue; }
    if (type === 'incomplete') continue;
    judged++;
    const d = (n.any[0] || n.all[0] || n.none[0] || {}).data || {};
    const key = `${rule.id}, kind ${kindOf.get(n.element)}`;
    (verdicts[key] = verdicts[key] || new Set()).add(JSON.stringify([type, d.contrastRatio, d.fgColor, d.bgColor]));
  }
  const split = Object.entries(verdicts).filter(([, v]) => v.size > 1).map(([k, v]) => `${k}: ${[...v]}`);
  return {kinds: kinds.size, judged, outside, split};
}""".replace("%KINDS%", axe_audit.KINDS_JS)


def test_the_colour_audit_of_kinds_decides_as_the_whole_page_does(browser: object, base_url: str) -> None:
    """The colour rules on every element of a chapter page, light and dark: every element they
    read is of a kind (tests/axe_audit.py), and the elements of one kind that axe decides get one
    verdict, one contrast ratio, one foreground and one background, so one of them speaks for all."""
    visit = Visit(browser, f"{base_url}/{KINDS_PAGE}")
    try:
        visit.figures_ready(figure_count(KINDS_PAGE))
        axe_audit.load(visit.page)
        light = visit.page.evaluate(_WHOLE_COLOUR_AUDIT_JS, axe_audit.AXE_COLOUR_RULES)
        visit.page.evaluate("() => { document.documentElement.dataset.theme = 'dark'; }")
        visit.page.wait_for_function(
            "paper => [...document.querySelectorAll('.js-plotly-plot')]"
            ".every(gd => gd._fullLayout.paper_bgcolor === paper)",
            arg=DARK_PAPER,
        )
        dark = visit.page.evaluate(_WHOLE_COLOUR_AUDIT_JS, axe_audit.AXE_COLOUR_RULES)
    finally:
        visit.close()
    for theme, found in (("light", light), ("dark", dark)):
        assert found["judged"] > 10 * found["kinds"] / 4, f"{theme}: {found['judged']} elements judged"
        assert not found["outside"], f"{theme}: read by the colour rules, in no kind: {found['outside'][:5]}"
        assert not found["split"], f"{theme}: a kind with more than one verdict: {found['split'][:5]}"
