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


def skeleton(math: str) -> str:
    """An equation without the words a translation may change: each ``\\text{...}`` (and
    ``\\textrm``, ``\\textit``, ``\\textbf``, ``\\textsf``, ``\\mbox``) emptied, nested braces
    included, and runs of white space as one space."""
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
    return " ".join("".join(out).split())


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


def setup(app: Any) -> None:
    app.add_transform(RecordMath)
    app.add_transform(TranslateLiteralNodes)
    app.add_transform(CheckTranslatedMath)
