"""Keep the chapter notebooks launchable: one setup cell per chapter and a paired ``.ipynb``.

The chapters are MyST Markdown notebooks (``book/*.md``: reviewable diffs). Colab opens only
``.ipynb``, so each chapter also has a paired ``book/<name>.ipynb`` without outputs, generated
from the ``.md`` by this script (never edited by hand; the book build ignores it).

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
from pathlib import Path

import jupytext
import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
TAG = "colab-setup"

SETUP = '''\
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
    output.enable_custom_widget_manager()'''


def config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text())


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


def paired_ipynb(nb: nbformat.NotebookNode) -> str:
    """The Colab notebook: no outputs, no execution counts, stable cell ids, Colab-friendly metadata."""
    out = nbformat.from_dict(nb)
    out.metadata.pop("jupytext", None)
    out.metadata.setdefault("kernelspec", {"display_name": "Python 3", "language": "python", "name": "python3"})
    out.metadata["language_info"] = {"name": "python"}
    out.metadata["colab"] = {"provenance": []}
    for i, cell in enumerate(out.cells):
        cell["id"] = f"cell-{i}"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return jupytext.writes(out, fmt="ipynb")


def sync(check: bool) -> list[str]:
    """Rewrite (or, with ``check``, only report) what is out of date."""
    source = setup_source()
    stale = []
    for md in chapters():
        nb = with_setup_cell(jupytext.read(md, fmt="md:myst"), source)
        text = re.sub(r"\n *jupytext_version: [^\n]*", "", jupytext.writes(nb, fmt="md:myst"))  # version-free
        targets = {md: text, md.with_suffix(".ipynb"): paired_ipynb(nb)}
        for path, text in targets.items():
            if not path.exists() or path.read_text() != text:
                stale.append(str(path.relative_to(ROOT)))
                if not check:
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
