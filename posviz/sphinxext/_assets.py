"""Sphinx extension: serve plotly.js and MathJax 3 from the built site, never from a CDN.

What a first visit downloads is kept small: plotly.js is the book's own bundle of the trace types
its figures draw (scatter, bar, heatmap; ``tools/plotly_bundle.mjs``, run by ``make book``), built
from npm's plotly.js pinned to the version plotly.py bundles, MathJax
is its ``tex-chtml`` component (TeX with the AMS macros, extensions fetched only when a page uses
them), and the theme's 1.5 MB Font Awesome script is not loaded (the theme's CSS draws the same
icons from its web fonts). The search index is loaded by the search page only (the theme's search
box opens that page). The stylesheets lose the rules that no page can match and the icon fonts
keep only the icons they draw (``_weight``). Pages with a figure also get ``figures.js``, which
fits every figure to a phone's width and to the theme's dark mode, and the default Plotly
template once.

It also resolves the short names that posviz's module docstrings use for the public API
(``:func:`apply_rope``` in ``posviz.rope``) to the documented ``posviz.apply_rope``.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path
from typing import Any

import plotly
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

import posviz

from ._editions import alternate_links, fix_theme_words, language_switch, theme_words, translate_toc_captions

logger = logging.getLogger(__name__)

PLOTLY_PACKAGE_DATA = Path(plotly.__file__).parent / "package_data"
PLOTLY_FULL_JS = PLOTLY_PACKAGE_DATA / "plotly.min.js"
PLOTLY_JS_DEFAULT = "node_modules/.posviz/plotly-book.min.js"  # node tools/plotly_bundle.mjs (make book)
PLOTLY_STATIC = "posviz/plotly-book.min.js"  # under _static/
FIGURES_STATIC = "posviz/figures.js"  # under _static/
FIGURES_CSS_STATIC = "posviz/figures.css"
PAGE_STATIC = "posviz/page.js"  # on every page: focusable scrolling equations
PAGE_CSS_STATIC = "posviz/page.css"
HERE = Path(__file__).parent
MATHJAX_STATIC = "posviz/mathjax"  # under _static/
MATHJAX_ENTRY = "startup.js"
# MathJax's loader, told to fetch only TeX input (base, AMS, newcommand; other extensions
# autoload from [tex]/ when a page uses them), CommonHTML output and the hidden MathML that screen
# readers read; no right-click menu (430 kB). The combined tex-chtml.js would add the menu.
MATHJAX_LOAD = ["input/tex", "output/chtml", "a11y/assistive-mml"]
MATHJAX_PARTS = (
    MATHJAX_ENTRY,
    "core.js",
    "input/tex.js",
    "input/tex/extensions",
    "output/chtml.js",
    "output/chtml/fonts/tex.js",
    "output/chtml/fonts/woff-v2",
    "a11y/assistive-mml.js",
)
_VERSION = re.compile(r"plotly\.js(?: \([a-z -]+\))? v(\d+\.\d+\.\d+)")


def plotly_js_version(path: Path) -> str | None:
    """The version in a plotly.js bundle's banner (``plotly.js (book - minified) v4.1.1``)."""
    with open(path, encoding="utf-8") as f:
        match = _VERSION.search(f.read(400))
    return match.group(1) if match else None


# Theme templates shadowed by an edited copy: (path in the theme, what to change).
_THEME_EDITS = {
    # The 1.5 MB script turns <i class="fa-..."> into SVG; without it the theme's own CSS draws the
    # same icons from its web fonts (fetched only when a page shows one of their icons).
    "static/webpack-macros.html": (re.compile(r"^.*scripts/fontawesome\.js.*\n", re.M), ""),
    # The search field's aria-label ("Search") left out its visible text ("Search Ctrl+K"), which
    # speech-input users say to press it (axe: label-content-name-mismatch): its name is its text.
    "components/search-button-field.html": (re.compile(r' aria-label="\{\{ _\(\'Search\'\) \}\}"'), ""),
    # Sphinx's search tools and the whole search index (100-155 kB) on every page, for the theme's
    # search-as-you-type, which the book leaves off: its search box opens the search page, which
    # loads them. (sphinx-book-theme's layout extends this one by its theme-qualified name.)
    "layout.html": (
        re.compile(r"\{% if pagename == 'search' %\}"),
        "{% if pagename == 'search' or not (theme_search_as_you_type|tobool) %}",
    ),
}
# sphinx-book-theme's templates shadowed the same way.
_BOOK_THEME_EDITS = {
    # "By" and the author joined by a space: right after a translation that ends in a full-width
    # mark (Chinese "作者：") the space is one a Chinese line does not have ("作者： posviz 作者团队").
    "components/author.html": (
        re.compile(r"\{\{ translate\('By'\) \}\} \{\{ author \}\}"),
        "{%- set by = translate('By') %}{{ by }}{{ '' if by[-1:] in '：，。；、！？）' else ' ' }}{{ author }}",
    ),
}
# Where an edited copy goes when the template is asked for by its theme-qualified name.
_THEME_TARGETS = {"layout.html": "pydata_sphinx_theme/layout.html"}


def _theme_sources() -> list[tuple[Path, dict[str, tuple[re.Pattern[str], str]]]]:
    """(theme folder, its edits) for each installed theme the book's edits apply to."""
    found = []
    for module, edits in (("pydata_sphinx_theme", _THEME_EDITS), ("sphinx_book_theme", _BOOK_THEME_EDITS)):
        try:
            package = __import__(module)
        except ImportError:  # pragma: no cover - another theme
            continue
        found.append((Path(package.__file__).parent / "theme" / module, edits))
    return found


def _theme_templates(app: Sphinx, config: Config) -> None:
    """Put edited copies of a few pydata-sphinx-theme and sphinx-book-theme templates ahead of the
    themes' own (see _THEME_EDITS, _BOOK_THEME_EDITS)."""
    target = Path(app.doctreedir).parent / "posviz-templates"
    for theme, name, pattern, replacement in (
        (theme, name, *edit) for theme, edits in _theme_sources() for name, edit in edits.items()
    ):
        source = theme / name
        if not source.exists():  # pragma: no cover - another theme version
            continue
        text, count = pattern.subn(replacement, source.read_text(encoding="utf-8"))
        if count != 1:
            logger.warning("posviz: %s changed upstream; not edited", source, type="posviz", subtype="theme")
            continue
        # a component is also looked up by its bare name (sphinx-book-theme's sidebars list it so)
        names = [name, Path(name).name] if name.startswith("components/") else [_THEME_TARGETS.get(name, name)]
        for copy in (target / n for n in names):
            copy.parent.mkdir(parents=True, exist_ok=True)
            if not copy.exists() or copy.read_text(encoding="utf-8") != text:
                copy.write_text(text, encoding="utf-8")
    config.templates_path = [str(target), *config.templates_path]


def _set_mathjax_path(app: Sphinx, config: Config) -> None:
    config.mathjax_path = f"{MATHJAX_STATIC}/{MATHJAX_ENTRY}"
    mathjax = dict(config.mathjax3_config or {})
    mathjax["loader"] = {**mathjax.get("loader", {}), "load": MATHJAX_LOAD}
    config.mathjax3_config = mathjax


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dst, dirs_exist_ok=True)
    else:
        shutil.copyfile(src, dst)


def _figures_js() -> str:
    """The page script, preceded by the templates it swaps (plotly.py's, so they match the figures)."""
    templates = {
        name: json.loads((PLOTLY_PACKAGE_DATA / "templates" / f"{name}.json").read_text(encoding="utf-8"))
        for name in ("plotly", "plotly_dark")
    }
    head = "window.POSVIZ_TEMPLATES = " + json.dumps(templates, separators=(",", ":"), sort_keys=True) + ";\n"
    return head + (HERE / "static" / "figures.js").read_text(encoding="utf-8")


def _copy_plotly(app: Sphinx, static: Path) -> None:
    source = Path(app.srcdir, app.config.posviz_plotly_js)
    wanted = plotly_js_version(PLOTLY_FULL_JS)
    found = plotly_js_version(source) if source.exists() else None
    if found is None or found != wanted:
        logger.warning(
            "plotly.js %s not found at %s (found %s): run `npm ci` and `node tools/plotly_bundle.mjs` in the "
            "book root (`make book` does); package.json must pin plotly.js to the version plotly.py bundles",
            wanted,
            source,
            found or "nothing",
            type="posviz",
            subtype="plotly",
        )
        source = PLOTLY_FULL_JS  # still a working page, with the whole bundle
    _copy(source, static / PLOTLY_STATIC)


def _copy_assets(app: Sphinx) -> None:
    """Copy before any page is written, so Sphinx's ``?v=checksum`` is the same on every build."""
    if app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    _copy_plotly(app, static)
    (static / FIGURES_STATIC).write_text(_figures_js(), encoding="utf-8")
    _copy(HERE / "static" / "figures.css", static / FIGURES_CSS_STATIC)
    _copy(HERE / "static" / "page.js", static / PAGE_STATIC)
    _copy(HERE / "static" / "page.css", static / PAGE_CSS_STATIC)
    app.add_js_file(PAGE_STATIC, loading_method="defer")
    app.add_css_file(PAGE_CSS_STATIC)
    if "myst_nb" in app.extensions:  # myst-nb copies its CSS only after the pages are written
        from myst_nb.sphinx_ext import add_global_html_resources

        add_global_html_resources(app, None)
    source = Path(app.srcdir, app.config.posviz_mathjax_dir)
    missing = [part for part in MATHJAX_PARTS if not (source / part).exists()]
    if missing:
        logger.warning(
            "MathJax 3 not found at %s (missing %s): run `npm ci` in the book root (`make book` does)",
            source,
            ", ".join(missing),
            type="posviz",
            subtype="mathjax",
        )
        return
    for part in MATHJAX_PARTS:
        _copy(source / part, static / MATHJAX_STATIC / part)


_HIDDEN_CELL_LABEL = '<summary aria-label="Toggle hidden content">'


# sphinx-design's stylesheet styles only its own classes (sd-*; and one utility, shadow-none)
_SPHINX_DESIGN_CLASS = re.compile(r'class="[^"]*\b(?:sd-|shadow-none\b)')


def _page_context(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """Load plotly.js (synchronously, before the figures' inline scripts) on pages with a figure.

    Also: myst-nb names a hidden cell's ``<summary>`` "Toggle hidden content", which leaves out
    its visible text ("Show code cell content") that speech-input users say to open it (axe:
    label-content-name-mismatch): the label goes, and the visible text is its name.
    And: sphinx-design's stylesheet and tab script are left off a page that uses none of its
    components (no page of the book does yet: 62 kB of every first visit).
    And: docutils marks a bibliography entry ``role="doc-biblioentry"`` inside ``role="list"``;
    ARIA 1.3 deprecates that role, so the list has no list items for assistive technology
    (axe: aria-required-children). Each entry becomes a ``listitem``.
    """
    body = context.get("body", "")
    if body and getattr(app.builder, "format", None) == "html":
        context["body"] = body = language_switch(app, pagename) + body
        context["metatags"] = context.get("metatags", "") + alternate_links(app, pagename)
    if _HIDDEN_CELL_LABEL in body:
        context["body"] = body = body.replace(_HIDDEN_CELL_LABEL, "<summary>")
    if 'role="doc-biblioentry"' in body:
        context["body"] = body = body.replace('role="doc-biblioentry"', 'role="listitem"')
    if body and not _SPHINX_DESIGN_CLASS.search(body):  # 62 kB that style nothing on this page
        for key, name in (("css_files", "sphinx-design.min.css"), ("script_files", "design-tabs.js")):
            files = context.get(key)
            if isinstance(files, list):
                files[:] = [f for f in files if not str(getattr(f, "filename", f)).endswith(name)]
    if 'class="plotly-graph-div"' in body:
        app.builder.add_js_file(PLOTLY_STATIC)  # on this page only
        app.builder.add_js_file(FIGURES_STATIC)  # right after: it wraps Plotly.newPlot
        app.builder.add_css_file(FIGURES_CSS_STATIC)


def _slim(app: Sphinx, exception: Exception | None) -> None:
    """The stylesheets without the rules no page can match, the icon fonts with only the icons
    they draw (``_weight``): about 400 kB of a chapter's first visit. After the math is typeset
    and the icons trimmed, on the files this build copied afresh."""
    if exception is not None or app.builder.format != "html":
        return
    import importlib.util

    from ._weight import slim_site

    if importlib.util.find_spec("fontTools") is None:
        logger.warning(
            "posviz: fontTools is not installed (pip install -e '.[book]'): the icon fonts stay whole",
            type="posviz",
            subtype="fonts",
        )
    for name, (before, after) in slim_site(Path(app.outdir)).items():
        logger.info("posviz: %s %s -> %s bytes", name, f"{before:,}", f"{after:,}")


def _root_redirect(app: Sphinx, exception: Exception | None) -> None:
    """The site root (``index.html``) as a small page that redirects to the book's first page.

    Jupyter Book's own (sphinx-external-toc's) is a lone ``<meta>`` tag: no favicon (the browser
    then asks for ``/favicon.ico``, a 404), no language, no title, no link. Written before that
    extension runs, which leaves an existing ``index.html`` alone.
    """
    if exception is not None or app.builder.name != "html" or app.config.root_doc == "index":
        return
    target = f"{app.config.root_doc}.html"
    favicon = app.config.html_favicon or ""
    if favicon and "://" not in favicon:
        favicon = f"_static/{Path(favicon).name}"
    title = html.escape(app.config.html_title or app.config.project)
    icon = f'<link rel="icon" href="{html.escape(favicon)}">\n' if favicon else ""
    language = html.escape(app.config.language or "en")
    Path(app.outdir, "index.html").write_text(
        f'<!DOCTYPE html>\n<html lang="{language}">\n<head>\n<meta charset="utf-8">\n'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">\n<title>{title}</title>\n{icon}'
        f'<meta http-equiv="Refresh" content="0; url={target}">\n</head>\n'
        f'<body><p><a href="{target}">{title}</a></p></body>\n</html>\n',
        encoding="utf-8",
    )


def _resolve_public_name(app: Sphinx, env: Any, node: Any, contnode: nodes.Element) -> nodes.Element | None:
    """``name`` or ``posviz.module.name`` -> ``posviz.name`` when ``name`` is in ``posviz.__all__``."""
    name = node.get("reftarget", "").rpartition(".")[2]
    if node.get("refdomain") != "py" or name not in posviz.__all__:
        return None
    domain = env.get_domain("py")
    return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], f"posviz.{name}", node, contnode)


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the extension (``sphinx: extra_extensions: [posviz.sphinxext]``)."""
    from ._glue import install
    from ._icons import trim_icons
    from ._math import render_math

    install()  # glued numbers in translated paragraphs (the Chinese edition)
    app.add_config_value("posviz_mathjax_dir", "node_modules/mathjax/es5", "env", [str])
    app.add_config_value("posviz_plotly_js", PLOTLY_JS_DEFAULT, "env", [str])
    app.add_config_value("posviz_math_at_build", False, "html", [bool])  # posviz.sphinxext._math
    app.connect("config-inited", _set_mathjax_path)
    app.connect("config-inited", _theme_templates)
    app.connect("builder-inited", _copy_assets)
    # before the theme reads its words at config time (sphinx-book-theme's search box text)
    app.connect("config-inited", theme_words, priority=100)
    app.connect("html-page-context", _page_context)
    app.connect("html-page-context", fix_theme_words, priority=600)  # after the theme's buttons
    app.connect("doctree-read", translate_toc_captions, priority=400)  # before the toctree collector
    app.connect("missing-reference", _resolve_public_name)
    app.connect("build-finished", trim_icons)
    app.connect("build-finished", render_math)
    app.connect("build-finished", _slim, priority=800)  # last: it reads the pages as they end up
    app.connect("build-finished", _root_redirect, priority=400)  # before sphinx-external-toc's
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
