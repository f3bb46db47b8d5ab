"""posviz.i18n: the figures of every chapter in Chinese: each chapter's figures and explorers,
drawn in English and rendered in Chinese, have every label translated and no English word of the
UI left, and their descriptions (a page's "figure in words") read as Chinese (issue 26).
"""

from __future__ import annotations

import re

import pytest
from i18n_cases import _every_chapter_figure, _explorers, _texts, json_copy

import posviz.i18n as i18n
from posviz.i18n import catalog, set_language, translate_figure


@pytest.fixture(autouse=True)
def english():
    set_language("en")
    yield
    set_language("en")


# One figure of each chapter, drawn in English and rendered in Chinese: every label it records
# has a translation, and no English word of a recorded label is left in the figure's text.
def _figures():
    from posviz.lab.figures import perplexity_figure
    from posviz.lab.results import load_published
    from posviz.plots.alibi import alibi_slopes_figure
    from posviz.plots.attention import scale_figure
    from posviz.plots.learned import learned_cost_figure
    from posviz.plots.relative import t5_bucket_figure
    from posviz.plots.rope import rope_angle_figure
    from posviz.plots.sinusoidal import sinusoidal_waves_figure

    return {
        "attention": lambda: scale_figure(),
        "sinusoidal": lambda: sinusoidal_waves_figure(),
        "learned": lambda: learned_cost_figure(),
        "relative": lambda: t5_bucket_figure(),
        "rope": lambda: rope_angle_figure(),
        "alibi": lambda: alibi_slopes_figure(),
        "extrapolation": lambda: perplexity_figure(load_published()),
    }


@pytest.mark.parametrize("chapter", list(_figures()))
def test_every_label_of_a_chapter_figure_is_in_chinese(chapter: str) -> None:
    fig = _figures()[chapter]().to_dict()
    record = fig["layout"]["meta"][i18n.META_KEY]
    zh_catalog = catalog("zh_CN")
    missing = sorted({msgid for msgid, _ in record.values() if re.search("[A-Za-z]{3,}", msgid)} - set(zh_catalog))
    assert not missing, f"{chapter}: labels without a translation: {missing}"
    zh = translate_figure(fig, "zh_CN")
    left = [
        english
        for english, (msgid, _) in record.items()
        if re.search("[A-Za-z]{3,}", msgid) and zh_catalog[msgid] != msgid
        for text in _texts(zh)
        if re.search(r"(?<![A-Za-z0-9_])" + re.escape(english) + r"(?![A-Za-z0-9_])", text)
    ]
    assert not left, f"{chapter}: English labels left in the Chinese figure: {sorted(set(left))[:5]}"
    assert any(re.search(r"[\u4e00-\u9fff]", t) for t in _texts(zh))


@pytest.mark.parametrize("chapter", list(_explorers()))
def test_explorers_speak_chinese_after_set_language(chapter: str) -> None:
    """What a Chinese notebook's setup cell does (posviz.set_language("zh_CN")): the explorer's
    controls and its figure's titles are drawn in Chinese."""
    set_language("zh_CN")
    box = _explorers()[chapter]()
    descriptions = [c.description for c in box.controls.values()]
    assert any(re.search(r"[\u4e00-\u9fff]", d) for d in descriptions), descriptions
    texts = list(_texts(box.figure.to_dict()))
    assert any(re.search(r"[\u4e00-\u9fff]", t) for t in texts), texts[:10]
    ui_words = _english_ui_words()
    shown = {i18n.plain_text(t, "zh_CN") for t in texts} | set(descriptions)
    problems = {t[:60]: p for t in sorted(shown) if (p := _problems(t, ui_words))}
    assert not problems, problems


# --- every figure of every chapter, in Chinese: its text and its description (issue 26) ---


@pytest.fixture(scope="module")
def chapter_figures():
    set_language("en")  # made in English, as the book's execution caches them
    return _every_chapter_figure()


CJK_CHAR = "\u3400-\u4dbf\u4e00-\u9fff"
SENTENCE_WORDS = {"the", "hungry", "dog", "bites", "man"}  # the attention chapter's example sentence (data)
FULL_WIDTH = "，。：；！？、（）《》“”"


def _english_ui_words() -> set[str]:
    """Words of the figures' English messages that no translation keeps (names such as RoPE,
    ALiBi, softmax or clip appear in the translations too, so they are not UI words)."""
    from babel.messages.pofile import read_po

    def words(text: str) -> set[str]:
        text = re.sub(r"%\{[^}]*\}|\{[^}]*\}|<[^>]+>", " ", text)
        return {w.lower() for w in re.findall(r"(?<![\w_])[A-Za-z]{3,}(?![\w_])", text)}

    english, kept = set(), set()
    for po in sorted((i18n.LOCALE / "zh_CN" / "LC_MESSAGES").glob("**/*.po")):
        if po.parent.name == "selfcheck":
            continue
        with po.open("rb") as f:
            for m in read_po(f):
                if m.id and m.string:
                    english |= words(m.id)
                    kept |= words(m.string)
    return english - kept


def _problems(text: str, ui_words: set[str]) -> list[str]:
    problems = []
    if re.search(r"(?<![\w′)\]])_|_(?![\w(])", text):
        problems.append("a stray _")
    if m := re.search(rf"\s[{FULL_WIDTH}]|[（“]\s", text):
        problems.append(f"a space by full-width punctuation: {text[max(0, m.start() - 8) : m.end() + 8]!r}")
    if m := re.search(rf"[{CJK_CHAR}]\s+[{CJK_CHAR}]", text):
        problems.append(f"a space between Chinese characters: {text[max(0, m.start() - 8) : m.end() + 8]!r}")
    if m := re.search(r"(?<![\w.,-])\d{1,3}(?:[, \u2009\u202f]\d{3})+(?![\w,])|\d %(?!\{)", text):
        problems.append(f"a number with a separator: {m.group(0)!r}")  # Chinese writes 10000 and 90%
    bare = re.sub(r"“[^”]*”", " ", text)  # a quoted example sentence is data, not UI
    bare = re.sub(r"%\{[^}]*\}", " ", bare)  # Plotly's %{text}, %{x:,}: placeholders, not words
    words = re.findall(r"(?<![\w_])[A-Za-z]{3,}(?![\w_])", bare)
    left = sorted({w for w in words if w.lower() in ui_words and w not in SENTENCE_WORDS})
    if left:
        problems.append(f"English UI words {left}")
    return problems


def test_every_chapter_figure_reads_as_chinese(chapter_figures) -> None:
    """Each figure translated as the Chinese page renders it: its description (the page's
    'figure in words') and every text a reader sees have no stray _, no space before or after
    full-width punctuation or between Chinese characters, and no English word of the UI."""
    from posviz.sphinxext._describe import describe_figure

    ui_words = _english_ui_words()
    assert {"position", "head", "weight", "sinusoidal", "slider"} <= ui_words  # the vocabulary is real
    found = {}
    for name, figure in chapter_figures.items():
        zh = translate_figure(json_copy(figure), "zh_CN")
        title, words = describe_figure(zh, "zh_CN")
        problems = _problems(title, ui_words) + _problems(words, ui_words)
        texts = {i18n.plain_text(t, "zh_CN") for t in _texts(zh)}
        problems += [f"{p} in {t[:60]!r}" for t in sorted(texts) for p in _problems(t, ui_words)]
        if problems:
            found[name] = problems[:4]
    assert not found, found


def test_the_lab_figures_descriptions_read_as_chinese() -> None:
    """The extrapolation chapter's figures, from the published results: their descriptions pass
    the same checks (their own texts are checked with the lab's figures)."""
    import json

    from posviz.lab import figures as lab
    from posviz.lab.results import load_published
    from posviz.sphinxext._describe import describe_figure

    results = load_published()
    ui_words = _english_ui_words()
    found = {}
    names = ("perplexity_figure", "perplexity_at_length_figure", "paired_difference_figure", "cost_figure")
    for name in (*names, "inference_at_length_figure"):
        zh = translate_figure(json.loads(getattr(lab, name)(results).to_json()), "zh_CN")
        title, words = describe_figure(zh, "zh_CN")
        if problems := _problems(title, ui_words) + _problems(words, ui_words):
            found[name] = problems
    assert not found, found


def test_every_chapter_figure_described_in_english_has_no_stray_marks(chapter_figures) -> None:
    from posviz.sphinxext._describe import describe_figure

    for name, figure in chapter_figures.items():
        title, words = describe_figure(json_copy(figure), "en")
        assert not re.search(r"(?<![\w′)\]])_|_(?![\w(])", title + " " + words), (name, words)
        assert not re.search(r"[\u4e00-\u9fff]", words), name


def test_the_checks_see_each_reported_defect() -> None:
    """The reviewers' examples (issue 26) fail the checks above."""
    ui = {"position", "sinusoidal"}
    for bad in (
        "0.5 _max |权重…|",
        "4 (L = 2048) _长行规则",
        "截断后 偏移",
        "注意力 权重 （0.5 及以上 为黄色）",
        "12 个头： 8 头的斜率 ，再隔一取一",
        "no position 1.4e-16 · sinusoidal 0.56",
        "基数 10 000",
        "从 10 到 100,000",
        "90 % 窗口",
    ):
        assert _problems(bad, ui), bad
    assert _problems("可学习的位置表，L_max × d（d = 768）；o′_m − o_(π(m))；GPT-3 175B；90%；10000", ui) == []
