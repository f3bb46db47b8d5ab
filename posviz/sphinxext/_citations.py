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
# authors after the first of three or more), and its marks: Chinese writes "[Devlin 等人，2019；
# Radford 等人，2018]" (a full-width comma between author and year, a full-width semicolon between
# two references of one parenthetical citation).
STYLE_WORDS: dict[tuple[str, str], tuple[str, dict[str, str]]] = {
    ("author_year", "zh_CN"): ("author_year_zh_cn", {"sep2": " 和 ", "last_sep": " 和 ", "other": " 等人"}),
}
STYLE_MARKS: dict[str, dict[str, str]] = {"author_year_zh_cn": {"author_year_sep": "，", "parenthetical_sep": "；"}}


def _style_class(words: dict[str, str], marks: dict[str, str] | None = None) -> type:
    """sphinxcontrib-bibtex's author-year style with ``words`` for its person names and ``marks``
    (``author_year_sep``, ``parenthetical_sep``: between two references in one bracket)."""
    from sphinxcontrib.bibtex.style.referencing import BracketStyle, PersonStyle
    from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle

    marks = marks or {}
    between = {"sep": marks["parenthetical_sep"]} if "parenthetical_sep" in marks else {}
    author_year = marks.get("author_year_sep", ", ")

    @dataclass
    class LocalisedAuthorYearReferenceStyle(AuthorYearReferenceStyle):
        person: PersonStyle = field(default_factory=lambda: PersonStyle(**words))
        bracket_parenthetical: BracketStyle = field(default_factory=lambda: BracketStyle(**between))
        author_year_sep: Any = author_year

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
        register_plugin(PLUGIN_GROUP, name, _style_class(words, STYLE_MARKS.get(name)), force=True)
    app.connect("config-inited", _choose_style)
