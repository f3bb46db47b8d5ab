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
PAGES = sorted(SITE.glob("book/*.html")) if SITE.exists() else []
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


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_markdown_left_as_text(page: Path) -> None:
    raw_tables, raw_roles = [], []
    for paragraph in _paragraphs(page):
        lines = paragraph.splitlines()
        if sum(bool(TABLE_ROW.match(line)) for line in lines) >= 2:
            raw_tables.append(paragraph[:120])
        raw_roles += ROLE.findall(paragraph)
    assert not raw_tables, f"Markdown tables shown as text: {raw_tables}"
    assert not raw_roles, f"MyST roles shown as text: {raw_roles}"
