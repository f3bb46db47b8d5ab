"""tests/jlab_chapter.py's reload (the JupyterLab test's): an explorer that ipywidgets lost to its
race after a reload ("model not found") gets one more reload, with a warning; lost again, the test
fails. The page's check runs in Chromium on a bare page; the retry on a stand-in page."""

from __future__ import annotations

import jlab_chapter
import pytest
from jlab_chapter import _DRAWN_OR_LOST, _SHOWN_INSTEAD, Chapter
from jlab_js import EXPLORER

# as the failed run showed it: the message in an output that names no widget mime type
LOST = '<div class="jp-OutputArea-output"><div>Error displaying widget: model not found</div></div>'
# as JupyterLab 4.6 draws an explorer: no data-mime-type on the output, the view's classes inside it
DRAWN = '<div class="jp-OutputArea-output"><div class="lm-Widget jupyter-widgets widget-box widget-vbox"><div class="js-plotly-plot"><svg class="main-svg"></svg></div></div></div>'  # noqa: E501


@pytest.mark.browser
def test_the_page_check_tells_drawn_from_lost(browser: object) -> None:
    context = browser.new_context()
    try:
        page = context.new_page()
        found, shown = {}, {}
        for name, body in {"drawn": DRAWN, "lost": LOST, "neither": "<div class='jp-OutputArea-output'></div>"}.items():
            page.set_content(f"<html><body>{body}</body></html>")
            found[name] = [page.evaluate(f"a => ({_DRAWN_OR_LOST})(a)", [EXPLORER, 1, ok]) for ok in (True, False)]
            shown[name] = page.evaluate(_SHOWN_INSTEAD, EXPLORER)
    finally:
        context.close()
    assert found == {"drawn": ["drawn", "drawn"], "lost": ["lost", False], "neither": [False, False]}
    # what a failed wait reports: the widget views and the errors the page shows
    reported = [(s["drawn"], s["widgetViews"], len(s["widgetErrors"])) for s in shown.values()]
    assert reported == [(1, 1, 0), (0, 0, 1), (0, 0, 0)], shown


class _Answer:
    def __init__(self, value: str) -> None:
        self.value = value

    def json_value(self) -> str:
        return self.value


class _Page:
    """What Chapter.reload asks of a page: each reload, then the explorers drawn or lost."""

    def __init__(self, chapter: Chapter, answers: list[str]) -> None:
        self.chapter, self.answers, self.reloads = chapter, answers, 0

    def reload(self, timeout: int) -> None:
        self.reloads += 1
        self.chapter.errors.append(f"console error of reload {self.reloads}")

    def wait_for_selector(self, selector: str, timeout: int) -> None:
        pass

    def wait_for_function(self, script: str, arg: list, timeout: int, polling: int) -> _Answer:
        answer = self.answers.pop(0)
        if answer == "lost" and not arg[2]:  # not allowed to end the wait: it runs to its timeout
            from playwright.sync_api import TimeoutError as Timeout

            raise Timeout(f"Timeout {timeout}ms exceeded")
        return _Answer(answer)

    def evaluate(self, script: str, arg: str) -> dict:
        return {"widgetErrors": ["Error displaying widget: model not found"]}


def _chapter(answers: list[str]) -> tuple[Chapter, _Page]:
    chapter = Chapter.__new__(Chapter)
    chapter.name, chapter.errors = "vision", ["an error before the reload"]
    chapter.page = _Page(chapter, answers)
    return chapter, chapter.page


def test_a_lost_model_gets_one_more_reload_with_a_warning() -> None:
    chapter, page = _chapter(["lost", "drawn"])
    with pytest.warns(UserWarning, match="vision: after a reload an explorer showed 'model not found'.*reload 1"):
        chapter.reload(2)
    assert page.reloads == 2 and page.answers == []
    # the lost try's console errors are in the warning; the chapter keeps its own and the new try's
    assert chapter.errors == ["an error before the reload", "console error of reload 2"]


def test_a_model_lost_twice_fails_and_a_clean_reload_is_one_reload() -> None:
    chapter, page = _chapter(["lost", "lost"])
    with pytest.warns(UserWarning), pytest.raises(AssertionError, match="vision: 2 explorers expected"):
        chapter.reload(2)
    assert page.reloads == 2
    chapter, page = _chapter(["drawn"])
    chapter.reload(2)
    assert page.reloads == 1 and chapter.errors[-1] == "console error of reload 1"
    assert jlab_chapter.LOAD_TIMEOUT_MS >= 60_000  # a reload's wait stays long: only 'lost' cuts it short
