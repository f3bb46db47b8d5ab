"""A lighter first visit: the site's stylesheets without the rules that match nothing it holds,
and its icon fonts with only the icons those stylesheets draw.

Run when the build has finished (:func:`slim_site`), after the theme's Font Awesome rules are
trimmed (``_icons.trim_icons``), on the files Sphinx copied afresh at this build.

*Unused rules.* A selector is left out only when it names a class that no page of the site and no
script under ``_static/`` holds as a word, nor begins with a class prefix that a script puts
together at run time (``"bs-"+name+"-auto"``: Bootstrap's tooltip placement): no element can
then ever carry that class, so the selector can never match and nothing drawn changes. Classes
inside ``:not()``, ``:is()``, ``:where()``, ``:has()`` and attribute selectors are not required;
a selector with an escape is kept as it is; at-rules other than ``@media``, ``@supports``,
``@layer`` and ``@container`` (``@font-face``, ``@keyframes``) are kept whole.

*Icon fonts.* Font Awesome's text is drawn by CSS: an icon is the ``content`` of a pseudo-element
(or a custom property that one reads). Each Font Awesome web font keeps the glyphs of every
character that a ``content`` value or a custom property of the site's stylesheets holds, and of
any text inside an element with a Font Awesome class, and every character below U+3000 (letters,
punctuation, arrows: beside them an icon is drawn pixel for pixel as before): the same outlines, metrics and
hinting (fontTools' subsetter, WOFF2 as before). Without fontTools the fonts stay whole.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterable
from pathlib import Path

# The stylesheets of the site (under _static/) that hold rules for the site's own HTML.
STYLESHEETS = ("styles/pydata-sphinx-theme.css", "styles/sphinx-book-theme.css", "basic.css", "pygments.css")
STYLESHEET_PATTERNS = ("mystnb.*.css",)
_SKIPPED_SCRIPTS = ("fontawesome.js",)  # never loaded (see _assets._THEME_EDITS); it names every icon
_WORD = re.compile(r"[A-Za-z0-9_-]+")
# a string literal that a script joins to a name at run time: "bs-"+x, `bs-${x}`
_PREFIX = re.compile(r"""["'`]([A-Za-z][\w-]*[-_])(?:["'`]\s*\+|\$\{)""")
_MIN_PREFIX = 3
_CLASS = re.compile(r"\.(-?[_a-zA-Z][\w-]*)")
_FUNCTIONAL = re.compile(r":(?:not|is|where|has|matches|-webkit-any|-moz-any)\(", re.I)
_GROUPING = ("media", "supports", "layer", "container")


def _skip_string(css: str, i: int) -> int:
    """The index just past the string literal that starts at ``css[i]``."""
    quote, j = css[i], i + 1
    while j < len(css) and css[j] != quote:
        j += 2 if css[j] == "\\" else 1
    return j + 1


def _skip_comment(css: str, i: int) -> int:
    end = css.find("*/", i + 2)
    return len(css) if end < 0 else end + 2


def css_blocks(css: str) -> list[tuple[str, str | None]]:
    """One nesting level of a stylesheet: ``(prelude, body)`` for each rule or block at-rule and
    ``(text, None)`` for each statement (``@charset ...;``) and for any trailing text.
    Joining ``prelude + "{" + body + "}"`` (or the text) gives back ``css`` exactly."""
    out: list[tuple[str, str | None]] = []
    start = i = 0
    while i < len(css):
        c = css[i]
        if c in "\"'":
            i = _skip_string(css, i)
        elif css.startswith("/*", i):
            i = _skip_comment(css, i)
        elif c == ";":
            out.append((css[start : i + 1], None))
            start = i = i + 1
        elif c == "{":
            depth, j = 1, i + 1
            while depth and j < len(css):
                d = css[j]
                if d in "\"'":
                    j = _skip_string(css, j)
                    continue
                if css.startswith("/*", j):
                    j = _skip_comment(css, j)
                    continue
                depth += {"{": 1, "}": -1}.get(d, 0)
                j += 1
            out.append((css[start:i], css[i + 1 : j - 1]))
            start = i = j
        else:
            i += 1
    if start < len(css):
        out.append((css[start:], None))
    return out


def _split_selectors(prelude: str) -> list[str]:
    """A selector list split at its top-level commas, never inside brackets, strings or comments
    (exactly: ``",".join`` gives it back)."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(prelude):
        c = prelude[i]
        if c in "\"'":
            i = _skip_string(prelude, i)
            continue
        if prelude.startswith("/*", i):
            i = _skip_comment(prelude, i)
            continue
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(prelude[start:i])
            start = i + 1
        i += 1
    parts.append(prelude[start:])
    return parts


def required_classes(selector: str) -> set[str]:
    """The classes an element must carry for ``selector`` to match anything (those inside
    ``:not(...)`` and the like, and inside attribute selectors, are not required)."""
    kept, i = [], 0
    selector = re.sub(r"/\*.*?\*/", " ", selector, flags=re.S)
    while i < len(selector):
        functional = _FUNCTIONAL.match(selector, i)
        if functional or selector[i] == "[":
            depth, j = 1, functional.end() if functional else i + 1
            while depth and j < len(selector):
                depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(selector[j], 0)
                j += 1
            kept.append(" ")
            i = j
        else:
            kept.append(selector[i])
            i += 1
    return set(_CLASS.findall("".join(kept)))


def purge_css(css: str, used: Callable[[str], bool]) -> str:
    """``css`` without the selectors that need a class ``used`` rejects (a rule with none left goes,
    and a grouping at-rule left empty); everything else exactly as it was."""
    out = []
    for prelude, body in css_blocks(css):
        if body is None:
            out.append(prelude)
            continue
        head = re.sub(r"/\*.*?\*/", "", prelude, flags=re.S).strip()
        if head.startswith("@"):
            keyword = re.match(r"@([\w-]*)", head).group(1).lower()
            if keyword in _GROUPING:
                inner = purge_css(body, used)
                if inner.strip():
                    out.append(f"{prelude}{{{inner}}}")
            else:
                out.append(f"{prelude}{{{body}}}")
            continue
        if "\\" in prelude:  # an escaped class name: kept rather than read wrongly
            out.append(f"{prelude}{{{body}}}")
            continue
        kept = [s for s in _split_selectors(prelude) if all(used(c) for c in required_classes(s))]
        if kept:
            out.append(",".join(kept) + f"{{{body}}}")
    return "".join(out)


def _site_texts(outdir: Path) -> Iterable[str]:
    for page in outdir.rglob("*.html"):
        yield page.read_text(encoding="utf-8", errors="replace")


def _scripts(outdir: Path) -> Iterable[str]:
    for script in (outdir / "_static").rglob("*.js"):
        if script.name not in _SKIPPED_SCRIPTS:
            yield script.read_text(encoding="utf-8", errors="replace")


def used_classes(outdir: Path) -> Callable[[str], bool]:
    """Whether a class may appear in the site: a word of a page or of a script under ``_static/``,
    or a name that begins with a prefix a script joins to a name at run time."""
    words: set[str] = set()
    prefixes: set[str] = set()
    for text in _site_texts(outdir):
        words.update(_WORD.findall(text))
    for text in _scripts(outdir):
        words.update(_WORD.findall(text))
        prefixes.update(p for p in _PREFIX.findall(text) if len(p) >= _MIN_PREFIX)
    starts = tuple(sorted(prefixes))
    return lambda name: name in words or name.startswith(starts)


def _stylesheets(outdir: Path) -> list[Path]:
    static = outdir / "_static"
    paths = [static / name for name in STYLESHEETS]
    paths += [p for pattern in STYLESHEET_PATTERNS for p in sorted(static.glob(pattern))]
    return [p for p in paths if p.is_file()]


_ESCAPE = re.compile(r"\\(?:([0-9a-fA-F]{1,6})\s?|(.))", re.S)
_DRAWN = re.compile(r"(?<![\w-])(?:content|--[\w-]+)\s*:([^;}]*)")
_STRING = re.compile(r""""((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'""", re.S)


def _unescape(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(1):
            code = int(m.group(1), 16)
            return chr(code) if 0 < code <= 0x10FFFF else "\ufffd"
        return "" if m.group(2) == "\n" else m.group(2)

    return _ESCAPE.sub(one, text)


def drawn_characters(css: str) -> set[str]:
    """Every character of a string in a ``content`` value or a custom property of ``css``."""
    chars: set[str] = set()
    for value in _DRAWN.findall(css):
        for double, single in _STRING.findall(value):
            chars.update(_unescape(double or single))
    return chars


_FA_ELEMENT = re.compile(r'<(\w+)\b[^>]*\bclass="[^"]*\bfa[a-z]?(?:-[a-z0-9-]+)?\b[^"]*"[^>]*>([^<]*)</\1>')
_FONT_FACE = re.compile(r"@font-face\s*\{([^}]*)\}")
_FONT_URL = re.compile(r"url\(\s*['\"]?([^'\")]+\.woff2)['\"]?\s*\)")


def icon_fonts(stylesheet: Path) -> list[Path]:
    """The WOFF2 files of the Font Awesome ``@font-face`` rules in ``stylesheet``."""
    fonts = []
    for face in _FONT_FACE.findall(stylesheet.read_text(encoding="utf-8")):
        if "font awesome" in face.lower().replace("\\", ""):
            fonts += [(stylesheet.parent / url).resolve() for url in _FONT_URL.findall(face)]
    return [f for f in fonts if f.is_file()]


_KEPT_BELOW = 0x3000  # Latin ... General Punctuation, Arrows, Symbols: kept whole (measured: 18 kB)


def _private(code: int) -> bool:
    return code >= _KEPT_BELOW


def subset_font(path: Path, characters: set[str]) -> bool:
    """Rewrite the WOFF2 font at ``path`` with only the glyphs of ``characters`` (and every glyph of
    a character below U+3000, and .notdef); every kept glyph's
    outline, metrics and hinting stay as they were. False without fontTools."""
    try:
        from fontTools import subset
    except ImportError:
        return False
    options = subset.Options()
    options.flavor = "woff2"
    options.layout_features = ["*"]
    options.name_IDs = ["*"]
    options.name_languages = ["*"]
    options.notdef_outline = True
    options.recalc_bounds = False
    options.recalc_timestamp = False
    font = subset.load_font(io.BytesIO(path.read_bytes()), options)  # read whole: then written over
    # Every character below U+3000 stays too (18 kB of Font Awesome's 156): a rasterizer's
    # auto-hinter gives a glyph the script of the characters that map to it (the chevron U+F104
    # is also U+2039) and measures that script on its letters; with the private-use icons alone,
    # the book's chevrons were drawn with other pixels (checked in Chromium; with these, the same).
    public = {code for code in font.getBestCmap() if not _private(code)}
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted({ord(c) for c in characters} | public))
    subsetter.subset(font)
    out = io.BytesIO()
    subset.save_font(font, out, options)
    path.write_bytes(out.getvalue())
    return True


def slim_site(outdir: Path) -> dict[str, tuple[int, int]]:
    """Purge the site's stylesheets and subset its icon fonts, in place (see the module's text).
    Returns each rewritten file's size before and after, by its path under ``outdir``."""
    sizes: dict[str, tuple[int, int]] = {}
    used = used_classes(outdir)
    sheets = _stylesheets(outdir)
    for sheet in sheets:
        css = sheet.read_text(encoding="utf-8")
        slim = purge_css(css, used)
        if slim != css:
            sheet.write_text(slim, encoding="utf-8")
            sizes[sheet.relative_to(outdir).as_posix()] = (len(css.encode()), len(slim.encode()))
    characters: set[str] = set()
    for sheet in (outdir / "_static").rglob("*.css"):
        characters |= drawn_characters(sheet.read_text(encoding="utf-8", errors="replace"))
    for text in _site_texts(outdir):
        for _, inner in _FA_ELEMENT.findall(text):
            characters.update(inner.strip())
    fonts = {font for sheet in sheets for font in icon_fonts(sheet)}
    for font in sorted(fonts):
        before = font.stat().st_size
        if subset_font(font, characters):
            sizes[font.relative_to(outdir.resolve()).as_posix()] = (before, font.stat().st_size)
    return sizes
