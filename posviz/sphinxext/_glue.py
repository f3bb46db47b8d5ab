"""Glued numbers in translated paragraphs (the Chinese edition).

Sphinx translates a paragraph by parsing its translation (the catalog's msgstr) as a small
document of its own. myst-nb's glue roles look a key up in the notebook of *the document they are
in*, which that small document does not have, so every ``{glue:text}`key``` in a translated
paragraph failed ("No key ... found in glue data for this document"). The lookup now falls back
to the glue data that myst-nb saved for the page being read (``<output folder>/<page>.glue.json``,
the same file its cross-document ``path::key`` references read): the same numbers, in both editions.
A glued phrase made by :func:`posviz.i18n.tr` (``posviz.book.glue`` saves its message) is shown in
the edition's language.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from docutils import nodes
from myst_nb.core.variables import RetrievalError, VariableOutput
from myst_nb.ext.glue import directives, roles, utils

from ..i18n import META_KEY, translate
from ._language import edition_language

_original = utils.retrieve_glue_data


def _saved_glue(document: nodes.document) -> dict[str, Any]:
    env = getattr(document.settings, "env", None)
    folder = getattr(getattr(env, "mystnb_config", None), "output_folder", None)
    docname = getattr(env, "docname", None)
    if not folder or not docname:
        return {}
    *parts, name = docname.split("/")
    path = Path(folder, *parts, f"{name}.glue.json")
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


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
        config = getattr(getattr(document.settings, "env", None), "config", None)
        if message and "text/plain" in data:
            text = translate(message[0], edition_language(getattr(config, "language", None)), **message[1])
            data["text/plain"] = repr(text)
        return VariableOutput(data=data, metadata=metadata, nb_renderer=None, vtype="glue")


def install() -> None:
    """Use :func:`retrieve_glue_data` in myst-nb's glue roles and directives (idempotent)."""
    roles.retrieve_glue_data = retrieve_glue_data
    directives.retrieve_glue_data = retrieve_glue_data
