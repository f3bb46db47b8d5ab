"""Sphinx's own words on the Chinese pages: its index titles, the field names of the API pages
("Parameters", "Return type"), its search page. They come from Sphinx's catalog, not the book's,
so the book's catalog tests never see them: a Chinese build that ran in the same process as the
English one (an early tools/build_book.py) wrote "Python Module Index" and "Return type" on Chinese
pages, and every other test passed.

Reads ``_build/html`` (``make book`` first; ``POSVIZ_SITE`` points elsewhere); no browser.
"""

from __future__ import annotations

import functools
import html
import os
import re
from pathlib import Path

import pytest
import sphinx
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(os.environ.get("POSVIZ_SITE", ROOT / "_build" / "html"))
ZH = SITE / "zh"
PAGES = sorted(ZH.glob("*.html")) + sorted(ZH.glob("book/*.html")) if ZH.exists() else []
if not PAGES:
    pytest.skip(f"{ZH} is not built: run `make book` first", allow_module_level=True)

# where Sphinx writes a word: an element's text up to its first child (a field name's colon is
# one: <dt>Return type<span class="colon">:</span>), less a final colon
SKIPPED = re.compile(r"<(pre|code|script|style|mjx-container)\b.*?</\1>", re.S)
ELEMENT_TEXT = re.compile(r"<(title|h1|h2|dt|th|caption|legend|label|button|a|span|p)\b[^>]*>([^<>]{2,60})<")


@functools.cache
def sphinx_words() -> dict[str, str]:
    """Sphinx's English words (the msgids of its zh_CN catalog) -> their translation, for those
    translated to something else (one or two words: the labels it writes, not its messages)."""
    po = Path(sphinx.__file__).parent / "locale" / "zh_CN" / "LC_MESSAGES" / "sphinx.po"
    with po.open("rb") as f:
        catalog = read_po(f)
    return {
        m.id: m.string
        for m in catalog
        if isinstance(m.id, str)
        and isinstance(m.string, str)
        and m.string
        and m.string != m.id
        and re.fullmatch(r"[A-Z][a-z]+(?: [A-Za-z]+){0,3}", m.id)
    }


def english_sphinx_words(text: str) -> list[str]:
    """The elements of ``text`` (a page's HTML) whose whole text is one of Sphinx's words in English."""
    words = sphinx_words()
    found = []
    for _, inner in ELEMENT_TEXT.findall(SKIPPED.sub("", text)):
        inner = html.unescape(inner).split("\u2014")[0].strip().rstrip(":").strip()
        if inner in words:
            found.append(inner)
    return found


def test_the_check_knows_sphinx_words_and_sees_them_in_english() -> None:
    words = sphinx_words()
    assert {"Python Module Index", "Return type", "Parameters", "Search"} <= set(words), sorted(words)[:20]
    page = (
        "<title>Python Module Index &#8212; book</title><h1>Python 模块索引</h1>"
        '<dt class="field-odd">Return type<span class="colon">:</span></dt><p>Parameters are numbers</p>'
    )
    assert english_sphinx_words(page) == ["Python Module Index", "Return type"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(SITE).as_posix())
def test_chinese_pages_write_sphinxs_words_in_chinese(page: Path) -> None:
    left = english_sphinx_words(page.read_text(encoding="utf-8"))
    assert not left, f"{page.relative_to(SITE)}: Sphinx's words in English: {sorted(set(left))}"
