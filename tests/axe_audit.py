r"""axe-core's audit of a page, as the browser tests run it: every rule, with the colour rules read
on one element of each *kind of text* (the cover set), not on every element.

axe's colour rules (``color-contrast``, ``link-in-text-block``) cost about 2.7 ms of CPU per text
element here, most of an audit: 3,465 elements, 9.3 s, on the API reference's figure page. Their
verdict on an element is a function of what it is drawn with and what it is drawn on:

* its own text styles (colour, size, weight, opacity, shadow, decoration, visibility) and, for a
  link, its parent's colour, weight and decoration;
* the paint behind it: every ancestor whose background, opacity, blending, stacking or transform
  is not the default (its tag and those values, from the page's root down);
* whether it is SVG (plotly.js's text: axe cannot tell what is behind it) or hidden from
  assistive technology.

Elements alike in all of that are one kind. The cover set is the first, middle and last element of
each kind; the colour rules run on it alone, in the same axe run as every other rule. axe leaves a
text *incomplete* when it cannot tell its background (another element overlaps it, a scroll box
hides part of it): a kind whose three representatives all come back incomplete is audited again
on all its other elements (its SVG kinds aside: axe decides none of them). That a kind decides as
each of its elements does is not assumed: tests/test_browser_dark.py's
``test_the_colour_audit_of_kinds_decides_as_the_whole_page_does`` runs the whole audit on a
chapter page, light and dark, and finds one contrast ratio, foreground and background per kind,
and every element axe judged in a kind.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
# axe's defaults plus the (experimental) rule that the header buttons once failed
# preload: false: axe's own CSSOM preload fetches each @import relative to the document, not to
# the stylesheet (theme.css's "../basic.css" became /basic.css, a 404 that only axe asked for).
AXE_OPTIONS = {"rules": {"label-content-name-mismatch": {"enabled": True}}, "preload": False}
# The rules whose verdict depends on colours (axe's tag cat.color, less the AAA rule the audit
# leaves off).
AXE_COLOUR_RULES = ["color-contrast", "link-in-text-block"]

# The kinds of text on the page: key -> its elements, in document order (see the module's docstring).
KINDS_JS = r"""() => {
  const OWN = ['color', 'font-size', 'font-weight', 'opacity', 'text-shadow', 'text-decoration-line',
    'text-decoration-style', 'text-decoration-color', 'border-bottom-style', 'border-bottom-width',
    'border-bottom-color', '-webkit-text-fill-color', '-webkit-text-stroke-width', 'visibility'];
  const PARENT = ['color', 'font-weight', 'text-decoration-line'];
  const PAINT = {'background-color': 'rgba(0, 0, 0, 0)', 'background-image': 'none', opacity: '1', filter: 'none',
    'mix-blend-mode': 'normal', position: 'static', 'z-index': 'auto', transform: 'none', isolation: 'auto',
    'backdrop-filter': 'none', 'clip-path': 'none'};
  const paints = new Map();
  const paint = (e) => {  // the ancestors (and e) that paint or stack anything, from the root down
    if (!e || e.nodeType !== 1) return '';
    if (paints.has(e)) return paints.get(e);
    const s = getComputedStyle(e);
    const values = Object.keys(PAINT).map(p => s.getPropertyValue(p));
    const own = values.some((v, i) => v !== Object.values(PAINT)[i]) ? `|${e.tagName}:${values.join(';')}` : '';
    const chain = paint(e.parentElement) + own;
    paints.set(e, chain);
    return chain;
  };
  const kinds = new Map();
  for (const e of document.body.querySelectorAll('*')) {
    const text = e.matches('input, select, textarea') ||
      [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!text && !e.matches('a[href], [role=link]')) continue;
    const s = getComputedStyle(e), p = getComputedStyle(e.parentElement || e);
    const key = JSON.stringify([
      e.checkVisibility(), e.matches('a[href], [role=link]'), e instanceof SVGElement,
      !!e.closest('[aria-hidden="true"], [inert]'), OWN.map(k => s.getPropertyValue(k)),
      PARENT.map(k => p.getPropertyValue(k)), paint(e),
    ]);
    if (!kinds.has(key)) kinds.set(key, []);
    kinds.get(key).push(e);
  }
  return kinds;
}"""

# One audit: every rule in ``options`` on the whole page, the colour rules on the cover set (then
# on the rest of each kind none of whose representatives axe could decide). Violations as
# {id, impact, nodes: [{html}]}; ``checked``: how many elements the colour rules read.
AUDIT_JS = r"""async ({options, colourRules}) => {
  const kinds = (%KINDS%)();
  const MARK = 'data-posviz-axe';
  axe.configure({rules: [
    {id: 'color-contrast', selector: `[${MARK}]`},
    {id: 'link-in-text-block', selector: `a[href][${MARK}], [role=link][${MARK}]`},
  ]});
  const run = async (elements, opts) => {
    elements.forEach(e => e.setAttribute(MARK, ''));
    try {
      return await axe.run(document, {...opts, resultTypes: ['violations', 'incomplete'], elementRef: true});
    } finally {
      elements.forEach(e => e.removeAttribute(MARK));
    }
  };
  const plain = (rules) => rules.map(r => ({id: r.id, impact: r.impact,
    nodes: r.nodes.map(n => ({html: n.html.replace(` ${MARK}=""`, '')}))}));
  const groups = [...kinds.values()];
  const cover = groups.map(g => [...new Set([g[0], g[g.length >> 1], g[g.length - 1]])]);
  const first = await run(cover.flat(), options);
  const violations = plain(first.violations);
  // the kinds whose every representative axe left undecided (SVG text aside: axe decides none)
  const undecided = new Set(first.incomplete.filter(r => colourRules.includes(r.id))
    .flatMap(r => r.nodes.map(n => n.element)));
  const again = groups.flatMap((g, k) => cover[k].every(e => undecided.has(e)) && !(g[0] instanceof SVGElement)
    ? g.filter(e => !cover[k].includes(e)) : []);
  if (again.length) {
    const second = await run(again, {preload: false, runOnly: {type: 'rule', values: colourRules}});
    violations.push(...plain(second.violations));
  }
  return {violations, kinds: groups.length, checked: cover.flat().length + again.length};
}""".replace("%KINDS%", KINDS_JS)


def load(page: object) -> None:
    """axe-core in ``page`` (once)."""
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.add_script_tag(content=AXE.read_text(encoding="utf-8"))


def audit(page: object, *, colours_only: bool = False, colours: bool = True) -> list[str]:
    """axe-core's serious and critical violations on ``page`` as it is now: every rule, the colour
    rules on the cover set (module docstring). ``colours_only``: only the colour rules
    (:data:`AXE_COLOUR_RULES`), for a page already audited whole whose theme then changed
    (nothing but colours changes with it); ``colours=False``: every rule but those, for a Chinese
    page whose English twin's audit read its colours."""
    load(page)
    if not colours:
        off = {rule: {"enabled": False} for rule in AXE_COLOUR_RULES}
        options = {**AXE_OPTIONS, "rules": {**AXE_OPTIONS["rules"], **off}, "resultTypes": ["violations"]}
        violations = page.evaluate("options => axe.run(document, options).then(r => r.violations)", options)
    else:
        options = AXE_OPTIONS
        if colours_only:
            options = {"preload": False, "runOnly": {"type": "rule", "values": AXE_COLOUR_RULES}}
        found = page.evaluate(AUDIT_JS, {"options": options, "colourRules": AXE_COLOUR_RULES})
        violations = found["violations"]
    return [
        f"{v['id']} ({v['impact']}): {[n['html'][:120] for n in v['nodes'][:3]]}"
        for v in violations
        if v["impact"] in ("serious", "critical")
    ]
