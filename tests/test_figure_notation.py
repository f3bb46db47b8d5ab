"""The figures, explorers, figure descriptions and self-checks use the book's notation (issue 26).

The preface's notation table gives one symbol per meaning: ALiBi's slope is μₕ (the paper's m; m
is the query position), Shaw et al.'s clip distance is κ (the paper's k; k is the key), the
sinusoidal offset is δ and a bit index ℓ, and θ names the frequencies θᵢ = base^(−2i/d), never
the base. Each figure a chapter draws is checked as the English page shows it and as the Chinese
page shows it (translated, and its "figure in words"), and so is each explorer in both languages.
"""

from __future__ import annotations

import json
import re

import pytest
from i18n_cases import _every_chapter_figure, _explorers, _texts

import posviz.i18n as i18n
from posviz.i18n import set_language, translate_figure
from posviz.sphinxext._describe import describe_figure

# A letter on its own (not part of a word, a plotly placeholder or a product such as q·k).
_ALONE = r"(?<![\w{%.·′\\])LETTER(?![\w(′])"
_SUBSCRIPT_H = r"(?:ₕ|_h\b|_\{h\}|<sub>h</sub>)"

# (pattern, what the book writes instead), for every text of a chapter's figures and explorer
BASE_IS_NOT_THETA = (r"base θ|基数 θ|θ\s*=\s*(?:10\s?000|1e4)\b", "θ names the frequencies θᵢ, never the base")
RETIRED: dict[str, list[tuple[str, str]]] = {
    "alibi": [
        (_ALONE.replace("LETTER", "m" + _SUBSCRIPT_H + "?"), "ALiBi's slope is μₕ; m is the query position"),
        (r"\bslope m\b|斜率 m\b", "ALiBi's slope is μₕ"),
    ],
    "attention": [  # the permutation figure and the explorer have an ALiBi slope
        ("m" + _SUBSCRIPT_H, "ALiBi's slope is μₕ"),
        (r"\bslope m\b|斜率 m\b", "ALiBi's slope is μₕ"),
    ],
    "relative": [
        (_ALONE.replace("LETTER", "k"), "Shaw et al.'s clip distance is κ; k is the key"),
        (r"clip distance k|截断距离 k", "Shaw et al.'s clip distance is κ"),
    ],
    "sinusoidal": [
        (_ALONE.replace("LETTER", "k"), "the offset is δ and the bit index ℓ; k is the key"),
        (r"offset k|偏移 k|bit k|位 k\b", "the offset is δ, the bit index ℓ"),
    ],
    "rope": [],
    "learned": [],
}


def retired(text: str, chapter: str) -> list[str]:
    """The retired symbols in ``text`` of ``chapter``'s figures, with the book's symbol."""
    found = []
    for pattern, instead in [*RETIRED[chapter], BASE_IS_NOT_THETA]:
        if m := re.search(pattern, text):
            found.append(f"{text[max(0, m.start() - 15) : m.end() + 15]!r}: {instead}")
    return found


def _seen(figure: dict, language: str) -> set[str]:
    """Every text a reader of ``language`` sees in a figure: raw rich text, as plain text, and the
    figure's description (the page's 'figure in words')."""
    texts = set(_texts(figure))
    texts |= {i18n.plain_text(t, language) for t in texts}
    texts |= set(describe_figure(json.loads(json.dumps(figure)), language))
    return texts


@pytest.fixture(scope="module")
def chapter_figures() -> dict[str, dict]:
    set_language("en")  # made in English, as the book's execution caches them
    try:
        return _every_chapter_figure()
    finally:
        set_language("en")


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_chapter_figures_use_the_books_symbols(chapter_figures: dict[str, dict], language: str) -> None:
    found = {}
    for name, figure in chapter_figures.items():
        chapter = name.split("-")[0]
        shown = figure if language == "en" else translate_figure(json.loads(json.dumps(figure)), language)
        if problems := [p for t in sorted(_seen(shown, language)) for p in retired(t, chapter)]:
            found[name] = problems[:3]
    assert not found, found


@pytest.mark.parametrize("language", ["en", "zh_CN"])
@pytest.mark.parametrize("chapter", ["alibi", "attention", "learned", "relative", "rope", "sinusoidal"])
def test_explorers_use_the_books_symbols(chapter: str, language: str) -> None:
    set_language(language)
    try:
        box = _explorers()[chapter]()
        figure = box.figure.to_dict()
        shown = _seen(figure, language) | {c.description for c in box.controls.values()}
        if chapter == "alibi":  # the zero-slope label appears only at scale 0
            state = box.update(num_heads=8, head=1, length=10, scale=0.0)
            shown |= {str(v) for trace in state for k, v in trace.items() if k == "name"}
            assert any("μₕ = 0" in t for t in shown), sorted(shown)
    finally:
        set_language("en")
    problems = [p for t in sorted(shown) for p in retired(t, chapter)]
    assert not problems, problems


@pytest.mark.parametrize("chapter", ["alibi", "attention", "relative", "sinusoidal"])
def test_self_checks_use_the_books_symbols(chapter: str) -> None:
    """The chapter's self-check questions, English and Chinese (their catalog), without the
    letter-alone rules: a question may name the key k or a position m."""
    from babel.messages.pofile import read_po

    with (i18n.LOCALE / "zh_CN" / "LC_MESSAGES" / "selfcheck" / f"{chapter}.po").open("rb") as f:
        texts = [t for m in read_po(f) if m.id for t in (m.id, m.string)]
    rules = [(p, why) for p, why in RETIRED[chapter] if not p.startswith("(?<!")]
    problems = [f"{t[:50]!r}: {why}" for t in texts for p, why in [*rules, BASE_IS_NOT_THETA] if re.search(p, t)]
    assert not problems, problems


@pytest.mark.parametrize(
    ("chapter", "text"),
    [
        ("alibi", "head 3 of 8: mₕ = 1/8"),
        ("alibi", "slope m<sub>h</sub> (log scale)"),
        ("alibi", "ln(10)/m_h = 4.6"),
        ("alibi", "斜率 mₕ（对数坐标）"),
        ("attention", "ALiBi's slope m_h"),
        ("relative", "Clipped relative position, k = 3: 7 table rows"),
        ("relative", "r = clip(m − n, −k, k)"),
        ("relative", "截断距离 k"),
        ("sinusoidal", "offset k (positions)"),
        ("sinusoidal", "PE(p) · PE(p + k) / (d/2)"),
        ("sinusoidal", "bit k"),
        ("rope", "the base θ = 10000"),
        ("attention", "基数 θ"),
    ],
)
def test_the_check_sees_a_retired_symbol(chapter: str, text: str) -> None:
    assert retired(text, chapter)


@pytest.mark.parametrize(
    ("chapter", "text"),
    [
        ("alibi", "head 3 of 8: μₕ = 1/8"),
        ("alibi", "weights, equal q·k"),
        ("alibi", "distance δ = i − j"),
        ("relative", "r = clip(m − n, −κ, κ)"),
        ("relative", "query m = %{y}<br>key n = %{x}"),
        ("sinusoidal", "d = {d}<br>δ = %{x}"),
        ("rope", "key k at n = m − 4; m·θ<sub>i</sub>; base 10000"),
    ],
)
def test_the_check_passes_the_books_symbols(chapter: str, text: str) -> None:
    assert not retired(text, chapter)
