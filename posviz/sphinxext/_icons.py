"""The theme's Font Awesome stylesheet trimmed to the icons the site shows (posviz.sphinxext):
the rules of the ~1,900 icons no page draws are dropped, and the brand icons (the repository
button's GitHub mark) are drawn as SVG, so that no page needs the brands font."""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.application import Sphinx

# A pure icon rule of the theme's Font Awesome CSS: `.fa-name:before{content:"\f09b"}`, maybe
# several names for one icon.
_ICON_RULE = re.compile(r'((?:\.fa-[a-z0-9-]+:{1,2}before,?)+)\{content:"([^"]*)"\}')
_ICON_NAME = re.compile(r"fa-[a-z0-9-]+")
_ICONS_MARK = "/* posviz: brand icons as SVG */"


def _used_icons(outdir: Path) -> set[str]:
    """Every ``fa-*`` name in the built pages and in the scripts they load (the theme's own)."""
    names: set[str] = set()
    for page in outdir.rglob("*.html"):
        names.update(_ICON_NAME.findall(page.read_text(encoding="utf-8", errors="replace")))
    static = outdir / "_static"
    for script in [*static.glob("*.js"), *static.glob("scripts/*.js")]:
        if script.name != "fontawesome.js":  # not loaded (see _assets._THEME_EDITS); it names every icon
            names.update(_ICON_NAME.findall(script.read_text(encoding="utf-8", errors="replace")))
    return names


def _brand_icons(outdir: Path, css: str) -> str | None:
    """CSS that draws the site's brand icons (the repository button's GitHub mark) from their SVG
    path in the theme's Font Awesome script: then no text needs the 118 kB brands font, and the
    browser never fetches it. ``None`` when an icon is not found (the font then stays in use)."""
    try:
        import pydata_sphinx_theme
    except ImportError:  # pragma: no cover - another theme
        return None
    script = Path(pydata_sphinx_theme.__file__).parent / "theme/pydata_sphinx_theme/static/scripts/fontawesome.js"
    if not script.exists():  # pragma: no cover - another theme version
        return None
    names: set[str] = set()
    for page in outdir.rglob("*.html"):
        for classes in re.findall(r'class="([^"]*\bfa(?:b|-brands)\b[^"]*)"', page.read_text(encoding="utf-8")):
            names.update(n for n in classes.split() if n.startswith("fa-") and n != "fa-brands")
    if not names:
        return ""
    source = script.read_text(encoding="utf-8")
    rules = []
    for name in sorted(names):
        code = re.search(rf'\.{re.escape(name)}:before\{{content:"\\([0-9a-f]+)"\}}', css)
        pattern = rf'(?<![\w-])"?{re.escape(name[3:])}"?:\[(\d+),(\d+),\[[^\]]*\],"([0-9a-f]+)","(M[^"]+)"\]'
        icon = re.search(pattern, source)
        if code is None or icon is None or icon.group(3) != code.group(1):
            return None
        width, height, _, path = icon.groups()
        svg = f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {width} {height}'><path d='{path}'/></svg>"
        url = 'url("data:image/svg+xml,' + svg.replace("<", "%3C").replace(">", "%3E").replace("#", "%23") + '")'
        # no text, not even the line box, in the brands font: the browser then never fetches it
        rules.append(
            f".fa-brands.{name},.fab.{name},.fa-brands.{name}:before,.fab.{name}:before{{font-family:inherit}}"
        )
        rules.append(
            f'.fa-brands.{name}:before,.fab.{name}:before{{content:"";display:inline-block;'
            f"width:{int(width) / int(height):.4g}em;height:1em;vertical-align:-.125em;background-color:currentColor;"
            f"-webkit-mask:{url} center/contain no-repeat;mask:{url} center/contain no-repeat}}"
        )
    return "\n".join(rules)


def trim_icons(app: Sphinx, exception: Exception | None) -> None:
    """The theme's CSS without the rules of the ~1,900 Font Awesome icons the site never shows
    (about 90 kB of every first visit), and its brand icons drawn as SVG (:func:`_brand_icons`)."""
    if exception is not None or app.builder.format != "html":
        return
    path = Path(app.outdir) / "_static" / "styles" / "pydata-sphinx-theme.css"
    if not path.exists():  # another theme
        return
    import pydata_sphinx_theme

    # the theme's own file (an earlier build may have trimmed the copy for other pages)
    original = Path(pydata_sphinx_theme.__file__).parent / "theme/pydata_sphinx_theme/static/styles" / path.name
    css = (original if original.exists() else path).read_text(encoding="utf-8").split("\n" + _ICONS_MARK)[0]
    used = _used_icons(Path(app.outdir))
    brands = _brand_icons(Path(app.outdir), css)

    def keep(match: re.Match[str]) -> str:
        return match.group(0) if set(_ICON_NAME.findall(match.group(1))) & used else ""

    trimmed = _ICON_RULE.sub(keep, css)
    if brands:
        trimmed += f"\n{_ICONS_MARK}\n{brands}\n"
    if trimmed != path.read_text(encoding="utf-8"):
        path.write_text(trimmed, encoding="utf-8")
