"""posviz.selfcheck: questions that answer in the page, with no kernel and no network.

Python-level checks of what a chapter may build, then the block in headless Chromium: answered
right and wrong, by mouse and by keyboard alone, with no request leaving the page. The built
book's own blocks are counted here and answered the same way (every question of every chapter,
tests/selfcheck_drive.py) in tests/test_browser.py's visit of each chapter, when it is built.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from selfcheck_drive import answer_by_keyboard, answer_right_and_wrong, feedback

from posviz.selfcheck import Choice, MultipleChoice, Numeric, SelfCheck, self_check

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(os.environ.get("POSVIZ_SITE", ROOT / "_build" / "html"))
CHROMIUM = "/usr/bin/chromium"
CHAPTERS = [
    "attention", "sinusoidal", "learned", "relative", "rope", "alibi", "extrapolation", "models", "vision", "lab-grows",
]


def _block():
    return self_check(
        MultipleChoice("Which sign does the book use?", [
            Choice("query minus key", "Right: r = m − n, see [the table](#sign-conventions).", correct=True),
            Choice("key minus query", "That is T5's sign."),
            Choice("either", "No: the sign matters for `t5_relative_bucket`."),
        ]),
        Numeric("Slope of head 3 of 8?", 0.125, "m₃ = 2⁻³, see [the slopes](#equation-alibi-slopes).", rel_tol=0.01),
    )


# --- what a chapter may build ---------------------------------------------------------------------


def test_questions_are_validated():
    with pytest.raises(ValueError, match="exactly one choice must be correct"):
        MultipleChoice("q", [Choice("a", "x"), Choice("b", "y")])
    with pytest.raises(ValueError, match="exactly one choice must be correct"):
        MultipleChoice("q", [Choice("a", "x", True), Choice("b", "y", True)])
    with pytest.raises(ValueError, match="every choice needs an explanation"):
        MultipleChoice("q", [Choice("a", " ", True), Choice("b", "y")])
    with pytest.raises(ValueError, match="at least 2 choices"):
        MultipleChoice("q", [Choice("a", "x", True)])
    with pytest.raises(ValueError, match="finite"):
        Numeric("q", float("nan"), "why")
    with pytest.raises(ValueError, match="give a tolerance"):
        Numeric("q", 1.0, "why", rel_tol=0.0)
    with pytest.raises(TypeError, match="MultipleChoice or Numeric"):
        self_check("a question")
    with pytest.raises(ValueError, match="at least one question"):
        self_check()
    with pytest.raises(ValueError, match="inside the book"):
        self_check(Numeric("q", 1.0, "see [it](https://example.org)"))._repr_html_()


def test_tolerance_rule():
    q = Numeric("q", 200.0, "why", abs_tol=0.5, rel_tol=0.01)
    assert q.accepts(202.0) and q.accepts(198.0) and not q.accepts(202.1)
    assert Numeric("q", 0.0, "why", abs_tol=1e-3).accepts(-5e-4)
    assert Numeric("q", 393216, "why").shown() == "393,216"
    assert Numeric("q", 0.123456, "why", digits=3).shown() == "0.123"
    assert Numeric("q", 60611.54, "why").shown() == "60,612"


def test_the_right_option_moves_from_question_to_question_and_rebuilds_match():
    def mc(i):
        return MultipleChoice(f"question {i}", [Choice("right", "r", True), Choice("b", "x"), Choice("c", "y")])

    block = self_check(mc(0), Numeric("n", 1.0, "w"), mc(1), mc(2), mc(3))
    text = block._repr_html_()
    assert text == block._repr_html_()
    places = [
        [m.group(1) for m in re.finditer(r'data-correct="(\d)"', part)].index("1")
        for part in text.split('data-kind="choice"')[1:]
    ]
    assert places == [0, 1, 2, 0]  # the k-th multiple-choice question has its right option at k mod 3


def test_html_is_self_contained_escaped_and_deterministic():
    html = _block()._repr_html_()
    assert html == _block()._repr_html_()  # same content, same ids: rebuilds give the same page
    assert html.count('class="self-check"') == 2 and "<script>" in html
    assert "src=" not in html and "http" not in html  # nothing loaded from anywhere
    assert '<a href="#sign-conventions">the table</a>' in html and "<code>t5_relative_bucket</code>" in html
    assert "<b>" not in self_check(Numeric("<b>x</b>", 1.0, "y"))._repr_html_()  # escaped


# --- in the browser ---------------------------------------------------------------------------------


def _watch(page, origin: str) -> tuple[list[str], list[str]]:
    errors, outside = [], []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("request", lambda r: None if r.url.startswith((origin, "data:")) else outside.append(r.url))
    return errors, outside


def test_block_in_chromium_right_wrong_and_keyboard(browser, tmp_path):
    (tmp_path / "p.html").write_text(f"<!doctype html><html lang=en><body>{_block()._repr_html_()}</body></html>")
    page = browser.new_page()
    errors, outside = _watch(page, "file://")
    page.goto((tmp_path / "p.html").as_uri())
    questions = page.locator("fieldset.self-check")
    for i in range(questions.count()):
        answer_right_and_wrong(questions.nth(i))
    page.reload()
    for i in range(questions.count()):
        answer_by_keyboard(page, page.locator("fieldset.self-check").nth(i))
    assert not errors and not outside
    page.close()


def test_feedback_sentences_are_joined_as_the_language_writes_them(browser, tmp_path):
    """English sentences get a space between them; after a Chinese full stop there is none."""
    zh = SelfCheck.from_json(_block().to_json(), "zh_CN")
    page = browser.new_page()
    cases = (
        (_block(), "Right. The value is 0.125. m", "Not quite. Try"),
        (zh, "正确。答案是 0.125。m", "不太对。再试"),
    )
    for block, right, wrong in cases:
        (tmp_path / "p.html").write_text(f"<!doctype html><meta charset=utf-8><body>{block._repr_html_()}</body>")
        page.goto((tmp_path / "p.html").as_uri())
        q = page.locator("fieldset.self-check").nth(1)
        q.locator("input[type=text]").fill("0.125")
        q.locator("button.sc-check").click()
        assert feedback(q)[1].startswith(right), feedback(q)[1]
        q.locator("input[type=text]").fill("7")
        q.locator("button.sc-check").click()
        assert feedback(q)[1].startswith(wrong), feedback(q)[1]
    page.close()


# --- the built book ---------------------------------------------------------------------------------


@pytest.mark.book
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_chapter_has_self_check_questions(chapter):
    """Four to six questions a chapter. Each is answered in the page, right and wrong, by mouse
    and by keyboard alone, in the browser test's visit of the chapter
    (tests/test_browser.py::test_page, with tests/selfcheck_drive.py): one load of a page that
    draws every figure, not two."""
    if not (SITE / "index.html").exists():
        if os.environ.get("CI"):
            pytest.fail(f"{SITE} is not built: CI runs `make book` before the tests")
        pytest.skip(f"{SITE} is not built: run `make book` first")
    source = (SITE / "book" / f"{chapter}.html").read_text(encoding="utf-8")
    count = len(re.findall(r'<fieldset class="self-check"', source))
    assert 4 <= count <= 6, f"{chapter}: {count} self-check questions (want 4-6)"


def test_a_list_inside_a_question_is_translated_whole():
    """A question whose field is a list of three or more items (posviz.i18n.join_list: nested
    messages) reads in Chinese with Chinese separators, not "64, 128 和 256"."""
    from posviz.i18n import join_list, set_language, tr

    set_language("en")
    block = self_check(
        Numeric(tr("Which of {join} is largest?", join=join_list(["64", "128", "256", "512"])), 512, tr("The last."))
    )
    chinese = SelfCheck.from_json(block.to_json(), "zh_CN")
    text = chinese.questions[0].prompt
    assert "64、128、256 和 512" in text or "64、128、256和512" in text, text
    assert ", " not in text
