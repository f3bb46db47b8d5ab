"""Citations in the edition's language: "Vaswani 等人 [2017]" in Chinese prose.

sphinxcontrib-bibtex formats a citation with one *reference style* for the whole build
(``bibtex_reference_style``; the book's is ``author_year``), and its author-year style writes
"Vaswani *et al.* [2017]" and "Press and Smith" whatever the language of the sentence around it.
This module registers a reference-style plugin per (style, language) that needs other words, and
switches the build to it from the edition's language (``language``): the book's configuration
names one style, every edition gets its own form. English is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._language import edition_language

PLUGIN_GROUP = "sphinxcontrib.bibtex.style.referencing"

# The words of a citation that depend on the language: (the book's style, language) -> the style
# to use, and the words it writes (between two authors; before the last of a full list; for the
# authors after the first of three or more).
STYLE_WORDS: dict[tuple[str, str], tuple[str, dict[str, str]]] = {
    ("author_year", "zh_CN"): ("author_year_zh_cn", {"sep2": " 和 ", "last_sep": " 和 ", "other": " 等人"}),
}


def _style_class(words: dict[str, str]) -> type:
    """sphinxcontrib-bibtex's author-year style with ``words`` for its person names."""
    from sphinxcontrib.bibtex.style.referencing import PersonStyle
    from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle

    @dataclass
    class LocalisedAuthorYearReferenceStyle(AuthorYearReferenceStyle):
        person: PersonStyle = field(default_factory=lambda: PersonStyle(**words))

    return LocalisedAuthorYearReferenceStyle


def reference_style(style: str, language: str | None) -> str:
    """The reference style for an edition: the localised plugin's name, or ``style`` itself."""
    found = STYLE_WORDS.get((style, edition_language(language)))
    return found[0] if found else style


def _choose_style(app: Any, config: Any) -> None:
    if not hasattr(config, "bibtex_reference_style"):  # sphinxcontrib-bibtex is not in this build
        return
    config.bibtex_reference_style = reference_style(config.bibtex_reference_style, config.language)


def setup(app: Any) -> None:
    try:
        from sphinxcontrib.bibtex.plugin import register_plugin
    except ImportError:  # pragma: no cover - no sphinxcontrib-bibtex: no citations to localise
        return
    for name, words in STYLE_WORDS.values():
        register_plugin(PLUGIN_GROUP, name, _style_class(words), force=True)
    app.connect("config-inited", _choose_style)
