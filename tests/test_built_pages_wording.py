"""The Chinese edition's wording on the built pages: no English words left in its tables and
figure descriptions, no stray marks or spaces in figure descriptions, citations in the edition's
form, numbers without thousands separators; and the check that the text checks (these and
test_built_pages.py's) read a page's texts the same without its typeset math and scripts.

Reads ``_build/html`` (``make book`` first; ``POSVIZ_SITE`` points elsewhere); no browser.
test_built_pages.py holds the rest of the built-page text checks (Markdown left as text, English
prose on a Chinese page, the equations, the kinds of element and the stylesheets) and the helpers
shared here; importing it skips this module too when the site is not built.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from test_built_pages import CODE, EN_PAGES, NAMES, PAGES, SITE, ZH_PAGES, _english_prose, _soup, _twin

import posviz

# Names stay in Latin letters on a Chinese page: the lab's method ids (results.json's keys, quoted
# as `none` in the Chinese prose), the released models' ids, posviz's functions, libraries,
# function names of formulas, units, and any word with a capital or a digit (RoPE, T5, MiB, gpt-2).
FORMULA_NAMES = ("max", "min", "softmax", "ln", "log", "exp", "sin", "cos", "clip", "argmax")
UNITS = ("ms", "nat", "nats", "px")
UI_SKIP = "pre, code, script, style, mjx-container, .math, .bibliography, .citation, .cite"
QUOTED = re.compile(r"“[^”]*”|\"[^\"]*\"|‘[^’]*’")
IDENTIFIER = re.compile(r"[\w′-]*[_.^][\w′.-]+|\b[A-Za-z]+(?=\()")


@functools.cache  # a Chinese page's check reads its English twin's too: one parse each per worker
def _ui_texts(page: Path, whole: bool = False) -> tuple[str, ...]:
    """The words a page's tables (every cell) and figure descriptions (name and words) show, with
    code, math, quoted examples and identifiers taken out. The glossary's English column is
    English by design."""
    soup = _soup(page, whole)
    main = soup.select_one("main") or soup
    if page.stem == "glossary":
        for row in main.select("table tr"):
            cells = row.find_all(["td", "th"])
            if cells:
                cells[0].decompose()
    texts = []
    for figure in main.select("figure.posviz-figure"):
        words = figure.select_one(".posviz-figure-words p")
        texts += [figure.get("aria-label", ""), words.get_text(" ") if words else ""]
    for node in main.select(UI_SKIP):
        node.decompose()
    texts += [cell.get_text(" ") for cell in main.select("table th, table td")]
    return tuple(IDENTIFIER.sub(" ", QUOTED.sub(" ", " ".join(t.split()))) for t in texts)


@functools.cache
def _ids() -> frozenset[str]:
    from posviz.lab.model import ALL_METHODS
    from posviz.models.released import RELEASED
    from posviz.vislab.positions import METHODS as VISION_METHODS  # the miniature's ids (its tables' rows)

    models = {*RELEASED, *(re.sub(r"-[\w.]*\d[\w.]*$", "", name) for name in RELEASED)}  # gpt-oss-20b, gpt-oss
    return frozenset({*ALL_METHODS, *VISION_METHODS, *models, *FORMULA_NAMES, *UNITS, *posviz.__all__})


def _latin_words(text: str) -> list[str]:
    return [
        w
        for w in re.findall(r"[A-Za-z][A-Za-z0-9'-]*[A-Za-z0-9]", text)
        if not re.search(r"[A-Z0-9]", w) and w not in _ids() and not NAMES.match(w)
    ]


def _ui_words_left(page: Path) -> dict[str, str]:
    """English UI words (those of the English twin's tables and figure descriptions) on a Chinese
    page's tables and figure descriptions: word -> where."""
    vocabulary = {w for text in _ui_texts(SITE / page.relative_to(SITE / "zh")) for w in _latin_words(text)}
    left: dict[str, str] = {}
    for text in _ui_texts(page):
        for word in _latin_words(text):
            if word in vocabulary:
                left.setdefault(word, text[:80])
    return left


def test_the_ui_word_check_sees_english_cells() -> None:
    english = SITE / "book" / "extrapolation.html"
    words = {w for text in _ui_texts(english) for w in _latin_words(text)}
    assert {"method", "perplexity"} <= words and "rope" not in words and "softmax" not in words


@pytest.mark.parametrize("page", ZH_PAGES, ids=lambda p: p.relative_to(SITE).as_posix())
def test_chinese_tables_and_figure_descriptions_leave_no_english_ui_words(page: Path) -> None:
    left = _ui_words_left(page)
    assert not left, f"{page.name}: English UI words in tables or figure descriptions: {sorted(left.items())[:12]}"


@functools.cache  # three checks of a Chinese page read them: one parse per worker
def _figure_texts(page: Path, whole: bool = False) -> tuple[str, ...]:
    soup = _soup(page, whole)
    texts = []
    for figure in soup.select("figure.posviz-figure"):
        words = figure.select_one(".posviz-figure-words p")
        texts += [figure.get("aria-label", ""), words.get_text() if words else ""]
    return tuple(texts)


# A subscript mark joins a symbol and its index (L_max, θ_i, o_π(m)); any other "_" was left by
# joining pieces (" _max |weights|", "_长行规则": a subtitle taken for a subscript).
STRAY_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9\u0370-\u03ff′')\]])_|_(?![A-Za-z0-9\u0370-\u03ff(])")
FULL_WIDTH = "，。；：、！？）」』】（「『【"
SPACE_AT_FULL_WIDTH = re.compile(rf"[ \u00a0][{FULL_WIDTH[:10]}]|[{FULL_WIDTH[:7] + FULL_WIDTH[10:]}][ \u00a0]")
HAN = "\u3400-\u9fff"
SPACE_IN_CHINESE = re.compile(rf"[{HAN}][ \u00a0]+[{HAN}]")


def _marks(texts: Sequence[str], pattern: re.Pattern[str]) -> list[str]:
    return [t[max(0, m.start() - 12) : m.end() + 12] for t in texts for m in pattern.finditer(t)]


def test_the_figure_text_checks_see_stray_marks() -> None:
    assert _marks(["0.5 _max |权重|", "4 (L = 2048) _长行规则"], STRAY_UNDERSCORE)
    assert not _marks(["L_max = 64, θ_i, o′_m − o_π(m), num_buckets"], STRAY_UNDERSCORE)
    assert len(_marks(["12 个头： 8 头的斜率 ，再隔一取一", "（0.5 及以上）"], SPACE_AT_FULL_WIDTH)) == 2
    assert _marks(["截断后 偏移"], SPACE_IN_CHINESE) and not _marks(["长度 64 字节"], SPACE_IN_CHINESE)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(SITE).as_posix())
def test_figure_descriptions_have_no_stray_underscore(page: Path) -> None:
    stray = _marks(_figure_texts(page), STRAY_UNDERSCORE)
    assert not stray, f"{page.name}: stray '_' in figure descriptions: {stray[:6]}"


@pytest.mark.parametrize("page", ZH_PAGES, ids=lambda p: p.relative_to(SITE).as_posix())
def test_chinese_figure_descriptions_have_no_space_at_full_width_punctuation(page: Path) -> None:
    spaced = _marks(_figure_texts(page), SPACE_AT_FULL_WIDTH)
    assert not spaced, f"{page.name}: a space beside full-width punctuation: {spaced[:6]}"


@pytest.mark.parametrize("page", ZH_PAGES, ids=lambda p: p.relative_to(SITE).as_posix())
def test_chinese_figure_descriptions_have_no_space_between_chinese_characters(page: Path) -> None:
    spaced = _marks(_figure_texts(page), SPACE_IN_CHINESE)
    assert not spaced, f"{page.name}: a space between two Chinese characters: {spaced[:6]}"


# Citations: sphinxcontrib-bibtex's author-year form in the edition's language (posviz.sphinxext).
CITATION = re.compile(
    r'<span class="bibtex-citation"[^>]*>.*?</span>|\[<a class="reference internal"[^>]*>.*?</a>\]', re.S
)


def _citations(page: Path) -> list[str]:
    text = CODE.sub("", page.read_text(encoding="utf-8"))
    return [" ".join(re.sub(r"<(?!/?em\b)[^>]+>", "", c).split()) for c in CITATION.findall(text)]


CITING_PAGES = [p for p in EN_PAGES if p.stem != "references" and not p.stem.startswith("api")]  # not the docstrings


@pytest.mark.parametrize("page", CITING_PAGES, ids=lambda p: p.stem)
def test_citations_read_chinese_in_chinese_and_english_in_english(page: Path) -> None:
    english, chinese = _citations(page), _citations(_twin(page))
    assert len(english) == len(chinese), f"{page.name}: {len(english)} citations in English, {len(chinese)} in Chinese"
    latin = [c for c in chinese if "et al." in c or " and " in c]
    assert not latin, f"{page.name}: citations in English form on the Chinese page: {latin[:4]}"
    if any("et al." in c for c in english):
        assert any("等人" in c for c in chinese), f"{page.name}: no citation in Chinese form: {chinese[:4]}"
        assert not any("等人" in c for c in english)


# Numbers: the Chinese edition writes them in plain digits (8192, 10000: the glossary's and the
# preface's style), English with commas (8,192). Glued values, figure descriptions, the tables
# posviz prints and self-check answers included; code, math, citations and docstrings left out.
GROUPED_NUMBER = re.compile(r"\d,\d{3}(?!\d)")
NUMBER_SKIP = (
    "pre, code, script, style, mjx-container, .math, dl.py, .bibliography, .citation, .cite, nav.bd-links, .docstrings"
)


def _grouped_numbers(page: Path, whole: bool = False) -> list[str]:
    soup = _soup(page, whole)
    main = soup.select_one("main") or soup
    shown = [q.get("data-shown", "") for q in main.select("fieldset[data-shown]")]
    for node in main.select(NUMBER_SKIP):
        node.decompose()
    text = " ".join(main.get_text(" ").split())
    return [text[max(0, m.start() - 24) : m.end() + 6] for m in GROUPED_NUMBER.finditer(text)] + [
        f"self-check answer {v}" for v in shown if GROUPED_NUMBER.search(v)
    ]


def test_the_number_check_sees_thousands_separators() -> None:
    assert len(_grouped_numbers(SITE / "book" / "models.html")) > 5  # English keeps 8,192 and 131,072


@pytest.mark.parametrize("page", ZH_PAGES, ids=lambda p: p.relative_to(SITE).as_posix())
def test_chinese_pages_write_numbers_without_thousands_separators(page: Path) -> None:
    grouped = _grouped_numbers(page)
    assert not grouped, f"{page.name}: numbers with a thousands separator on a Chinese page: {grouped[:8]}"


def test_the_text_checks_read_the_same_without_math_and_scripts() -> None:
    """The page the text checks read (:func:`_soup`) gives each of them the texts the whole page
    gives: a Chinese chapter with equations, tables and figures, and the Chinese glossary
    (equations in table cells). Needs those, or it proves nothing."""
    pages = [SITE / "zh" / "book" / "relative.html", SITE / "zh" / "book" / "glossary.html"]
    math_in_a_cell = re.compile(r"<td[^>]*>(?:(?!</td>).)*<mjx-container", re.S)
    assert any(math_in_a_cell.search(page.read_text(encoding="utf-8")) for page in pages), "no equation in a table"
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assert html.count("<mjx-container") > 30 and "<table" in html and "<script" in html, page
        for read in (_english_prose, _ui_texts, _figure_texts, _grouped_numbers):
            assert read(page) == read(page, whole=True), f"{read.__name__} reads {page.name} otherwise without math"
    assert _figure_texts(pages[0]) and _ui_texts(pages[0]), "nothing read"
