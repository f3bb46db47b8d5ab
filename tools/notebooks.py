"""Keep the chapter notebooks launchable: one setup cell per chapter and a paired ``.ipynb``.

The chapters are MyST Markdown notebooks (``book/*.md``: reviewable diffs). Colab opens only
``.ipynb``, so each chapter also has a paired ``book/<name>.ipynb`` without outputs, generated
from the ``.md`` by this script (never edited by hand; the book build ignores it).

Colab renders no MyST, and neither does JupyterLab without the ``jupyterlab-myst`` extension,
so the paired notebooks carry plain Markdown (tools/myst_plain.py): equation numbers, author-year
citations, section titles and collapsed solutions, as the book shows them.

The first code cell of every chapter is the *setup cell*, generated from ``_config.yml``
(``repository.url`` and ``repository.branch``: the one setting behind every launch link). On
Colab, where ``posviz`` is missing, it installs the book's library from that repository and
branch and turns on Colab's widget manager; locally and on Binder it does nothing. The
environment variable ``POSVIZ_INSTALL`` overrides what it installs (the tests point it at a
freshly built wheel).

    python tools/notebooks.py          # rewrite setup cells and paired notebooks
    python tools/notebooks.py --check  # exit 1 if anything is out of date (CI)
"""

from __future__ import annotations

import argparse
import re
import sys
from functools import cache
from pathlib import Path

import jupytext
import nbformat
import yaml
from myst_plain import _edition, config, glue_places, plain_markdown

ROOT = Path(__file__).resolve().parents[1]
TAG = "colab-setup"

SETUP = """\
# Setup for Colab: install this book's library when it is missing (does nothing locally or on Binder).
import importlib.util
import os
import subprocess
import sys

if importlib.util.find_spec("posviz") is None:
    _source = os.environ.get("POSVIZ_INSTALL", "posviz @ git+{url}@{branch}")
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", _source])
if "google.colab" in sys.modules:  # Plotly's FigureWidget needs Colab's third-party widget manager
    from google.colab import output
    output.enable_custom_widget_manager()"""


# The translated editions' notebooks: zh/book/<chapter>.ipynb, from the same source and the book's
# catalogs (locale/<language>/LC_MESSAGES/book/<chapter>.po); the Chinese pages' launch buttons
# open them (tools/i18n.py sets the edition's path_to_docs). Their setup cell also draws the
# figures in the edition's language.
EDITIONS = {"zh_CN": "zh"}


@cache
def book_catalog(language: str) -> dict[str, str]:
    """Every page's translations of one language, merged: msgid -> msgstr."""
    from babel.messages.pofile import read_po

    messages: dict[str, str] = {}
    for po in sorted((ROOT / "locale" / language / "LC_MESSAGES" / "book").glob("*.po")):
        with po.open("rb") as f:
            messages.update({m.id: m.string for m in read_po(f) if m.id and m.string and not m.fuzzy})
    return messages


# where a message may start in a Markdown cell: a line's start, after a heading, list, quote or
# table marker, or an admonition's opening; and end: a line's end or a table cell's
_BLOCK_START = (
    r"(?m)(^[ \t]*(?:#{1,6}[ \t]+|[-*+][ \t]+|\d+\.[ \t]+|>[ \t]*|\|[ \t]*|(?:[^|\n]*\|[ \t]*)+"
    r"|:{3,}\{[\w-]+\}[ \t]+)?)"
)
_BLOCK_END = r"(?=[ \t]*(?:\||$))"


_SPACE = r"(?:[ \t]*\n[ \t]*(?:>[ \t]*)?|[ \t]+)"  # a space of a message: one, or a line break in the source


@cache
def _message_patterns(language: str) -> list[tuple[str, re.Pattern, str]]:
    """(first word, pattern, translation) of every message of a language, longest first."""
    catalog = book_catalog(language)
    out = []
    for msgid in sorted(catalog, key=len, reverse=True):
        body = _SPACE.join(re.escape(word) for word in re.split(r"[ \n]+", msgid.strip()))
        out.append((msgid.split()[0], re.compile(_BLOCK_START + body + _BLOCK_END), catalog[msgid]))
    return out


def translate_markdown(source: str, language: str) -> str:
    """A MyST Markdown cell with every paragraph, heading, list item, table cell and admonition
    title that the edition's catalogs translate replaced by its translation (longest first)."""
    for first, pattern, translation in _message_patterns(language):
        if first in source:
            source = pattern.sub(lambda m, t=translation: m.group(1) + t, source)
    return source


def setup_source(cfg: dict | None = None) -> str:
    repo = (cfg or config())["repository"]
    return SETUP.format(url=repo["url"].rstrip("/"), branch=repo.get("branch", "main"))


def chapters() -> list[Path]:
    """Every page in ``_toc.yml`` that is a notebook (has a kernelspec)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part.get("chapters", [])]
    files += [c["file"] for c in toc.get("chapters", [])]
    pages = [ROOT / f"{f}.md" for f in files]
    return [p for p in pages if p.exists() and "kernelspec:" in p.read_text().split("\n---", 1)[0]]


def with_setup_cell(nb: nbformat.NotebookNode, source: str) -> nbformat.NotebookNode:
    """The notebook with its setup cell first (replaced if present, inserted if not)."""
    cells = [c for c in nb.cells if TAG not in c.get("metadata", {}).get("tags", [])]
    cell = nbformat.v4.new_code_cell(source, metadata={"tags": ["remove-cell", TAG]})
    first_code = next((i for i, c in enumerate(cells) if c.cell_type == "code"), len(cells))
    # keep the title (and any text before the first code cell) above the setup cell
    nb.cells = [*cells[:first_code], cell, *cells[first_code:]]
    return nb


def paired_ipynb(nb: nbformat.NotebookNode, language: str = "en") -> str:
    """The Colab notebook: no outputs, no execution counts, stable cell ids, Colab-friendly metadata.

    In a translated edition (``language``), the Markdown is translated with the book's catalogs."""
    _edition.update(
        language=language,
        folder=EDITIONS.get(language, ""),
        catalog=book_catalog(language) if language in EDITIONS else {},
    )
    out = nbformat.from_dict(nb)
    out.metadata.pop("jupytext", None)
    out.metadata.setdefault("kernelspec", {"display_name": "Python 3", "language": "python", "name": "python3"})
    out.metadata["language_info"] = {"name": "python"}
    out.metadata["colab"] = {"provenance": []}
    places = glue_places(out.cells)
    for i, cell in enumerate(out.cells):
        cell["id"] = f"cell-{i}"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        elif cell.cell_type == "markdown":
            source = translate_markdown(cell.source, language) if _edition["catalog"] else cell.source
            cell.source = plain_markdown(source, places[i])
    _edition.update(language="en", folder="", catalog={})
    return jupytext.writes(out, fmt="ipynb")


def edition_setup(source: str, language: str) -> str:
    """The setup cell of a translated notebook: the same, then figures in the edition's language."""
    return f'{source}\n\nimport posviz\n\nposviz.set_language("{language}")  # figures and explorers in this language'


def sync(check: bool) -> list[str]:
    """Rewrite (or, with ``check``, only report) what is out of date."""
    source = setup_source()
    stale = []
    for md in chapters():
        nb = with_setup_cell(jupytext.read(md, fmt="md:myst"), source)
        text = re.sub(r"\n *jupytext_version: [^\n]*", "", jupytext.writes(nb, fmt="md:myst"))  # version-free
        targets = {md: text, md.with_suffix(".ipynb"): paired_ipynb(nb)}
        for language, folder in EDITIONS.items():
            translated = with_setup_cell(jupytext.read(md, fmt="md:myst"), edition_setup(source, language))
            targets[ROOT / folder / md.relative_to(ROOT).with_suffix(".ipynb")] = paired_ipynb(translated, language)
        for path, text in targets.items():
            if not path.exists() or path.read_text() != text:
                stale.append(str(path.relative_to(ROOT)))
                if not check:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(text)
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report; exit 1 if anything is out of date")
    args = parser.parse_args(argv)
    stale = sync(args.check)
    if args.check and stale:
        print("out of date (run `python tools/notebooks.py`):\n  " + "\n  ".join(stale))
        return 1
    print("\n".join(f"wrote {s}" for s in stale) or "notebooks up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
