"""posviz/sphinxext/_build_speed.py: the Chinese search index as Sphinx makes it, made faster; the
extensions declared safe for a parallel build."""

from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace

import pytest
from babel.messages.pofile import read_po
from sphinx.extension import Extension
from sphinx.search.zh import SearchChinese as SphinxSearchChinese

from posviz.sphinxext._build_speed import PARALLEL_SAFE, SearchChinese, _Terms, declare_parallel_safe

ROOT = Path(__file__).resolve().parents[1]
# Latin words whose stem is shorter than 3 letters ("abs" -> "ab", "its" -> "it"): Sphinx keeps
# them whole where it has seen them as Latin terms, so the membership test decides their stem
SHORT_STEMS = "绝对值用 abs 计算，its 值不变；RoPE 与 ALiBi 的 ties。"


def _texts() -> list[str]:
    """:data:`SHORT_STEMS` and a chapter's Chinese prose (the RoPE chapter's catalog: the whole
    edition took Sphinx's own indexer 16 s here, the quadratic time that posviz's saves)."""
    with (ROOT / "locale" / "zh_CN" / "LC_MESSAGES" / "book" / "rope.po").open("rb") as f:
        return [SHORT_STEMS] + [m.string for m in read_po(f) if isinstance(m.string, str) and m.string]


def _index(language: object, texts: list[str]) -> list[list[str]]:
    """What the index builder does with each text: split it, stem each word, keep those it keeps."""
    out = []
    for text in texts:
        stems = [language.stem(word) for word in language.split(text)]
        out.append([s for s in stems if language.word_filter(s)])
    return out


@pytest.fixture
def sphinx_terms() -> object:
    """Sphinx's class-level list of Latin terms, empty for the test and restored after it."""
    kept = SphinxSearchChinese.latin_terms
    SphinxSearchChinese.latin_terms = []
    yield
    SphinxSearchChinese.latin_terms = kept


def test_the_chinese_index_stems_every_word_as_sphinxs_does(sphinx_terms: None) -> None:
    texts = _texts()
    assert len(texts) > 80
    ours, theirs = _index(SearchChinese({}), texts), _index(SphinxSearchChinese({}), texts)
    assert ours == theirs
    assert {"abs", "its"} <= set(ours[0]), ours[0]  # kept whole: seen as Latin terms


def test_the_comparison_sees_a_terms_list_that_forgets(sphinx_terms: None) -> None:
    """The test above fails for an indexer whose Latin terms answer ``in`` wrongly."""

    class Forgetful(_Terms):
        def __contains__(self, term: object) -> bool:
            return False

    class Broken(SearchChinese):
        def __init__(self, options: dict[str, str]) -> None:
            super().__init__(options)
            self.latin_terms = Forgetful()

    texts = [SHORT_STEMS]
    assert _index(Broken({}), texts) != _index(SphinxSearchChinese({}), texts)


def test_the_terms_answer_as_a_list_does() -> None:
    rng = random.Random(0)
    terms, plain = _Terms(), []
    for _ in range(200):
        words = [rng.choice("abcdefgh") * rng.randint(1, 3) for _ in range(rng.randint(0, 4))]
        if rng.random() < 0.5:
            terms.extend(iter(words))  # an iterator: read once
            plain.extend(words)
        elif words:
            terms.append(words[0])
            plain.append(words[0])
        probe = rng.choice("abcdefgh") * rng.randint(1, 3)
        assert (probe in terms) == (probe in plain)
    assert list(terms) == plain


def test_each_indexer_keeps_its_own_terms() -> None:
    """Sphinx's list is a class attribute that outlives a build; posviz's belongs to the build."""
    first = SearchChinese({})
    first.split("用 abs 计算")
    assert "abs" in first.latin_terms and "abs" not in SearchChinese({}).latin_terms


def _app(**declared: bool | None) -> SimpleNamespace:
    extensions = {}
    for name, safe in declared.items():
        extensions[name] = Extension(name, None, parallel_read_safe=safe, parallel_write_safe=safe)
    return SimpleNamespace(extensions=extensions)


def test_the_silent_extensions_are_declared_parallel_safe() -> None:
    app = _app(sphinx_multitoc_numbering=None, sphinx_jupyterbook_latex=None, other_silent=None)
    declare_parallel_safe(app)
    for name in PARALLEL_SAFE:
        assert app.extensions[name].parallel_read_safe is True
        assert app.extensions[name].parallel_write_safe is True
    assert app.extensions["other_silent"].parallel_read_safe is None  # only the two it knows


def test_an_extension_that_says_no_is_left_so() -> None:
    app = _app(sphinx_multitoc_numbering=False)  # a later release that declares itself unsafe
    declare_parallel_safe(app)
    assert app.extensions["sphinx_multitoc_numbering"].parallel_read_safe is False
    declare_parallel_safe(_app())  # neither loaded: nothing to declare
