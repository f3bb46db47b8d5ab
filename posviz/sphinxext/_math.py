"""The book's equations typeset when the book is built, not in the reader's browser.

With ``posviz_math_at_build = True`` (the book's ``_config.yml``), once the HTML pages are written
every equation Sphinx left for MathJax (``<span class="math">\\(...\\)</span>`` and
``<div class="math">\\[...\\]</div>``) is typeset by MathJax 3 itself, run in Node
(``static/tex2chtml.cjs``) with the components the pages loaded before: the same CommonHTML
markup, with the hidden MathML that screen readers read. A page with math then loads one small
stylesheet (the characters the edition uses) and MathJax's web fonts, and none of MathJax's
760 kB of JavaScript. The stylesheet also sizes the math to the surrounding text as MathJax did
(its ``matchFontHeight``: the text's x-height over the TeX font's, which CSS's ``ex`` unit gives).

The TeX stays in the element, first and hidden (``<span class="posviz-tex" hidden>``), as MathJax
found it: a tool that reads the page's equations as text (tests/test_built_pages.py compares the
editions' TeX) reads what it read before; a reader sees and hears only the typeset math.
A TeX error (MathJax's red error box) is a build warning naming the page and the equation.
Without Node or MathJax's Node entry the pages keep loading MathJax (and the build says why).
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

HERE = Path(__file__).parent
CSS_STATIC = "posviz/mathjax/chtml.css"  # under _static/, beside output/chtml/fonts/woff-v2
FONT_URL = "output/chtml/fonts/woff-v2"  # from the stylesheet
X_HEIGHT = 0.442  # MathJax's TeX font: x-height in em (its font's params.x_height)
# MathJax's matchFontHeight, in CSS: the math's em is the surrounding text's x-height / X_HEIGHT
SCALE_CSS = f'mjx-container[jax="CHTML"] {{font-size: {1 / X_HEIGHT:.4f}ex; position: relative;}}\n'
# Said once in the stylesheet (above) or implied by HTML, instead of on each of a page's equations
_REDUNDANT = (' style="position: relative;"', ' xmlns="http://www.w3.org/1998/Math/MathML"')

_MATH = re.compile(
    r'(?P<open><(?P<tag>span|div) class="math notranslate nohighlight"(?: id="[^"]*")?>\n?'
    r'(?P<eqno><span class="eqno">.*?</span>)?)(?P<tex>.*?)(?P<close></(?P=tag)>)',
    re.S,
)
_DELIMITED = re.compile(r"\A\s*(\\\(|\\\[|\$\$)(.*)(\\\)|\\\]|\$\$)\s*\Z", re.S)
_ENVIRONMENT = re.compile(r"\A\s*\\begin\{([^}]+)\}.*\\end\{\1\}\s*\Z", re.S)
_MATHJAX_SCRIPTS = re.compile(
    r'[ \t]*<script>window\.MathJax = .*?</script>\n|[ \t]*<script defer="defer" src="[^"]*mathjax/startup\.js[^"]*">'
    r"</script>\n"
)


_SOURCE = '<span class="posviz-tex" hidden>'  # the TeX, kept first in its element
# a typeset element's contents: the TeX kept, then MathJax's markup (from an earlier run)
_RENDERED = re.compile(re.escape(_SOURCE) + r"(?P<tex>.*?)</span><mjx-container\b.*?</mjx-container>", re.S)


def _tex(raw: str) -> tuple[str, bool] | None:
    """The TeX of one math element's text and whether it is displayed; ``None`` if it is neither
    delimited nor an environment (MathJax would have left it as text too)."""
    text = html.unescape(raw)
    match = _DELIMITED.match(text)
    if match and {match.group(1), match.group(3)} in ({"\\(", "\\)"}, {"\\[", "\\]"}, {"$$"}):
        return match.group(2), match.group(1) != "\\("
    if _ENVIRONMENT.match(text):
        return text.strip(), True
    return None


def _slim(markup: str) -> str:
    """MathJax's markup less what the stylesheet says once (the container's ``position``) and what
    HTML implies (a ``<math>`` element is MathML): some 15 kB on a chapter."""
    for redundant in _REDUNDANT:
        markup = markup.replace(redundant, "")
    return markup


def _pages(outdir: Path) -> list[Path]:
    """This build's pages: not _static's, nor another edition's (tools/i18n.py puts the Chinese
    edition's own build in the English site's zh/ folder)."""
    from ._editions import EDITIONS

    others = {folder for folder in EDITIONS.values() if folder}
    return sorted(
        p
        for p in outdir.rglob("*.html")
        if not any(part.startswith("_") for part in p.relative_to(outdir).parts)
        and p.relative_to(outdir).parts[0] not in others
    )


def _node_entry(app: Sphinx) -> Path | None:
    entry = Path(app.srcdir, app.config.posviz_mathjax_dir, "node-main.js")
    if shutil.which("node") is None or not entry.exists():
        logger.warning(
            "posviz: math is left to MathJax in the browser: %s",
            "node is not on PATH" if shutil.which("node") is None else f"{entry} is missing (npm ci)",
            type="posviz",
            subtype="math",
        )
        return None
    return entry


def typeset(entry: Path, items: list[tuple[str, bool]], font_url: str = FONT_URL) -> dict:
    """MathJax's CommonHTML for ``items`` ((tex, display) pairs): ``{"html", "css", "errors"}``."""
    with tempfile.TemporaryDirectory() as tmp:
        job, out = Path(tmp, "in.json"), Path(tmp, "out.json")
        job.write_text(json.dumps({"fontURL": font_url, "items": items}), encoding="utf-8")
        done = subprocess.run(
            ["node", str(HERE / "static" / "tex2chtml.cjs"), str(entry.parent), str(job), str(out)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            raise RuntimeError(f"MathJax in Node failed: {done.stderr[-2000:]}")
        return json.loads(out.read_text(encoding="utf-8"))


def render_math(app: Sphinx, exception: Exception | None) -> None:
    """Typeset every page's math in place (``build-finished``); see the module docstring."""
    if exception is not None or app.builder.format != "html" or not app.config.posviz_math_at_build:
        return
    outdir = Path(app.outdir)
    pages = {}
    for page in _pages(outdir):
        # a page an incremental build did not rewrite is typeset again from the TeX it kept, so
        # that the one stylesheet covers every page's characters
        text = _RENDERED.sub(lambda m: m.group("tex"), page.read_text(encoding="utf-8"))
        if 'class="math notranslate nohighlight"' in text:
            pages[page] = text
    if not pages:
        return
    entry = _node_entry(app)
    if entry is None:
        return
    items: list[tuple[str, bool]] = []
    where: list[tuple[Path, str]] = []
    for page, text in pages.items():
        for match in _MATH.finditer(text):
            tex = _tex(match.group("tex"))
            if tex is None:
                logger.warning(
                    "posviz: %s: math MathJax would not typeset: %r",
                    page.relative_to(outdir),
                    match.group("tex")[:120],
                    type="posviz",
                    subtype="math",
                )
                continue
            items.append(tex)
            where.append((page, tex[0]))
    result = typeset(entry, items)
    for index in result["errors"]:
        page, tex = where[index]
        logger.warning(
            "posviz: %s: TeX error in %r", page.relative_to(outdir), tex[:200], type="posviz", subtype="math"
        )
    rendered = iter(_slim(markup) for markup in result["html"])
    css = Path(outdir, "_static", CSS_STATIC)
    css.parent.mkdir(parents=True, exist_ok=True)
    css.write_text(SCALE_CSS + result["css"], encoding="utf-8")
    for page, text in pages.items():

        def swap(match: re.Match[str]) -> str:
            if _tex(match.group("tex")) is None:
                return match.group(0)
            source = f'{_SOURCE}{match.group("tex")}</span>'
            return match.group("open") + source + next(rendered) + match.group("close")

        text = _MATH.sub(swap, text)
        up = "../" * (len(page.relative_to(outdir).parts) - 1)
        link = f'<link rel="stylesheet" type="text/css" href="{up}_static/{CSS_STATIC}" />\n'
        text, scripts = _MATHJAX_SCRIPTS.subn("", text)
        if link in text:  # typeset by an earlier run
            page.write_text(text, encoding="utf-8")
            continue
        if scripts != 2:
            logger.warning(
                "posviz: %s: MathJax's scripts not found (%d of 2)",
                page.relative_to(outdir),
                scripts,
                type="posviz",
                subtype="math",
            )
        text = text.replace("</head>", f"    {link}</head>", 1)
        page.write_text(text, encoding="utf-8")
