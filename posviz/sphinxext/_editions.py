"""The book's editions (posviz.sphinxext): each page's link to its twin in the other language
(the switch at the top of the article, and ``<link rel="alternate">``), the table of contents'
captions translated, and the theme's words that its own catalogs leave in English or get wrong."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config

import posviz

EDITIONS: dict[str, str] = {"en": "", "zh_CN": "zh"}
"""Each edition's language and its folder in the site (English at the root; ``tools/i18n.py``
builds the others into their folders)."""

_EDITION_NAMES = {"en": ("English", "en"), "zh_CN": ("中文", "zh-CN")}


def _edition(app: Sphinx) -> str:
    language = (app.config.language or "en").replace("-", "_")
    return language if language in EDITIONS else "en"


def _twin_url(app: Sphinx, pagename: str, language: str) -> str:
    """The relative URL of ``pagename`` in the edition of ``language``, from the current page."""
    up = "../" * pagename.count("/")
    here = EDITIONS[_edition(app)]
    root = up + ("../" if here else "")
    folder = EDITIONS[language]
    return f"{root}{folder + '/' if folder else ''}{pagename}.html"


def language_switch(app: Sphinx, pagename: str) -> str:
    """A visible link to the same page in every other edition (top of the article)."""
    current = _edition(app)
    links = []
    for language in EDITIONS:
        if language == current:
            continue
        name, tag = _EDITION_NAMES[language]
        links.append(
            f'<a class="posviz-language-link" href="{_twin_url(app, pagename, language)}" '
            f'hreflang="{tag}" lang="{tag}">{name}</a>'
        )
    label = "Language / 语言"
    return f'<nav class="posviz-language" aria-label="{label}">{" ".join(links)}</nav>'


def alternate_links(app: Sphinx, pagename: str) -> str:
    out = []
    for language in EDITIONS:
        _, tag = _EDITION_NAMES[language]
        out.append(f'<link rel="alternate" hreflang="{tag}" href="{_twin_url(app, pagename, language)}">\n')
    return "".join(out)


def translate_toc_captions(app: Sphinx, doctree: nodes.document) -> None:
    """Translate the captions of the table of contents (Foundations, Relative methods ...).

    sphinx-external-toc adds the root page's toctrees after Sphinx has translated the page, so
    their captions (which the gettext builder does extract, into the root page's catalog) stayed
    English in the sidebar of a translated edition.
    """
    if not app.config.language or app.config.language == "en":
        return
    from sphinx import addnodes
    from sphinx.locale import init as init_locale
    from sphinx.util.i18n import docname_to_domain

    toctrees = [n for n in doctree.findall(addnodes.toctree) if n.get("caption")]
    if not toctrees:
        return
    dirs = [str(Path(app.srcdir, d)) for d in app.config.locale_dirs]
    domain = docname_to_domain(app.env.docname, app.config.gettext_compact)
    catalog, has_catalog = init_locale(dirs, app.config.language, domain)
    if has_catalog:
        for node in toctrees:
            node["caption"] = catalog.gettext(node["caption"])


def theme_words(app: Sphinx, config: Config) -> None:
    """The words the book's theme leaves untranslated in a translated edition ("Live Code",
    "Color mode", "Table of contents" ...), from posviz's ``theme.po``: compiled and added behind
    the themes' own catalogs (Sphinx's message catalogs fall back in the order they are added)."""
    language = (config.language or "en").replace("-", "_")
    source = Path(posviz.__file__).parent / "locale" / language / "LC_MESSAGES" / "theme.po"
    if language == "en" or not source.exists():
        return
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    target = Path(app.doctreedir).parent / "posviz-locale"
    mo = target / language / "LC_MESSAGES"
    mo.mkdir(parents=True, exist_ok=True)
    with source.open("rb") as f:
        catalog = read_po(f, locale=language)
    for domain in ("booktheme", "sphinx"):  # sphinx-book-theme's, and pydata-sphinx-theme's and Sphinx's
        with (mo / f"{domain}.mo").open("wb") as f:
            write_mo(f, catalog)
        app.add_message_catalog(domain, str(target))
    # sphinx-togglebutton translates its hints when it is set up, before the language is known
    for name, english in (("togglebutton_hint", "Click to show"), ("togglebutton_hint_hide", "Click to hide")):
        message = catalog.get(english)
        if getattr(config, name, None) == english and message is not None and message.string:
            setattr(config, name, message.string)


# A word the theme's own Chinese catalog gets wrong for Simplified Chinese (a Taiwan usage).
_THEME_FIXES = {"zh_CN": {"列印成 PDF": "打印为 PDF"}}


def fix_theme_words(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    fixes = _THEME_FIXES.get((app.config.language or "en").replace("-", "_"))
    if not fixes:
        return

    def fix(buttons: list) -> None:
        for button in buttons:
            if isinstance(button, dict):
                for key in ("tooltip", "text", "label"):
                    if button.get(key) in fixes:
                        button[key] = fixes[button[key]]
                fix(button.get("buttons") or [])

    fix(context.get("header_buttons") or [])
