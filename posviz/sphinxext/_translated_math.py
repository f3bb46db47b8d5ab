"""Translated display equations (and other literal blocks) that survive the build.

Sphinx's ``Locale`` transform translates a message by parsing its translation (the catalog's
msgstr) as a small document of its own, with the page's parser. For a *literal* node (a display
equation, a literal block, raw text) it first wraps the msgstr in reStructuredText's literal-block
notation, ``"::\\n\\n   " + msgstr``, so that the reST parser returns it verbatim. The book's pages
are MyST Markdown, and MyST reads that as a paragraph ``::`` followed by another paragraph:
Sphinx took the first paragraph's text for the equation. Every display equation whose
translation differs from its English (a translated ``\\text{...}``) came out as ``\\[::\\]``: the
number and nothing else (attention (1.9) and (1.14), sinusoidal (2.8), learned (3.11) and (3.13),
relative (4.5) in the first Chinese edition).

A translation of a literal node is literal text; it needs no parsing at all.
:class:`TranslateLiteralNodes` runs just before ``Locale`` and puts the msgstr in place verbatim,
whatever the parser, and takes the node out of ``Locale``'s way.

:class:`CheckTranslatedMath` then holds the line for any other path: after ``Locale``, every
equation of a translated page (display and inline) must be the English one up to the words of its
``\\text{...}`` (:func:`skeleton`); an equation lost, emptied or changed is a build warning (an
error under ``-W``), naming the page, the line and the equation.

:class:`PlainDigitsInMath` comes last, in an edition whose numbers have no thousands separator
(Chinese: ``posviz.i18n.UNGROUPED``): an equation that groups digits for English readers
(``10{,}000``, ``1\\,024``) writes them plainly there (``10000``, ``1024``), as that edition's
prose and figures do (:func:`plain_digits`). The check above compares equations up to that.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.transforms import SphinxTransform
from sphinx.util import logging
from sphinx.util.nodes import LITERAL_TYPE_NODES, extract_messages

logger = logging.getLogger(__name__)

# Sphinx's Locale transform runs at priority 20.
RECORD_PRIORITY = 18
BEFORE_LOCALE = 19
AFTER_LOCALE = 21
_RECORD = "posviz_math_before_translation"
_TEXT_COMMAND = re.compile(r"\\(?:text|textrm|textit|textbf|textsf|mbox)\s*\{")


# A number whose digits are grouped in TeX: 10{,}000, 1\,024 (a thin space), 1{,}000{,}000
_GROUPED_DIGITS = re.compile(r"(?<![\d.])\d{1,3}(?:(?:\{,\}|\\,)\d{3})+(?![\d])")


def plain_digits(math: str) -> str:
    """``math`` with every number's group separators removed: ``10{,}000`` -> ``10000``,
    ``1\\,024`` -> ``1024``; anything else (``40\\,\\mu``, ``f(1, 2)``, ``0.125{,}5``) unchanged."""
    return _GROUPED_DIGITS.sub(lambda m: re.sub(r"\{,\}|\\,", "", m.group(0)), math)


def skeleton(math: str) -> str:
    """An equation without the words a translation may change: each ``\\text{...}`` (and
    ``\\textrm``, ``\\textit``, ``\\textbf``, ``\\textsf``, ``\\mbox``) emptied, nested braces
    included, numbers in plain digits (:func:`plain_digits`: one edition may group them, the other
    not) and runs of white space as one space."""
    out, i = [], 0
    for match in _TEXT_COMMAND.finditer(math):
        if match.start() < i:  # inside a \text that was already emptied
            continue
        out.append(math[i : match.end()])
        depth, j = 1, match.end()
        while j < len(math) and depth:
            if math[j] == "\\":
                j += 2
                continue
            depth += {"{": 1, "}": -1}.get(math[j], 0)
            j += 1
        out.append("}")
        i = j
    out.append(math[i:])
    return " ".join(plain_digits("".join(out)).split())


def _catalog(transform: SphinxTransform) -> dict[str, str] | None:
    """The page's merged message catalog (as ``Locale`` reads it), ``None`` when it has none."""
    from sphinx.locale import init as init_locale
    from sphinx.util.i18n import docname_to_domain

    config, env = transform.config, transform.env
    if not config.language or config.language == "en":
        return None
    domain = docname_to_domain(env.docname, config.gettext_compact)
    dirs = [str(Path(env.srcdir, d)) for d in config.locale_dirs]
    catalog, has_catalog = init_locale(dirs, config.language, domain)
    if not has_catalog:
        return None
    catalogues = [getattr(catalog, "_catalog", None)]
    while (catalog := getattr(catalog, "_fallback", None)) is not None:
        catalogues.append(getattr(catalog, "_catalog", None))
    merged: dict[str, str] = {}
    for catalogue in filter(None, reversed(catalogues)):
        merged |= catalogue
    return merged


def _is_translated_fragment(document: nodes.document) -> bool:
    """A msgstr parsed by ``Locale`` (a small document of its own): nothing to translate there."""
    return str(document.get("source", "")).endswith("<translated>")


def _math_nodes(document: nodes.document) -> list[nodes.Element]:
    return [n for n in document.findall(lambda n: isinstance(n, (nodes.math, nodes.math_block)))]


def _translating(transform: SphinxTransform) -> bool:
    return not _is_translated_fragment(transform.document) and getattr(transform.app.builder, "name", "") != "gettext"


class RecordMath(SphinxTransform):
    """Before any translation: the page's equations, for :class:`CheckTranslatedMath`."""

    default_priority = RECORD_PRIORITY

    def apply(self, **kwargs: Any) -> None:
        if _translating(self) and _catalog(self) is not None:
            self.document[_RECORD] = Counter(skeleton(n.astext()) for n in _math_nodes(self.document))


class TranslateLiteralNodes(SphinxTransform):
    """Translate display equations and other literal nodes verbatim, before ``Locale`` parses
    their translation with a parser that does not know reST's ``::`` notation."""

    default_priority = BEFORE_LOCALE

    def apply(self, **kwargs: Any) -> None:
        catalog = _catalog(self) if _translating(self) else None
        if catalog is None:
            return
        for node, msg in list(extract_messages(self.document)):
            if not isinstance(node, LITERAL_TYPE_NODES):
                continue
            msgstr = catalog.get(msg, "")
            if not msgstr.strip() or msgstr == msg:
                continue  # untranslated or the same: Locale leaves it as it is
            # the node's text as the message holds it (myst's display math starts with a newline)
            text = msgstr if node.astext() == msg else msgstr.strip("\n")
            node.children = []
            node += nodes.Text(text)
            node.rawsource = text
            node["translated"] = True
            node["translatable"] = False  # Locale and the gettext builder pass it by


class CheckTranslatedMath(SphinxTransform):
    """After ``Locale``: every equation of the English page is in the translated page, up to the
    words in its ``\\text{...}`` (a warning, an error under ``-W``, for each one lost or changed)."""

    default_priority = AFTER_LOCALE

    def apply(self, **kwargs: Any) -> None:
        before = self.document.attributes.pop(_RECORD, None)
        if before is None:
            return
        found = _math_nodes(self.document)
        after = Counter(skeleton(n.astext()) for n in found)
        for math, count in (before - after).items():
            logger.warning(
                "an equation lost in translation (%d of %d): %r",
                count,
                before[math],
                math[:200],
                location=self.document,
                type="posviz",
                subtype="i18n-math",
            )
        for math in after - before:
            node = next((n for n in found if skeleton(n.astext()) == math), self.document)
            logger.warning(
                "an equation the English page does not have (the translation changed it?): %r",
                math[:200],
                location=node,
                type="posviz",
                subtype="i18n-math",
            )


class PlainDigitsInMath(SphinxTransform):
    """In an edition that writes numbers without a thousands separator (``posviz.i18n.UNGROUPED``:
    Chinese), every equation's grouped numbers in plain digits (``10{,}000`` -> ``10000``)."""

    default_priority = AFTER_LOCALE + 1

    def apply(self, **kwargs: Any) -> None:
        from ..i18n import UNGROUPED
        from ._language import edition_language

        if _is_translated_fragment(self.document) or edition_language(self.config.language) not in UNGROUPED:
            return
        for node in _math_nodes(self.document):
            text = node.astext()
            plain = plain_digits(text)
            if plain != text:
                node.children = []
                node += nodes.Text(plain)


def setup(app: Any) -> None:
    app.add_transform(RecordMath)
    app.add_transform(TranslateLiteralNodes)
    app.add_transform(CheckTranslatedMath)
    app.add_transform(PlainDigitsInMath)
