"""Two things that make the book's build faster and change nothing it writes.

* **Parallel reading and writing** (``sphinx-build -j``, ``tools/build_book.py``): Sphinx reads and
  writes in worker processes only when every extension says that it may. Two that jupyter-book
  loads say nothing, and Sphinx then warns (an error under ``-W``) and builds serially; both are
  safe, for the reasons in :data:`PARALLEL_SAFE`, so they are declared so here.
* **The Chinese search index** (:class:`SearchChinese`): Sphinx 7.4's Chinese indexer asks, for
  each of the ~23,000 words it stems, whether the word is one of the Latin terms seen so far, in
  a list that grows with every paragraph: 17 of the Chinese edition's 58 s of build here. The
  same question asked of a set gives the same answers, and the same index.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sphinx.search.zh import SearchChinese as _SphinxSearchChinese

# extension -> why it is safe in parallel (Sphinx's parallel_read_safe / parallel_write_safe)
PARALLEL_SAFE = {
    # it replaces TocTreeCollector.assign_section_numbers, which Sphinx runs in the main process
    # once every document is read (and merged): nothing of it runs in a worker
    "sphinx_multitoc_numbering": "section numbers are assigned in the main process",
    # its transforms and nodes act only for the LaTeX builders (they return at once for HTML)
    "sphinx_jupyterbook_latex": "it acts for the LaTeX builders only",
}


def declare_parallel_safe(app: Any) -> None:
    """At ``builder-inited``: the extensions of :data:`PARALLEL_SAFE` that declare nothing are
    declared safe to read and write in parallel."""
    for name in PARALLEL_SAFE:
        extension = app.extensions.get(name)
        if extension is None:
            continue
        if extension.parallel_read_safe is None:
            extension.parallel_read_safe = True
        if extension.parallel_write_safe is None:
            extension.parallel_write_safe = True


class _Terms(list):
    """A list (Sphinx extends it) whose ``in`` asks a set."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[str] = set()

    def extend(self, terms: Iterable[str]) -> None:
        terms = list(terms)
        super().extend(terms)
        self._seen.update(terms)

    def append(self, term: str) -> None:
        super().append(term)
        self._seen.add(term)

    def __contains__(self, term: object) -> bool:
        return term in self._seen


class SearchChinese(_SphinxSearchChinese):
    """Sphinx's Chinese indexer, its Latin terms (a class attribute there, shared by every
    instance) kept per instance in :class:`_Terms`: the same stems, found in constant time."""

    def __init__(self, options: dict[str, str]) -> None:
        self.latin_terms = _Terms()
        super().__init__(options)


def setup(app: Any) -> None:
    app.add_search_language(SearchChinese)
    app.connect("builder-inited", declare_parallel_safe)
