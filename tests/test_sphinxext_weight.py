"""posviz.sphinxext._weight: the stylesheets without rules no page can match, the icon fonts with
only the icons the stylesheets draw (a lighter first visit, issue #25)."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from sphinx.application import Sphinx
from sphinx.util.docutils import docutils_namespace

from posviz.sphinxext._weight import (
    css_blocks,
    drawn_characters,
    icon_fonts,
    purge_css,
    required_classes,
    slim_site,
    subset_font,
    used_classes,
)

pydata_sphinx_theme = pytest.importorskip("pydata_sphinx_theme")
THEME_STATIC = Path(pydata_sphinx_theme.__file__).parent / "theme/pydata_sphinx_theme/static"
THEME_CSS = THEME_STATIC / "styles/pydata-sphinx-theme.css"
SOLID = THEME_STATIC / "vendor/fontawesome/webfonts/fa-solid-900.woff2"


def _used(*names: str):
    return lambda name: name in names


def test_the_parser_gives_back_every_byte_of_the_themes_stylesheet() -> None:
    css = THEME_CSS.read_text(encoding="utf-8")
    blocks = css_blocks(css)
    assert len(blocks) > 1000
    assert "".join(p if b is None else f"{p}{{{b}}}" for p, b in blocks) == css
    assert purge_css(css, lambda name: True) == css  # nothing dropped: exactly the same file


@pytest.mark.parametrize(
    ("css", "used", "expected"),
    [
        (".a{color:red}.b{color:blue}", ("a",), ".a{color:red}"),
        (".a,.b .c,.d>.a{x:1}", ("a", "c", "d"), ".a,.d>.a{x:1}"),  # a selector list loses its dead selectors
        ("@media (min-width:1px){.b{x:1}}.a{y:2}", ("a",), ".a{y:2}"),  # an emptied @media goes
        ("@media (min-width:1px){.a{x:1}.b{x:2}}", ("a",), "@media (min-width:1px){.a{x:1}}"),
        (".a:not(.b){x:1}", ("a",), ".a:not(.b){x:1}"),  # a class it must NOT have is not required
        (".a:is(.b,.c) p{x:1}", ("a",), ".a:is(.b,.c) p{x:1}"),
        ("[class*=b-]{x:1}div{y:2}:root{--z:3}", (), "[class*=b-]{x:1}div{y:2}:root{--z:3}"),
        ('.a:before{content:"}{"}.b{x:1}', ("a",), '.a:before{content:"}{"}'),  # braces in strings
        ("/* .b { */.a{x:1}/* } */", ("a",), "/* .b { */.a{x:1}/* } */"),  # and in comments
        ("/* spacing, borders */\n.b,\n.a{x:1}", ("a",), "\n.a{x:1}"),  # a comma in a comment (myst-nb's)
        ("/* one, two */.a,.b{x:1}", ("a",), "/* one, two */.a{x:1}"),
        ('[title="p,.b"],.a{x:1}', ("a",), '[title="p,.b"],.a{x:1}'),
        (".md\\:flex{x:1}", (), ".md\\:flex{x:1}"),  # an escaped name is kept, never misread
        ("@font-face{font-family:F}@keyframes k{from{x:0}}", (), "@font-face{font-family:F}@keyframes k{from{x:0}}"),
        ('@charset "UTF-8";.b{x:1}', (), '@charset "UTF-8";'),
        (".a.b{x:1}", ("a",), ""),  # both classes on one element: b never occurs
    ],
)
def test_purge_drops_exactly_the_selectors_that_need_an_absent_class(css: str, used: tuple, expected: str) -> None:
    assert purge_css(css, _used(*used)) == expected


def test_required_classes() -> None:
    assert required_classes(".x .y:hover>a.z::before") == {"x", "y", "z"}
    assert required_classes("a:not(.n):where(.w)[data-x='.q'] .k") == {"k"}


def test_a_class_is_used_when_a_page_or_a_script_holds_it_or_builds_it(tmp_path: Path) -> None:
    (tmp_path / "_static").mkdir()
    (tmp_path / "page.html").write_text('<div class="navbar-brand logo"></div>', encoding="utf-8")
    (tmp_path / "_static/app.js").write_text('e.classList.add("show");t.add(`bs-${n}-auto`);"pst-"+x', "utf-8")
    (tmp_path / "_static/fontawesome.js").write_text('"carousel"', encoding="utf-8")  # never loaded
    used = used_classes(tmp_path)
    assert used("navbar-brand") and used("logo") and used("show")
    assert used("bs-tooltip-auto") and used("pst-navbar-icon")  # names put together at run time
    assert not used("navbar") and not used("tooltip-auto") and not used("carousel")


def test_drawn_characters_are_contents_and_custom_properties() -> None:
    css = (
        ':root{--pst-icon-github:"\\f09b";--x:"\uf0c9"}'
        '.a:before{content:"\\f107 x"}'
        '.b{font-family:"Font Awesome 6 Free";background:url("data:image/svg+xml,q")}'
    )
    assert drawn_characters(css) == {"\uf09b", "\uf0c9", "\uf107", "x"}


fontTools = pytest.importorskip("fontTools")


def _glyphs(path: Path) -> dict[int, tuple]:
    """Each character's outline and advance width."""
    from fontTools.ttLib import TTFont

    font = TTFont(str(path))
    glyf, hmtx = font["glyf"], font["hmtx"]
    out = {}
    for code, name in font.getBestCmap().items():
        coordinates, ends, flags = glyf[name].getCoordinates(glyf)
        out[code] = (list(coordinates), ends, list(flags), hmtx[name])
    return out


def test_a_subset_font_keeps_the_same_glyphs_and_only_those(tmp_path: Path) -> None:
    font = tmp_path / SOLID.name
    shutil.copyfile(SOLID, font)
    wanted = {"\uf002", "\uf0c9", "\uf185"}  # magnifying glass, bars, sun
    assert subset_font(font, wanted | {"\U0010fffd"})  # a character the font lacks is no trouble
    assert font.stat().st_size < SOLID.stat().st_size / 5
    full, small = _glyphs(SOLID), _glyphs(font)
    public = {c for c in full if c < 0x3000}  # letters, arrows, U+2039 (also U+F104)...
    assert 0x41 in public and 0x2039 in public and 0xF104 not in small
    assert set(small) == {ord(c) for c in wanted} | public
    assert all(small[c] == full[c] for c in small)  # identical outlines and advances
    again = font.read_bytes()
    subset_font(font, wanted)
    assert font.read_bytes() == again  # the same bytes every build


def _site(tmp_path: Path) -> Path:
    out = tmp_path / "site"
    for part in ("styles/pydata-sphinx-theme.css", "vendor/fontawesome/webfonts"):
        source, target = THEME_STATIC / part, out / "_static" / part
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copyfile)(source, target)
    (out / "_static/app.js").write_text('x.classList.toggle("show")', encoding="utf-8")
    (out / "index.html").write_text(
        '<nav class="navbar navbar-expand-lg"><i class="fa-solid fa-bars"></i><div class="dropdown-menu"></div></nav>',
        encoding="utf-8",
    )
    return out


def test_slim_site_keeps_what_the_pages_use(tmp_path: Path) -> None:
    out = _site(tmp_path)
    sizes = slim_site(out)
    css = (out / "_static/styles/pydata-sphinx-theme.css").read_text(encoding="utf-8")
    assert sizes["_static/styles/pydata-sphinx-theme.css"][1] == len(css.encode()) < 200_000
    assert ".navbar-expand-lg" in css and ".dropdown-menu.show" in css and ".fa-bars:before" in css
    assert ".carousel-item" not in css and ".offcanvas-start" not in css and ".sd-card" not in css
    assert ":root" in css and "@font-face" in css and "html[data-theme=dark]" in css
    fonts = icon_fonts(out / "_static/styles/pydata-sphinx-theme.css")
    assert {f.name for f in fonts} == {"fa-solid-900.woff2", "fa-regular-400.woff2", "fa-brands-400.woff2"}
    solid = _glyphs(out / "_static/vendor/fontawesome/webfonts/fa-solid-900.woff2")
    drawn = {ord(c) for c in drawn_characters(css)}
    private = {c for c in solid if c >= 0x3000}
    assert 0xF0C9 in private and private <= drawn and len(private) < 60  # bars, and what the CSS draws
    assert solid[0xF0C9] == _glyphs(SOLID)[0xF0C9]
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    slim_site(out)  # a second pass changes nothing
    assert all(p.read_bytes() == data for p, data in before.items())


def test_a_built_site_is_slim(tmp_path: Path) -> None:
    """The extension in a real build with the book's theme: the stylesheets and fonts shrink,
    what the pages use stays, and a second build gives the same files."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        "extensions = ['posviz.sphinxext']\nhtml_theme = 'sphinx_book_theme'\n"
        f"posviz_mathjax_dir = {str(tmp_path / 'none')!r}\n",
        encoding="utf-8",
    )
    (src / "index.rst").write_text("Index\n=====\n\n.. note::\n\n   A note.\n\n.. code-block:: python\n\n   x = 1\n")

    def build() -> str:
        warnings = io.StringIO()
        with docutils_namespace():
            Sphinx(src, src, tmp_path / "out", tmp_path / "doctrees", "html", status=None, warning=warnings).build()
        return warnings.getvalue()

    build()
    static = tmp_path / "out/_static"
    css = (static / "styles/pydata-sphinx-theme.css").read_text(encoding="utf-8")
    assert len(css) < 200_000 < len(THEME_CSS.read_text(encoding="utf-8"))
    assert ".admonition" in css and ".tooltip-inner" in css and ".bs-tooltip-auto" in css  # a page's; Bootstrap's
    assert ".accordion-button" not in css
    assert (static / "vendor/fontawesome/webfonts/fa-solid-900.woff2").stat().st_size < 25_000
    first = {p: p.read_bytes() for p in static.rglob("*.css")} | {p: p.read_bytes() for p in static.rglob("*.woff2")}
    build()
    assert all(p.read_bytes() == data for p, data in first.items())


def _rules(css: str) -> list[tuple[str, list[str], str]]:
    """Every rule as a CSS parser reads it (tinycss2, independent of ours): (the at-rules around
    it, its selectors, its declarations), with no parse error anywhere."""
    tinycss2 = pytest.importorskip("tinycss2")
    out = []

    def walk(nodes: list, where: str) -> None:
        for node in nodes:
            assert node.type != "error", node
            if node.type == "qualified-rule":
                parts: list[list] = [[]]
                for token in node.prelude:  # brackets and functions are nested blocks: these commas are top-level
                    if token.type == "literal" and token.value == ",":
                        parts.append([])
                    elif token.type != "comment":
                        parts[-1].append(token)
                selectors = [tinycss2.serialize(part).strip() for part in parts]
                out.append((where, selectors, tinycss2.serialize(node.content).strip()))
            elif node.type == "at-rule" and node.content is not None and node.lower_at_keyword in ("media", "supports"):
                walk(tinycss2.parse_rule_list(node.content), where + tinycss2.serialize(node.prelude))

    walk(tinycss2.parse_stylesheet(css, skip_whitespace=True), "")
    return out


@pytest.mark.parametrize(
    "sheet",
    [
        THEME_CSS,
        THEME_STATIC.parents[3] / "sphinx_book_theme/theme/sphinx_book_theme/static/styles/sphinx-book-theme.css",
        Path(pytest.importorskip("myst_nb").__file__).parent / "static/mystnb.css",
    ],
    ids=["pydata", "sphinx-book", "mystnb"],
)
def test_a_purged_stylesheet_is_the_same_rules_less_dead_selectors(sheet: Path) -> None:
    """Read by a CSS parser, the purged sheet is the original's rules in order, each with the
    same declarations and only the selectors that survive; the others gone (half the classes)."""
    css = sheet.read_text(encoding="utf-8")
    names = sorted({c for _, selectors, _ in _rules(css) for s in selectors for c in required_classes(s)})
    used = set(names[::2])
    expected = []
    for where, selectors, body in _rules(css):
        kept = [s for s in selectors if required_classes(s) <= used]
        if kept:
            expected.append((where, kept, body))
    assert len(expected) < len(_rules(css))
    assert _rules(purge_css(css, used.__contains__)) == expected
