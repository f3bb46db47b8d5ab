"""Self-check questions answered in a page as a reader answers them (posviz.selfcheck's blocks):
right and wrong with the mouse, then right from a wrong answer with the keyboard alone.

Used by tests/test_selfcheck.py on bare pages and by tests/test_browser.py::test_page on every
chapter of the built book, in the visit that checks the page (a chapter draws every figure on
load: a second load only for its questions cost about 2.5 s of CPU a chapter here).
"""

from __future__ import annotations

# What the drive needs to know of a question, read in one call (each read through a locator
# resolves its selector in a page of 10,000-17,000 elements: about 10 ms of CPU a read here; rope's
# questions took 5.5 s of CPU with a read per attribute, 4.0 s so).
_QUESTION_JS = """q => ({
  kind: q.dataset.kind, answer: q.dataset.answer, tol: q.dataset.tol, shown: q.dataset.shown,
  correct: [...q.querySelectorAll('input[type=radio]')].map(r => r.dataset.correct),
  links: [...q.querySelectorAll('.sc-feedback a')].map(a => a.getAttribute('href')),
})"""
_FEEDBACK_JS = """q => { const f = q.querySelector('.sc-feedback');
  return [f.getAttribute('class'), f.innerText, f.getAttribute('aria-live')]; }"""


def _handle(q: object) -> object:
    """An element handle for ``q`` (a locator or a handle): its parts are found inside it, not in
    the whole page again at each step."""
    return q.element_handle() if hasattr(q, "element_handle") else q


def feedback(q: object) -> tuple[str, str]:
    """The feedback's class and text (``q``: a locator or an element handle)."""
    cls, text, _ = q.evaluate(_FEEDBACK_JS)
    return cls, text


def _check(q: object) -> tuple[str, str]:
    """Click Check with the mouse (Playwright's click: visible, enabled, not covered); the feedback."""
    q.query_selector("button.sc-check").click()
    return feedback(q)


def answer_right_and_wrong(q: object) -> None:
    """Answer ``q`` wrong then right with the mouse; check the class and text of the feedback."""
    q = _handle(q)
    info = q.evaluate(_QUESTION_JS)
    if info["kind"] == "choice":
        radios = q.query_selector_all("input[type=radio]")
        assert len(radios) >= 2 and info["correct"].count("1") == 1, info
        wrong, right = radios[info["correct"].index("0")], radios[info["correct"].index("1")]
        assert _check(q)[0].endswith("incorrect")  # nothing picked yet
        wrong.check()
        cls, text = _check(q)
        assert cls.endswith(" incorrect") and len(text) > 15, text
        right.check()
        cls, text = _check(q)
        assert cls.endswith(" correct") and len(text) > 15, text
    else:
        answer, tol, shown = float(info["answer"]), float(info["tol"]), info["shown"]
        field = q.query_selector("input[type=text]")
        field.fill(repr(answer + 10 * tol + abs(answer) + 1))
        assert _check(q)[0].endswith(" incorrect")
        field.fill("not a number")
        cls, text = _check(q)
        assert cls.endswith(" incorrect") and "number" in text
        field.fill(repr(answer + 10 * tol + abs(answer) + 1))
        cls, text = _check(q)
        assert shown not in text  # a wrong answer does not give the value away
        q.query_selector("button.sc-show").click()
        cls, text = feedback(q)
        assert cls.endswith(" shown") and shown in text and len(text) > 25, text
        field.fill(repr(answer + 0.5 * tol))
        cls, text = _check(q)
        assert cls.endswith(" correct") and shown in text, text


def answer_wrong(q: object) -> None:
    """Answer ``q`` wrong with the mouse, and see it said so."""
    q = _handle(q)
    info = q.evaluate(_QUESTION_JS)
    if info["kind"] == "choice":
        q.query_selector_all("input[type=radio]")[info["correct"].index("0")].check()
    else:
        answer, tol = float(info["answer"]), float(info["tol"])
        q.query_selector("input[type=text]").fill(repr(answer + 10 * tol + abs(answer) + 1))
    assert _check(q)[0].endswith(" incorrect")


def answer_by_keyboard(page: object, q: object) -> None:
    """Tab into the question, answer right with the keyboard only, and hear the feedback."""
    q = _handle(q)
    info = q.evaluate(_QUESTION_JS)
    q.query_selector("input").focus()
    if info["kind"] == "choice":
        target = info["correct"].index("1")
        page.keyboard.press("Space") if target == 0 else None
        for _ in range(target):
            page.keyboard.press("ArrowDown")
        page.keyboard.press("Tab")  # to the Check button
        page.keyboard.press("Enter")
    else:
        page.keyboard.press("ControlOrMeta+A")  # whatever the field holds is replaced
        page.keyboard.type(info["answer"])
        page.keyboard.press("Enter")
    cls, _, live = q.evaluate(_FEEDBACK_JS)
    assert cls.endswith(" correct"), cls
    assert live == "polite", f"the feedback is not read out as it changes: aria-live={live!r}"


def answer_every_question(page: object, chapter: str) -> None:
    """Every self-check question on ``page`` (the chapter ``chapter``): right and wrong by mouse,
    each explanation's links lead to this page, the right option is not always the first, then
    each answered right by the keyboard alone from a wrong answer."""
    questions = page.query_selector_all("fieldset.self-check")
    positions = []
    for q in questions:
        q.scroll_into_view_if_needed()
        answer_right_and_wrong(q)
        info = q.evaluate(_QUESTION_JS)
        for href in info["links"]:  # explanations point at this page's equations
            if href.startswith("#"):
                assert page.locator(f"[id='{href[1:]}']").count() == 1, f"{chapter}: {href} is not on the page"
        if info["kind"] == "choice":
            positions.append(info["correct"].index("1"))
    assert len(positions) < 2 or set(positions) != {0}, f"{chapter}: the right option is always first"
    # the keyboard, from a wrong answer (no second load of a page that draws every figure again):
    # the feedback must turn from incorrect to correct by the keyboard alone
    for q in questions:
        answer_wrong(q)
        answer_by_keyboard(page, q)
