"""The built pages as text: Markdown that a cell or the source left unrendered.

Reads ``_build/html`` (``make book`` first; ``POSVIZ_SITE`` points elsewhere); no browser. A table
that a cell prints with ``IPython.display.Markdown`` once came out as a paragraph of pipes (the
notebook renderer's CommonMark has no tables), and a role that fails to resolve stays as text.
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(os.environ.get("POSVIZ_SITE", ROOT / "_build" / "html"))
PAGES = sorted(SITE.glob("book/*.html")) + sorted(SITE.glob("zh/book/*.html")) if SITE.exists() else []
ZH_PAGES = [p for p in PAGES if p.relative_to(SITE).parts[0] == "zh"]
if not PAGES:
    pytest.skip(f"{SITE} is not built: run `make book` first", allow_module_level=True)

CODE = re.compile(r"<(pre|code|script|style)\b.*?</\1>", re.S)
PARAGRAPH = re.compile(r"<p\b[^>]*>(.*?)</p>", re.S)
TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
ROLE = re.compile(r"\{[a-z][\w:-]*\}`")


def _paragraphs(page: Path) -> list[str]:
    text = CODE.sub("", page.read_text(encoding="utf-8"))
    return [html.unescape(re.sub(r"<[^>]+>", "", p)) for p in PARAGRAPH.findall(text)]


def test_a_raw_markdown_table_is_found() -> None:
    """The check itself: the paragraph the CommonMark renderer made of a table fails it."""
    page = "<p>| method | ppl |\n|—|–:|\n| none | 8.52 |</p>"
    lines = html.unescape(PARAGRAPH.findall(page)[0]).splitlines()
    assert sum(bool(TABLE_ROW.match(line)) for line in lines) >= 2


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(SITE).as_posix())
def test_no_markdown_left_as_text(page: Path) -> None:
    raw_tables, raw_roles = [], []
    for paragraph in _paragraphs(page):
        lines = paragraph.splitlines()
        if sum(bool(TABLE_ROW.match(line)) for line in lines) >= 2:
            raw_tables.append(paragraph[:120])
        raw_roles += ROLE.findall(paragraph)
    assert not raw_tables, f"Markdown tables shown as text: {raw_tables}"
    assert not raw_roles, f"MyST roles shown as text: {raw_roles}"


# The Chinese edition: no prose left in English. Checked: every paragraph, list item, heading,
# table cell, caption, admonition title, self-check question and figure description, with code,
# math and citations removed. Left alone, by design: the API reference's docstrings (the page says
# they stay English), bibliography entries, and names (a short allowlist).
CJK = re.compile(r"[\u3400-\u9fff]")
PROSE = "p, li, h1, h2, h3, h4, th, td, figcaption, .admonition-title, legend, label, summary, caption"
SKIP = (
    "pre, code, script, style, mjx-container, .math, dl.py, .bibliography, .citation, .cite, nav.bd-links,"
    " .cell_output table,"  # a table a cell prints (display(Markdown)) is code output: it may stay English
    " .docstrings"  # the API reference's docstrings (book/api.md wraps them in this container)
)
NAMES = re.compile(
    r"^(?:RoPE|ALiBi|NoPE|T5|Shaw|Transformer-XL|BERT[\w-]*|GPT[\w.-]*|PI|NTK|YaRN|xPos|LLaMA|PyTorch|"
    r"Hugging|Face|posviz|et|al|Colab|Binder|JupyterLab|English|Python|softmax|max_len|transformers|torch|"
    r"rotary-embedding-torch|x-transformers|eager|DistilBERT|[A-Za-z]|\W+)$"
)


def _english_prose(page: Path) -> list[str]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    main = soup.select_one("main") or soup
    for node in main.select(SKIP):
        node.decompose()
    if page.stem == "glossary":  # the table shows both languages by design: its English column
        for row in main.select("table tr"):
            cells = row.find_all(["td", "th"])
            if cells:
                cells[0].decompose()
    left = []
    for element in main.select(PROSE):
        if element.find(PROSE.split(", ")):  # judged by its innermost prose element
            continue
        text = " ".join(element.get_text(" ").split())
        words = [w for w in re.findall(r"[A-Za-z][\w'.-]*", text) if not re.search(r"[_.]\w", w)]  # not identifiers
        if CJK.search(text) or len(words) < 2 or all(NAMES.match(w) for w in words):
            continue
        left.append(text[:100])
    return left


@pytest.mark.parametrize("page", ZH_PAGES, ids=lambda p: p.relative_to(SITE).as_posix())
def test_chinese_pages_leave_no_prose_in_english(page: Path) -> None:
    assert not _english_prose(page), f"English left on {page.name}: {_english_prose(page)[:8]}"


def test_the_english_prose_check_sees_english() -> None:
    english = SITE / "book" / "rope.html"
    assert len(_english_prose(english)) > 20  # the same check on an English page fails loudly


@pytest.mark.parametrize("page", ZH_PAGES, ids=lambda p: p.relative_to(SITE).as_posix())
def test_chinese_pages_declare_their_language_and_link_their_twin(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert '<html lang="zh-CN"' in text
    # words that scripts write into the page: the solutions' show/hide hints
    assert "toggleHintShow = '点击显示'" in text and "Click to" not in text
    twin = SITE / page.relative_to(SITE / "zh")
    assert twin.exists()
    assert f'href="../../{page.relative_to(SITE / "zh").as_posix()}" hreflang="en"' in text
    assert f'href="../zh/{page.relative_to(SITE / "zh").as_posix()}" hreflang="zh-CN"' in twin.read_text(
        encoding="utf-8"
    ).replace('href="../zh/book/', 'href="../zh/book/')
