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

from posviz.sphinxext._glue import chinese_number_text, ungrouped_spec, ungrouped_text

PAGE = (
    "# Page\n\n"
    "Context {glue:text}`ctx:,` tokens, base {glue:text}`base:,.0f`, {glue:text}`ratio:,.2f` and "
    "{glue:text}`wave` positions, head {glue:text}`head`, bias {glue:text}`neg:.2f`.\n"
)
SAVED = {
    "ctx": {"data": {"text/plain": "8192"}},
    "base": {"data": {"text/plain": "500000.0"}},
    "ratio": {"data": {"text/plain": "1234.5678"}},
    "wave": {"data": {"text/plain": "'60 000'"}},  # a value glued already formatted (book/rope.md)
    "head": {"data": {"text/plain": "'GPT-3 175B'"}},  # a space between two numbers is no separator
    "neg": {"data": {"text/plain": "-0.8712"}},  # Chinese writes the minus sign U+2212
}
CATALOG = {
    "Page": "页面",
    PAGE.split("\n\n")[1].strip(): (
        "上下文 {glue:text}`ctx:,` 个词元，基数 {glue:text}`base:,.0f`，{glue:text}`ratio:,.2f` 与 "
        "{glue:text}`wave` 个位置，头 {glue:text}`head`，偏置 {glue:text}`neg:.2f`。"
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
    assert "上下文 8192 个词元，基数 500000，1234.57 与 60000 个位置，头 GPT-3 175B，偏置 \u22120.87。" in text, text
    assert not re.search(r"\d,\d{3}", text), text


def test_english_glued_numbers_keep_their_separators(tmp_path: Path, fake_mathjax: Path) -> None:  # noqa: F811
    text = _text(tmp_path, "en")
    english = "Context 8,192 tokens, base 500,000, 1,234.57 and 60 000 positions, head GPT-3 175B, bias -0.87."
    assert english in text, text


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


@pytest.mark.parametrize(
    ("text", "chinese"),
    [
        ("-0.87", "\u22120.87"),
        ("x = -15.75", "x = \u221215.75"),
        ("(-1.68 ± 0.05)", "(\u22121.68 ± 0.05)"),
        ("-8,192.5", "\u22128192.5"),
        ("1-2", "1-2"),  # a range, not a sign
        ("rope-pi", "rope-pi"),
        ("L_max-1", "L_max-1"),
        ("1e-05", "1e-05"),
    ],
)
def test_a_glued_negative_number_takes_the_minus_sign_in_chinese(text: str, chinese: str) -> None:
    assert chinese_number_text(text) == chinese


# --- figures and the lab's tables: the same style (posviz.i18n.translate_figure) ---------------


def _bar_figure() -> dict:
    """A figure as a chapter draws it in English: numbers formatted before they reach the figure."""
    from posviz.i18n import META_KEY

    record = {"cannot run": ["cannot run", {}], "tokens/s": ["tokens/s", {}]}
    return {
        "data": [
            {
                "type": "bar",
                "x": ["1,024", "8,192"],
                "text": ["11,160", "cannot run"],
                "hovertext": ["rope, L = 1,024: 11,160 tokens/s", "GPT-3 175B"],
                "hovertemplate": "%{y:,} tokens/s",
                "uid": "a,123",  # an id, never text
            }
        ],
        "layout": {"meta": {META_KEY: record}, "xaxis": {"categoryarray": ["1,024", "8,192"]}},
    }


def test_chinese_figures_write_numbers_in_plain_digits() -> None:
    from posviz.i18n import translate, translate_figure

    zh = translate_figure(_bar_figure(), "zh_CN")
    trace = zh["data"][0]
    assert trace["text"] == ["11160", translate("cannot run", "zh_CN")]
    assert trace["x"] == zh["layout"]["xaxis"]["categoryarray"] == ["1024", "8192"]  # categories stay matched
    assert trace["hovertext"][0].startswith("rope, L = 1024: 11160 ") and trace["hovertext"][1] == "GPT-3 175B"
    assert trace["uid"] == "a,123" and trace["hovertemplate"].startswith("%{y:,}")
    assert zh["layout"]["separators"] == "."  # Plotly's own numbers (ticks, %{y:,}) ungrouped too


def test_english_figures_keep_their_separators() -> None:
    from posviz.i18n import translate_figure

    en = translate_figure(_bar_figure(), "en")
    assert en["data"][0]["text"] == ["11,160", "cannot run"] and "separators" not in en["layout"]


def test_the_lab_tables_read_plain_digits_in_chinese() -> None:
    from posviz.i18n import recording, tr
    from posviz.lab.tables import Table

    with recording() as record:
        markdown = f"| method | params | inference |\n|---|--:|--:|\n| rope | {627840:,} | {tr('cannot run')} |\n"
    table = Table(markdown, record)
    zh, en = table.translated("zh_CN"), table.translated("en")
    assert "| 627840 |" in zh and tr("cannot run") not in zh  # translated, and plain digits
    assert "| 627,840 |" in en


def test_a_self_checks_answer_reads_plain_digits_in_chinese() -> None:
    from posviz.selfcheck import Numeric, SelfCheck, self_check

    data = self_check(Numeric("How many?", answer=786432, why="L × d")).to_json()
    assert 'data-shown="786432"' in SelfCheck.from_json(data, "zh_CN")._repr_html_()
    assert 'data-shown="786,432"' in SelfCheck.from_json(data, "en")._repr_html_()


def test_a_glued_phrase_translates_its_phrase_fields_too() -> None:
    """A glued phrase whose field is itself a phrase (a method's label, a list) is translated whole:
    the field's message travels with the glue output (posviz.book.FIELDS_KEY)."""
    from posviz.book import _nested_messages
    from posviz.i18n import message_of, set_language, tr
    from posviz.lab._style import _LABELS
    from posviz.sphinxext._glue import translated_phrase

    set_language("en")
    label = tr(_LABELS["learned-random"])
    phrase = tr("{name} − {other}, {k}×", name=label, other=tr(_LABELS["rope"]), k=16)
    message = message_of(phrase)
    fields = _nested_messages(message)
    assert label in fields
    chinese = translated_phrase(message, fields, "zh_CN")
    assert "learned" not in chinese and "randomized" not in chinese, chinese
    assert chinese.endswith("16×")
    # without the fields the label stays English: what the glue did before
    assert "randomized" in translated_phrase(message, {}, "zh_CN")


def test_a_quoted_table_row_reads_as_the_table_names_it_in_both_editions() -> None:
    """The lab chapter quotes rows of its learning-rate table ("lr-flips"): the quoted phrase must be
    the row's own label, keys in English, the methods' labels in Chinese (it quoted English keys
    that no Chinese row showed)."""
    from posviz.book import _nested_messages
    from posviz.i18n import join_list, message_of, set_language, tr
    from posviz.lab import load_published
    from posviz.lab.tables import comparison_phrase, lr_sensitivity_table
    from posviz.sphinxext._glue import translated_phrase

    set_language("en")
    results = load_published()
    comparisons = [("t5", 16, "rope"), ("t5", 16, None)]
    table = lr_sensitivity_table(results, comparisons)
    phrases = [comparison_phrase(*c) for c in comparisons]
    rows = [line.split("|")[1].strip() for line in str(table).splitlines()[2:]]
    assert rows == phrases  # English: the row labels themselves
    glued = join_list([tr("“{row}”", row=p) for p in phrases])
    chinese = translated_phrase(message_of(glued), _nested_messages(message_of(glued)), "zh_CN")
    zh_rows = [line.split("|")[1].strip() for line in table.translated("zh_CN").splitlines()[2:]]
    for row in zh_rows:
        assert row in chinese, (row, chinese)
    assert "t5" not in chinese and "rope" not in chinese, chinese
