"""Self-check questions answered in a page as a reader answers them (posviz.selfcheck's blocks):
right and wrong with the mouse, then right from a wrong answer with the keyboard alone.

Used by tests/test_selfcheck.py on bare pages and by tests/test_browser.py::test_page on every
chapter of the built book, in the visit that checks the page (a chapter draws every figure on
load: a second load only for its questions cost about 2.5 s of CPU a chapter here).
"""

from __future__ import annotations


def feedback(q: object) -> tuple[str, str]:
    fb = q.locator(".sc-feedback")
    return fb.get_attribute("class"), fb.inner_text()


def answer_right_and_wrong(q: object) -> None:
    """Answer ``q`` wrong then right with the mouse; check the class and text of the feedback."""
    if q.get_attribute("data-kind") == "choice":
        radios = q.locator("input[type=radio]")
        wrong = q.locator('input[type=radio][data-correct="0"]').first
        right = q.locator('input[type=radio][data-correct="1"]')
        assert radios.count() >= 2 and right.count() == 1
        q.locator("button.sc-check").click()
        assert feedback(q)[0].endswith("incorrect")  # nothing picked yet
        wrong.check()
        q.locator("button.sc-check").click()
        cls, text = feedback(q)
        assert cls.endswith(" incorrect") and len(text) > 15, text
        right.check()
        q.locator("button.sc-check").click()
        cls, text = feedback(q)
        assert cls.endswith(" correct") and len(text) > 15, text
    else:
        answer, tol = float(q.get_attribute("data-answer")), float(q.get_attribute("data-tol"))
        field = q.locator("input[type=text]")
        field.fill(repr(answer + 10 * tol + abs(answer) + 1))
        q.locator("button.sc-check").click()
        assert feedback(q)[0].endswith(" incorrect")
        field.fill("not a number")
        q.locator("button.sc-check").click()
        assert feedback(q)[0].endswith(" incorrect") and "number" in feedback(q)[1]
        field.fill(repr(answer + 10 * tol + abs(answer) + 1))
        q.locator("button.sc-check").click()
        cls, text = feedback(q)
        assert q.get_attribute("data-shown") not in text  # a wrong answer does not give the value away
        q.locator("button.sc-show").click()
        cls, text = feedback(q)
        assert cls.endswith(" shown") and q.get_attribute("data-shown") in text and len(text) > 25, text
        field.fill(repr(answer + 0.5 * tol))
        q.locator("button.sc-check").click()
        cls, text = feedback(q)
        assert cls.endswith(" correct") and q.get_attribute("data-shown") in text, text


def answer_wrong(q: object) -> None:
    """Answer ``q`` wrong with the mouse, and see it said so."""
    if q.get_attribute("data-kind") == "choice":
        q.locator('input[type=radio][data-correct="0"]').first.check()
    else:
        answer, tol = float(q.get_attribute("data-answer")), float(q.get_attribute("data-tol"))
        q.locator("input[type=text]").fill(repr(answer + 10 * tol + abs(answer) + 1))
    q.locator("button.sc-check").click()
    assert feedback(q)[0].endswith(" incorrect")


def answer_by_keyboard(page: object, q: object) -> None:
    """Tab into the question, answer right with the keyboard only, and hear the feedback."""
    first = q.locator("input").first
    first.focus()
    if q.get_attribute("data-kind") == "choice":
        radios = q.locator("input[type=radio]")
        target = [radios.nth(i).get_attribute("data-correct") for i in range(radios.count())].index("1")
        page.keyboard.press("Space") if target == 0 else None
        for _ in range(target):
            page.keyboard.press("ArrowDown")
        page.keyboard.press("Tab")  # to the Check button
        page.keyboard.press("Enter")
    else:
        page.keyboard.press("ControlOrMeta+A")  # whatever the field holds is replaced
        page.keyboard.type(q.get_attribute("data-answer"))
        page.keyboard.press("Enter")
    cls, _ = feedback(q)
    assert cls.endswith(" correct")
    assert q.locator(".sc-feedback").get_attribute("aria-live") == "polite"


def answer_every_question(page: object, chapter: str) -> None:
    """Every self-check question on ``page`` (the chapter ``chapter``): right and wrong by mouse,
    each explanation's links lead to this page, the right option is not always the first, then
    each answered right by the keyboard alone from a wrong answer."""
    questions = page.locator("fieldset.self-check")
    for i in range(questions.count()):
        q = questions.nth(i)
        q.scroll_into_view_if_needed()
        answer_right_and_wrong(q)
        for link in q.locator(".sc-feedback a").all():  # explanations point at this page's equations
            href = link.get_attribute("href")
            if href.startswith("#"):
                assert page.locator(f"[id='{href[1:]}']").count() == 1, f"{chapter}: {href} is not on the page"
    positions = [
        [r.get_attribute("data-correct") for r in q.locator("input[type=radio]").all()].index("1")
        for q in questions.all() if q.get_attribute("data-kind") == "choice"
    ]  # fmt: skip
    assert len(positions) < 2 or set(positions) != {0}, f"{chapter}: the right option is always first"
    # the keyboard, from a wrong answer (no second load of a page that draws every figure again):
    # the feedback must turn from incorrect to correct by the keyboard alone
    for i in range(questions.count()):
        q = questions.nth(i)
        answer_wrong(q)
        answer_by_keyboard(page, q)
