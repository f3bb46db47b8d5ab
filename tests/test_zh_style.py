"""The Chinese edition's typography, as rules a catalog or a piece of code can break (issue 26).

A fresh Chinese reader of the attention, learned, relative and lab chapters found marks that a
Chinese page does not use: a space after "。" where a bold lead-in ends (``**…。** 它``), ``_`` on a
figure's buttons (``U_m``), ``^(`` where a subtitle became a superscript, ASCII minus signs and
method keys in the lab's tables, the theme's English copyright line. Each rule here is checked
where it is made: the catalogs, ``posviz._text`` (figure descriptions), ``posviz.lab.tables``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

import posviz.i18n as i18n

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "locale" / "zh_CN" / "LC_MESSAGES" / "book"
POSVIZ = ROOT / "posviz" / "locale" / "zh_CN" / "LC_MESSAGES"
CHAPTERS = ("attention", "learned", "relative", "extrapolation")
CJK = "\u4e00-\u9fff"


def _messages(po: Path) -> list[tuple[str, str]]:
    with po.open("rb") as f:
        return [(m.id, m.string) for m in read_po(f) if m.id and isinstance(m.string, str) and m.string]


def _prose(text: str) -> str:
    """A message without its roles, inline code, math and link targets (where other rules hold)."""
    text = re.sub(r"\{[\w:-]+\}`[^`]*`", " ", text)
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$", " ", text, flags=re.S)
    return re.sub(r"\]\([^)]*\)", "]", text)


# --- rules, each shown to catch what the reviewer saw ---

# a space after a full-width mark (or a bold run ending in one) before a Chinese character
SPACE_AFTER_FULL_WIDTH = re.compile(rf"[。，；：！？、）](?:\*\*)? +(?=[{CJK}])")
# an ASCII list separator between two numbers inside a Chinese sentence: 1, 10, 30
ASCII_LIST = re.compile(rf"[{CJK}][^。\n]*?\d, [+\-−]?\d")


def bold_closed_after_mark(text: str) -> bool:
    """A bold run closed right after a full-width mark and followed by a Chinese character
    (``**…。**它``): CommonMark does not close it (that ``**`` is not right-flanking), so the page
    shows the asterisks, or a translator puts a space after the mark; the mark goes after the
    ``**`` instead (``**…**。它``). An opening ``**`` after a mark (``。**截断点**``) is fine."""
    marks = [m.start() for m in re.finditer(r"\*\*", text)]
    return any(
        i % 2 == 1 and 0 < at and text[at - 1] in "。，；：！？、" and re.match(rf"[{CJK}]", text[at + 2 : at + 3])
        for i, at in enumerate(marks)
    )


def test_rules_catch_what_the_reviewer_saw() -> None:
    assert SPACE_AFTER_FULL_WIDTH.search("**YaRN 的斜坡在这里被截断了。** 它的快端")
    assert SPACE_AFTER_FULL_WIDTH.search("几乎重合。 两者")
    assert not SPACE_AFTER_FULL_WIDTH.search("**单个 GPU**。 `gpu` 预设")  # a space before code stays
    assert bold_closed_after_mark("**YaRN 的斜坡在这里被截断了。**它的快端")
    assert not bold_closed_after_mark("**YaRN 的斜坡在这里被截断了**。它的快端")
    assert not bold_closed_after_mark("× 头数。**截断点**。各桶")
    assert ASCII_LIST.search("用 1, 10, 30, 100 中的每个倍率")
    assert not ASCII_LIST.search(_prose("用 1、10、30、100 中的每个倍率；$f(1, 2)$"))


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chinese_prose_has_no_space_after_full_width_marks(chapter: str) -> None:
    found = [
        s[:80]
        for _, s in _messages(BOOK / f"{chapter}.po")
        if SPACE_AFTER_FULL_WIDTH.search(s) or bold_closed_after_mark(s)
    ]
    assert not found, found


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chinese_prose_separates_listed_numbers_with_the_enumeration_comma(chapter: str) -> None:
    shapes = re.compile(r"\([^()]*\)")  # a tensor's shape, (头数, 64, 64), is no list
    found = [s[:80] for _, s in _messages(BOOK / f"{chapter}.po") if ASCII_LIST.search(shapes.sub(" ", _prose(s)))]
    assert not found, found


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chinese_equation_references_say_shi(chapter: str) -> None:
    """An equation number reads "式 (7.2)" in Chinese prose, never a bare "(7.2)" (a range: 式 (4.5)–(4.7))."""
    bare = re.compile(r"(?<!式 )(?<!式)(?<!–)\{eq\}`")
    found = [s[:80] for _, s in _messages(BOOK / f"{chapter}.po") if bare.search(s)]
    assert not found, found


@pytest.mark.parametrize("chapter", ["attention", "learned", "relative"])
def test_figure_buttons_and_self_checks_have_no_ascii_scripts(chapter: str) -> None:
    """No ``U_m`` / ``R_(m−n)`` / ``e^(−γ)`` in the Chinese figure text and self-checks of a chapter
    (names such as ``max_distance`` and link targets aside): Unicode scripts (Uₘ, θᵢ) instead."""
    script = re.compile(r"(?<![a-z])[A-Za-zα-ωΘ′)]_(?![a-z]{2,}\b)|\b[A-Z]_\w|\^\(")
    found = []
    for po in (POSVIZ / "figures" / f"{chapter}.po", POSVIZ / "selfcheck" / f"{chapter}.po"):
        for _, s in _messages(po):
            text = re.sub(r"<[^>]+>|\{[^{}]*\}", " ", _prose(s))
            if script.search(text):
                found.append(s[:80])
    assert not found, found


def test_descriptions_write_unicode_scripts_and_subtitles() -> None:
    assert i18n.plain_text("max |o′<sub>m</sub> − o<sub>n</sub>|", "zh_CN") == "max |o′ₘ − oₙ|"
    assert i18n.plain_text("U<sub>m</sub> 或 u · 内容", "zh_CN") == "Uₘ 或 u · 内容"
    subtitled = i18n.plain_text("留出困惑度<br><sup>训练长度 64 字节；d = 128</sup>", "zh_CN")
    assert subtitled == "留出困惑度；训练长度 64 字节；d = 128"
    assert i18n.tidy("与 NoPE（无位置） 的困惑度之差", "zh_CN") == "与 NoPE（无位置）的困惑度之差"
    assert i18n.tidy("“shaw” is", "en") == "“shaw” is"


def test_learned_table_past_its_length_cannot_run_in_the_legend() -> None:
    assert i18n.translate(" (no positions past {value})", "zh_CN", value=64) == "（超过 64 无法运行）"


def test_theme_copyright_line_is_chinese() -> None:
    messages = dict(_messages(POSVIZ / "theme.po"))
    assert messages["© Copyright %(copyright)s."] == "© 版权所有 %(copyright)s"


# --- the theme's author line and the equations of the built Chinese pages ---

SITE_ZH = ROOT / "_build" / "html" / "zh"
BUILT_ZH = sorted(SITE_ZH.glob("book/*.html")) if SITE_ZH.exists() else []


def _author_line(by: str, author: str) -> str:
    """The theme's author component as the book renders it (posviz.sphinxext's edited copy)."""
    import jinja2

    from posviz.sphinxext._assets import _theme_sources

    for theme, edits in _theme_sources():
        if "components/author.html" in edits:
            pattern, replacement = edits["components/author.html"]
            template = pattern.sub(replacement, (theme / "components/author.html").read_text(encoding="utf-8"))
            html = jinja2.Template(template).render(translate={"By": by}.get, author=author)
            return " ".join(re.sub(r"<[^>]+>", " ", html).split())
    raise AssertionError("posviz.sphinxext edits no author component of sphinx-book-theme")


def test_theme_author_line_has_no_space_after_the_colon() -> None:
    """The theme joins "By" and the author with a space: "作者： posviz 作者团队" in Chinese."""
    assert _author_line("作者：", "posviz 作者团队") == "作者：posviz 作者团队"
    assert _author_line("By", "The posviz authors") == "By The posviz authors"


@pytest.mark.skipif(not BUILT_ZH, reason="the Chinese edition is not built (make book)")
def test_built_chinese_pages_author_line() -> None:
    lines = {
        " ".join(re.sub(r"<[^>]+>", " ", m).split())
        for page in BUILT_ZH
        for m in re.findall(r'<p class="component-author">(.*?)</p>', page.read_text(encoding="utf-8"), re.S)
    }
    assert lines == {"作者：posviz 作者团队"}, lines


# a number grouped in TeX (10{,}000, 1\,024): the Chinese edition writes 10000 (posviz.sphinxext)
GROUPED_TEX = re.compile(r"\d(?:\{,\}|\\,)\d{3}(?!\d)")


def test_the_grouped_tex_rule_sees_what_english_writes() -> None:
    assert GROUPED_TEX.search("10{,}000") and GROUPED_TEX.search("1\\,024")
    assert not GROUPED_TEX.search("10000") and not GROUPED_TEX.search("40\\,\\mu")


@pytest.mark.skipif(not BUILT_ZH, reason="the Chinese edition is not built (make book)")
def test_built_chinese_equations_write_plain_digits() -> None:
    found = []
    for page in BUILT_ZH:
        text = re.sub(r"<pre\b.*?</pre>", "", page.read_text(encoding="utf-8"), flags=re.S)
        found += [f"{page.name}: {text[max(0, m.start() - 30) : m.end() + 10]}" for m in GROUPED_TEX.finditer(text)]
    assert not found, found[:6]


# --- the lab's tables: method labels and minus signs in Chinese ---


@pytest.fixture(scope="module")
def published() -> dict:
    from posviz.lab import load_published

    return load_published()


def test_chinese_tables_name_methods_as_the_figures_and_use_the_minus_sign(published: dict) -> None:
    from posviz.lab import lr_sensitivity, lr_sensitivity_table, paired_table

    english = paired_table(published)
    assert english.splitlines()[0].startswith("| method − none |")  # English: the keys, ASCII hyphens
    assert "| sinusoidal | -" in english
    chinese = english.translated("zh_CN")
    head, _, first, *_ = chinese.splitlines()
    assert head.startswith("| 方法 − NoPE（无位置） |"), head
    assert first.startswith("| 正弦 | −"), first
    assert not re.search(r"(?<![\w.])-\d", chinese), chinese
    assert not re.search(r"\| (none|sinusoidal|learned|shaw|t5|rope|alibi) \|", chinese), chinese

    comparisons = [("learned", 1, "none"), ("t5", 16, None)]
    sensitivity = lr_sensitivity_table(published, comparisons).translated("zh_CN")
    assert "| 可学习 − NoPE（无位置），1× |" in sensitivity, sensitivity
    assert "| T5 偏置：16× − 1×（自身的退化） |" in sensitivity, sensitivity
    # the chapter's code looks rows up by their keys
    assert next(iter(lr_sensitivity(published, comparisons))) == "learned − none, 1×"


def test_tables_made_in_chinese_equal_the_translated_ones(published: dict) -> None:
    from posviz.lab import paired_table

    translated = paired_table(published).translated("zh_CN")
    i18n.set_language("zh_CN")
    try:
        made = paired_table(published)
    finally:
        i18n.set_language("en")
    assert str(made) == translated
