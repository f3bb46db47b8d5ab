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
# Where a reader's pointer would click part ``index`` of ``selector`` in the question: brought into
# view, then its centre, after the checks Playwright's click makes (visible, enabled, and that
# point not covered by another element: the part, or something inside it, is what it hits).
# Playwright's own click on an element cost 57 ms of CPU here, and finding the element first
# 19 ms more, in a chapter page of 13,000 elements: 2.5 of the 5.3 s of CPU that the rope
# chapter's questions took in one run. With this read and a click at the point, they took 5.0 s
# where Playwright's clicks took 6.5-7.1 s, the two measured in turn (page, browser and test).
_POINT_JS = """(q, [selector, index]) => {
  const e = q.querySelectorAll(selector)[index];
  if (!e) return `no ${selector} #${index} in the question`;
  let r = e.getBoundingClientRect();
  if (r.top < 0 || r.bottom > innerHeight || r.left < 0 || r.right > innerWidth) {
    e.scrollIntoView({block: 'center', inline: 'nearest'});
    r = e.getBoundingClientRect();
  }
  const style = getComputedStyle(e);
  if (r.width === 0 || r.height === 0 || style.visibility === 'hidden') return `${selector} #${index} is not visible`;
  if (e.disabled) return `${selector} #${index} is disabled`;
  const x = r.left + r.width / 2, y = r.top + r.height / 2;
  const hit = document.elementFromPoint(x, y);
  if (!hit || !(hit === e || e.contains(hit)))
    return `${selector} #${index} is covered by ${hit ? hit.outerHTML.slice(0, 120) : 'nothing'}`;
  return [x, y];
}"""


def _handle(q: object) -> object:
    """An element handle for ``q`` (a locator or a handle): its parts are found inside it, not in
    the whole page again at each step."""
    return q.element_handle() if hasattr(q, "element_handle") else q


def feedback(q: object) -> tuple[str, str]:
    """The feedback's class and text (``q``: a locator or an element handle)."""
    cls, text, _ = q.evaluate(_FEEDBACK_JS)
    return cls, text


def _click(q: object, selector: str, index: int = 0) -> None:
    """Click part ``index`` of ``selector`` in question ``q`` (a handle) with the mouse, where a
    reader would (:data:`_POINT_JS`)."""
    point = q.evaluate(_POINT_JS, [selector, index])
    assert isinstance(point, list), point
    q.owner_frame().page.mouse.click(*point)


def _pick(q: object, index: int) -> None:
    """Pick option ``index`` of a choice question with the mouse, and see it picked."""
    _click(q, "input[type=radio]", index)
    picked = q.evaluate("(q, i) => q.querySelectorAll('input[type=radio]')[i].checked", index)
    assert picked, f"option {index} is not picked after a click on it"


def _check(q: object) -> tuple[str, str]:
    """Click Check with the mouse; the feedback."""
    _click(q, "button.sc-check")
    return feedback(q)


def answer_right_and_wrong(q: object) -> None:
    """Answer ``q`` wrong then right with the mouse; check the class and text of the feedback."""
    q = _handle(q)
    info = q.evaluate(_QUESTION_JS)
    if info["kind"] == "choice":
        assert len(info["correct"]) >= 2 and info["correct"].count("1") == 1, info
        wrong, right = info["correct"].index("0"), info["correct"].index("1")
        assert _check(q)[0].endswith("incorrect")  # nothing picked yet
        _pick(q, wrong)
        cls, text = _check(q)
        assert cls.endswith(" incorrect") and len(text) > 15, text
        _pick(q, right)
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
        _click(q, "button.sc-show")
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
        _pick(q, info["correct"].index("0"))
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
