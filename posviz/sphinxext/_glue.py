"""Glued numbers in translated paragraphs (the Chinese edition).

Sphinx translates a paragraph by parsing its translation (the catalog's msgstr) as a small
document of its own. myst-nb's glue roles look a key up in the notebook of *the document they are
in*, which that small document does not have, so every ``{glue:text}`key``` in a translated
paragraph failed ("No key ... found in glue data for this document"). The lookup now falls back
to the glue data that myst-nb saved for the page being read (``<output folder>/<page>.glue.json``,
the same file its cross-document ``path::key`` references read): the same numbers, in both editions.
A glued phrase made by :func:`posviz.i18n.tr` (``posviz.book.glue`` saves its message) is shown in
the edition's language.

Numbers follow the edition's style. A Chinese page writes them in plain digits (8192, 10000; the
glossary's and the preface's style): in a language of :data:`posviz.i18n.UNGROUPED` a
``{glue:text}`` role's format spec loses its thousands separator (``key:,`` shows 8192 there and
8,192 in English), and a value glued as an already formatted string (``"60 000"``) loses its
separators too (:func:`ungrouped_text`), and a negative number takes the minus sign U+2212
(−0.87, as the Chinese prose and math write it; :func:`chinese_number_text`). Every other
language is left as myst-nb formats it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from myst_nb.core.variables import RetrievalError, VariableOutput
from myst_nb.ext.glue import directives, roles, utils

from ..book import FIELDS_KEY
from ..i18n import META_KEY, UNGROUPED, _translated_record, tidy, translate
from ._language import edition_language

_original = utils.retrieve_glue_data
_original_text_run = getattr(roles.PasteTextRole.run, "original", roles.PasteTextRole.run)  # myst-nb's, once

# The grouping option of a format spec ([[fill]align][sign][z][#][0][width][grouping][.precision][type]):
# a "," or "_" followed only by a precision and a type (a "," fill character is followed by an align).
_GROUPING_OPTION = re.compile(r"[,_](?=(?:\.\d+)?[A-Za-z%]?$)")
# A number with thousands separators: comma groups anywhere (8,192 · 1,000,000); space-like groups
# (60 000, thin and no-break spaces) only where the whole glued text is that number, since a space
# between two numbers of a phrase ("GPT-3 175B") is no separator.
_COMMA_GROUPED = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d,])")
_SPACE_GROUPED = re.compile(r"\s*[-+\u2212]?\d{1,3}(?:[\u202f\u2009\u00a0 ]\d{3})+(?:\.\d+)?\s*")
# A hyphen-minus that is a number's sign: before a digit (or ".5"), not after a word, a digit or a
# closing bracket (so 1-2, rope-pi, x-1 and L_max-1 keep theirs).
_ASCII_MINUS = re.compile(r"(?<![\w.)\]}])-(?=\.?\d)")


def ungrouped_spec(spec: str) -> str:
    """A format spec without its grouping option (``",.0f"`` -> ``".0f"``, ``","`` -> ``""``)."""
    return _GROUPING_OPTION.sub("", spec, count=1)


def ungrouped_text(text: str) -> str:
    """Glued text in plain digits: ``8,192`` -> ``8192``, ``60 000`` -> ``60000`` (a whole number only)."""
    if _SPACE_GROUPED.fullmatch(text):
        return re.sub(r"[\u202f\u2009\u00a0 ](?=\d{3})", "", text)
    return _COMMA_GROUPED.sub(lambda m: m.group(0).replace(",", ""), text)


def chinese_number_text(text: str) -> str:
    """Glued text as a Chinese page writes numbers: plain digits and U+2212 (``-8,192.5`` -> ``−8192.5``)."""
    return _ASCII_MINUS.sub("\u2212", ungrouped_text(text))


def _language(document: nodes.document) -> str:
    config = getattr(getattr(document.settings, "env", None), "config", None)
    return edition_language(getattr(config, "language", None))


def _saved_glue(document: nodes.document) -> dict[str, Any]:
    env = getattr(document.settings, "env", None)
    folder = getattr(getattr(env, "mystnb_config", None), "output_folder", None)
    docname = getattr(env, "docname", None)
    if not folder or not docname:
        return {}
    *parts, name = docname.split("/")
    path = Path(folder, *parts, f"{name}.glue.json")
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def translated_phrase(message: list, fields: dict[str, list], language: str) -> str:
    """A glued phrase (``[msgid, fields]``) in ``language``, its fields that are phrases themselves
    (``fields``: English -> message, :data:`posviz.book.FIELDS_KEY`) translated first."""
    if not fields:
        return translate(message[0], language, **message[1])
    top = "\x00phrase"  # the phrase's own entry, under a key no English text has
    phrase = _translated_record({**fields, top: message}, language).get(top)
    text = phrase if phrase is not None else translate(message[0], language, **message[1])
    return tidy(text, language) if language == "zh_CN" else text  # no space beside full-width marks


def retrieve_glue_data(document: nodes.document, key: str) -> VariableOutput:
    """myst-nb's lookup, then the page's saved glue data for a document without a notebook."""
    try:
        return _original(document, key)
    except RetrievalError:
        if "nb_renderer" in document:  # a notebook that really lacks the key: myst-nb's warning
            raise
        saved = _saved_glue(document).get(key)
        if saved is None:
            raise
        data, metadata = dict(saved["data"]), saved.get("metadata", {})
        message = metadata.get(META_KEY)  # a phrase made by posviz.i18n.tr (posviz.book.glue)
        if message and "text/plain" in data:
            data["text/plain"] = repr(translated_phrase(message, metadata.get(FIELDS_KEY) or {}, _language(document)))
        return VariableOutput(data=data, metadata=metadata, nb_renderer=None, vtype="glue")


def paste_text(role: roles.PasteTextRole) -> tuple[list[nodes.Node], list[nodes.system_message]]:
    """myst-nb's ``{glue:text}`` role, its numbers in the edition's style (plain digits in Chinese)."""
    if _language(role.document) not in UNGROUPED:
        return _original_text_run(role)
    key, colon, spec = role.text.rpartition(":")
    if colon:
        role.text = f"{key}:{ungrouped_spec(spec)}"  # also what a pending ``path::key`` reference keeps
    pasted, messages = _original_text_run(role)
    for node in pasted:
        for text in node.findall(nodes.Text):
            text.parent.replace(text, nodes.Text(chinese_number_text(str(text))))
    return pasted, messages


paste_text.original = _original_text_run  # type: ignore[attr-defined]


def install() -> None:
    """Use :func:`retrieve_glue_data` in myst-nb's glue roles and directives and
    :func:`paste_text` as ``{glue:text}`` (idempotent)."""
    roles.retrieve_glue_data = retrieve_glue_data
    directives.retrieve_glue_data = retrieve_glue_data
    roles.PasteTextRole.run = paste_text  # type: ignore[method-assign]
