"""Glued numbers in the edition's style (posviz.sphinxext._glue): plain digits in Chinese.

The book's Chinese style writes numbers without a thousands separator (8192, 10000: the glossary
and the preface's notation table); English keeps its commas. A ``{glue:text}`key:,``` role used to
show 8,192 on both editions. One-page builds as in tests/test_sphinxext_i18n.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_sphinxext_i18n import _build, fake_mathjax  # noqa: F401  (the fixture, shared)

from posviz.sphinxext._glue import ungrouped_spec, ungrouped_text

PAGE = (
    "# Page\n\n"
    "Context {glue:text}`ctx:,` tokens, base {glue:text}`base:,.0f`, {glue:text}`ratio:,.2f` and "
    "{glue:text}`wave` positions, head {glue:text}`head`.\n"
)
SAVED = {
    "ctx": {"data": {"text/plain": "8192"}},
    "base": {"data": {"text/plain": "500000.0"}},
    "ratio": {"data": {"text/plain": "1234.5678"}},
    "wave": {"data": {"text/plain": "'60 000'"}},  # a value glued already formatted (book/rope.md)
    "head": {"data": {"text/plain": "'GPT-3 175B'"}},  # a space between two numbers is no separator
}
CATALOG = {
    "Page": "页面",
    PAGE.split("\n\n")[1].strip(): (
        "上下文 {glue:text}`ctx:,` 个词元，基数 {glue:text}`base:,.0f`，{glue:text}`ratio:,.2f` 与 "
        "{glue:text}`wave` 个位置，头 {glue:text}`head`。"
    ),
}


def _text(tmp_path: Path, language: str) -> str:
    executed = tmp_path / "jupyter_execute"
    executed.mkdir(exist_ok=True)
    (executed / "index.glue.json").write_text(json.dumps(SAVED))
    html, warnings = _build(tmp_path, PAGE, CATALOG, language=language, name=f"glue-{language}")
    assert "WARNING" not in warnings, warnings
    body = html.split('<div class="body"', 1)[-1]
    return " ".join(re.sub(r"<[^>]+>", "", body).split())


def test_chinese_glued_numbers_are_plain_digits(tmp_path: Path, fake_mathjax: Path) -> None:  # noqa: F811
    text = _text(tmp_path, "zh_CN")
    assert "上下文 8192 个词元，基数 500000，1234.57 与 60000 个位置，头 GPT-3 175B。" in text, text
    assert not re.search(r"\d,\d{3}", text), text


def test_english_glued_numbers_keep_their_separators(tmp_path: Path, fake_mathjax: Path) -> None:  # noqa: F811
    text = _text(tmp_path, "en")
    assert "Context 8,192 tokens, base 500,000, 1,234.57 and 60 000 positions, head GPT-3 175B." in text, text


@pytest.mark.parametrize(
    ("spec", "plain"),
    [(",", ""), (",.0f", ".0f"), (",d", "d"), ("_x", "x"), (">12,.1f", ">12.1f"), (",>10d", ",>10d"), (".2f", ".2f")],
)
def test_the_grouping_option_and_only_it_leaves_the_spec(spec: str, plain: str) -> None:
    assert ungrouped_spec(spec) == plain  # a "," fill character (",>10d") is no grouping option


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        ("8,192", "8192"),
        ("1,000,000 tokens", "1000000 tokens"),
        ("60 000", "60000"),
        ("\u2212131\u202f072", "\u2212131072"),
        ("GPT-3 175B", "GPT-3 175B"),
        ("(1, 2)", "(1, 2)"),
        ("0.1,234", "0.1,234"),
        ("base 10 000", "base 10 000"),  # space groups only where the whole text is one number
    ],
)
def test_glued_text_loses_thousands_separators_only(text: str, plain: str) -> None:
    assert ungrouped_text(text) == plain
