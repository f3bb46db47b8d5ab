"""A chapter notebook driven in JupyterLab as a reader drives it, for tests/test_jupyterlab.py: the
worker's one JupyterLab page (:class:`LabPage`), and a chapter in it (:class:`Chapter`): opened from
the file browser, Run All, its text cells read, every explorer's sliders dragged and pressed, saved
and reloaded."""

from __future__ import annotations

import re
import time
import warnings
from pathlib import Path

from conftest import screenshot
from fresh_env import KERNEL
from jlab_drive import STEP_TIMEOUT_MS, SliderDriving
from jlab_js import EXPLORER, MEASURE, SIGNATURE
from jlab_server import Lab

WIDTHS = (1280, 1920)
HEIGHT = 1000
RUN_TIMEOUT_MS = 600_000  # Run All of one chapter (the learned chapter trains its models)
LOAD_TIMEOUT_MS = 180_000  # JupyterLab's page (several MB of JavaScript) on a busy 2-core machine
IGNORED_ERRORS: tuple[str, ...] = ()


# the sidebar's edge: the handle between the left area and the notebooks in JupyterLab's main split
EDGE = "#jp-main-split-panel > .lm-SplitPanel-handle:not(.lm-mod-hidden)"


class LabPage:
    """The one JupyterLab page of a worker, in which every chapter is opened in turn.

    The first chapter opens it with JupyterLab's default layout (``?reset``, as a first visit shows
    it); each later one is opened as a reader opens the next notebook: the one before is closed,
    and the new one double-clicked in the file browser. Starting JupyterLab again for each chapter
    cost about 5 s of CPU here (opening four chapters: 32 s of CPU, then 16 s). The default layout
    is kept: the reload at 1920 px restores the sidebar at its share of the window it was saved at
    (1280 px), 1.5 times as wide, so the sidebar's edge is dragged back to where the first chapter
    had it, and each chapter's notebook is held to the first one's width (:meth:`Chapter.open`)."""

    def __init__(self, browser: object) -> None:
        self.context = browser.new_context(viewport={"width": WIDTHS[0], "height": HEIGHT})
        self.page = self.context.new_page()
        self.page.set_default_timeout(STEP_TIMEOUT_MS)
        self.opened = False  # the first chapter opens JupyterLab itself
        self.edge: float | None = None  # where the sidebar's edge is in the default layout (px)
        self.width: float | None = None  # the notebook's width in it (px)

    def close(self) -> None:
        self.context.close()


# What the notebook's outputs show where explorers were awaited (Chapter.wait_for_explorers):
# widgetViews counts the outputs that hold a widget's view (JupyterLab 4.6 gives a widget's output
# no data-mime-type: a selector on that type counted none, drawn or not).
_SHOWN_INSTEAD = """(sel) => ({
  drawn: document.querySelectorAll(sel + ' .main-svg').length,
  widgetViews: [...document.querySelectorAll('.jp-OutputArea-output')]
    .filter(o => o.querySelector('.jupyter-widgets')).length,
  widgetErrors: [...document.querySelectorAll('.jp-OutputArea-output')].map(o => o.innerText)
    .filter(t => /Error|Model not found|Loading widget/i.test(t)).map(t => t.slice(0, 160)).slice(0, 5),
  kernel: (document.querySelector('.jp-Notebook-ExecutionIndicator') || {dataset: {}}).dataset.status || null,
})"""

# Until the explorers are drawn ('drawn'), or, when allowed, an explorer's output says its widget
# model is not found ('lost': Chapter.reload).
_DRAWN_OR_LOST = """([sel, n, lostOk]) => {
  if (document.querySelectorAll(sel + ' .main-svg').length >= n) return 'drawn';
  // any output: where CI saw the error, no output carried a widget's data-mime-type
  if (lostOk && [...document.querySelectorAll('.jp-OutputArea-output')]
      .some(o => /Error displaying widget: model not found/i.test(o.textContent))) return 'lost';
  return false;
}"""


class Chapter(SliderDriving):
    """One chapter notebook open in a page, with its console errors recorded."""

    def __init__(self, pages: LabPage, lab: Lab, name: str) -> None:
        self.lab, self.name, self.pages = lab, name, pages
        self.page = pages.page
        self.page.set_viewport_size({"width": WIDTHS[0], "height": HEIGHT})
        self.errors: list[str] = []
        self._console = lambda msg: msg.type == "error" and self.errors.append(msg.text)
        self._page_error = lambda err: self.errors.append(str(err))
        self.page.on("console", self._console)
        self.page.on("pageerror", self._page_error)

    def open(self) -> None:
        """Open the notebook (see :class:`LabPage`), in JupyterLab's default layout."""
        pages = self.pages
        if not pages.opened or pages.edge is None:  # the first chapter, or one whose opening failed
            self.page.goto(
                f"{self.lab.url}/lab/tree/{self.name}.ipynb?token={self.lab.token}&reset", timeout=LOAD_TIMEOUT_MS
            )
            pages.opened = True
        else:  # the chapter before closed its notebook (close)
            handle = self.page.locator(EDGE).first.bounding_box()
            x, y = handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2
            if abs(x - pages.edge) > 1:  # the sidebar's edge, back where the default layout has it
                self.page.mouse.move(x, y)
                self.page.mouse.down()
                self.page.mouse.move(pages.edge, y, steps=4)
                self.page.mouse.up()
            listing = self.page.locator(".jp-DirListing-content .jp-DirListing-itemText")
            listing.get_by_text(f"{self.name}.ipynb", exact=True).dblclick()
        self.page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=LOAD_TIMEOUT_MS)
        handle = self.page.locator(EDGE).first.bounding_box()
        width = self.page.locator(".jp-NotebookPanel").bounding_box()["width"]
        if pages.edge is None:
            pages.edge, pages.width = handle["x"] + handle["width"] / 2, width
        default = pages.width
        assert abs(width - default) <= 2, f"{self.name}: the notebook {width} px wide, {default} px by default"
        self.wait_for_kernel()

    def _menu(self, menu: str, command: str) -> None:
        self.page.click(f".lm-MenuBar-item:has-text('{menu}')")
        self.page.click(f".lm-Menu-item[data-command='{command}']")

    def wait_for_kernel(self) -> None:
        """Until the notebook's kernel has started (the server says so) and the page shows it idle."""
        deadline = time.monotonic() + LOAD_TIMEOUT_MS / 1000
        while not any(
            s["path"].endswith(f"{self.name}.ipynb") and s["kernel"]["execution_state"] == "idle"
            for s in self.lab.api("GET", "sessions")
        ):
            assert time.monotonic() < deadline, f"{self.name}: the kernel did not start"
            time.sleep(0.2)
        sessions = self.lab.api("GET", "sessions")
        kernels = [s["kernel"]["name"] for s in sessions if s["path"].endswith(f"{self.name}.ipynb")]
        assert kernels == [KERNEL], f"{self.name}: kernels {kernels}, not the fresh environment's {KERNEL!r}"
        self.page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']")

    def run_all(self) -> None:
        self._menu("Run", "runmenu:run-all")
        # done: every code cell numbered; stopped: none running, kernel idle, some never ran
        self.page.wait_for_function(
            """() => {
              const p = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(e => e.textContent);
              const idle = document.querySelector(".jp-Notebook-ExecutionIndicator[data-status='idle']");
              return p.length && (p.every(t => /\\[\\d+\\]/.test(t)) ||
                     (idle && p.some(t => /\\[\\d+\\]/.test(t)) && !p.some(t => t.includes('*'))));
            }""",
            timeout=RUN_TIMEOUT_MS,
            polling=200,
        )
        prompts = self.page.eval_on_selector_all(".jp-CodeCell .jp-InputPrompt", "es => es.map(e => e.textContent)")
        errors = self.page.eval_on_selector_all(
            ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']",
            "es => es.map(e => e.textContent).filter(t => /Traceback|Error/.test(t))",
        )
        assert not errors, f"{self.name}: error output:\n{errors[0][-3000:]}"
        assert all(re.search(r"\[\d+\]", p) for p in prompts), f"{self.name}: not every cell ran: {prompts}"

    def check_markdown(self, solutions: int) -> None:
        """The rendered text cells (JupyterLab's own renderer: jupyterlab-myst is disabled, as in
        Colab) show no MyST markup, and every solution is collapsed."""
        assert not self.page.locator(".jp-MarkdownCell .myst").count(), "jupyterlab-myst rendered the notebook"
        rendered = ".jp-MarkdownCell .jp-MarkdownOutput"
        text = self.page.eval_on_selector_all(rendered, "es => es.map(e => e.innerText).join('\\n')")
        # a role shows as {name} before its (code-formatted) text; a directive as ::: or ```{name}
        roles = r"\{(?:eq|numref|ref|doc|cite(?::\w+)?|glue(?::\w*)?|term|download|abbr|index)\}"
        raw = re.findall(roles + r"|^:::|^```\{|^\([\w-]+\)=|\$\$ *\(", text, flags=re.M)
        assert not raw, f"{self.name}: raw MyST in the rendered notebook: {raw[:5]}"
        shown = self.page.eval_on_selector_all(f"{rendered} details", "es => es.map(e => e.open)")
        assert shown == [False] * solutions, f"{self.name}: {solutions} collapsed solutions expected, found {shown}"

    def wait_for_explorers(self, count: int, *, lost_ok: bool = False) -> bool:
        """Until ``count`` explorers' figures are drawn (a view waits for Plotly's module); if they
        are not, what the page shows instead: a failure said only "Timeout 180000ms exceeded".
        ``lost_ok``: an explorer that shows "model not found" (ipywidgets' race after a reload,
        :meth:`reload`) ends the wait at once and returns ``False``; else it fails, as before."""
        from playwright.sync_api import TimeoutError as Timeout  # here: the test skips without playwright

        try:
            found = self.page.wait_for_function(
                _DRAWN_OR_LOST, arg=[EXPLORER, count, lost_ok], timeout=LOAD_TIMEOUT_MS, polling=200
            ).json_value()
        except Timeout:
            found = None
        if found == "drawn":
            return True
        if found == "lost":
            return False
        shown = self.page.evaluate(_SHOWN_INSTEAD, EXPLORER)
        raise AssertionError(
            f"{self.name}: {count} explorers expected, after {LOAD_TIMEOUT_MS // 1000} s the page shows {shown}; "
            f"console errors: {self.errors[-5:]}"
        )

    def reload(self, count: int) -> None:
        """Reload the page, the kernel still running, until its ``count`` explorers are drawn again.

        ipywidgets restores a notebook's widgets from the kernel when the page connects to it, and
        on a busy machine an output can ask for its model before the restore has it: the explorer
        shows "Error displaying widget: model not found", and never comes back (upstream's race,
        jupyter-widgets/ipywidgets#3231; here once in about ten runs of `make test`, in one
        chapter, a 180 s wait and a failure). Then the page is reloaded once more, as a reader
        would, with a warning in the test summary; the lost try's console errors go into the
        warning, not into the chapter's. A model that is truly gone (closed in the kernel) is lost
        again: the second reload fails."""
        for attempt in (1, 2):
            errors = len(self.errors)
            self.page.reload(timeout=LOAD_TIMEOUT_MS)
            self.page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=LOAD_TIMEOUT_MS)
            if self.wait_for_explorers(count, lost_ok=attempt == 1):
                return
            lost, self.errors[errors:] = self.errors[errors:], []
            warnings.warn(
                f"{self.name}: after a reload an explorer showed 'model not found' (console: {lost[-3:]}); "
                "the page was reloaded once more",
                stacklevel=2,
            )

    def explorers(self) -> list[object]:
        """The explorers' outputs, as element handles (until the page is reloaded): each step of a
        move reads inside its output, where a locator resolved its ``:has()`` selector in the
        whole notebook (15,000 elements) for every read, about 20 ms of CPU each here."""
        return self.page.query_selector_all(EXPLORER)

    @staticmethod
    def handle(out: object, index: int) -> object:
        """The grip of slider ``index`` of ``out``."""
        return out.query_selector_all(".widget-slider")[index].query_selector(".noUi-handle")

    @staticmethod
    def position(handle: object) -> tuple[float, float, float]:
        """A slider grip's value, minimum and maximum, as it tells assistive technology."""
        read = "h => ['now', 'min', 'max'].map(a => parseFloat(h.getAttribute('aria-value' + a)))"
        return tuple(float(v) for v in handle.evaluate(read))  # JSON gives 4.0 back as 4

    @staticmethod
    def status(out: object) -> str:
        """The message the explorer shows (empty when it shows none), as :data:`MEASURE` reads it."""
        return out.evaluate("o => ((o.querySelector('.widget-html-content') || {}).textContent || '').trim()")

    def measure(self, out: object) -> dict:
        return out.evaluate(MEASURE)

    def signature(self, out: object) -> str:
        return out.evaluate(SIGNATURE)

    def wait_fitted(self, out: object) -> None:
        """Until the figure is drawn at the width of its output."""
        out.evaluate(
            """(out, timeout) => new Promise((resolve, reject) => {
              const t0 = performance.now();
              const check = () => {
                const gd = out.querySelector('.js-plotly-plot');
                const drawn = gd && gd._fullLayout ? gd._fullLayout.width : 0;
                const fits = gd && gd.clientWidth > 0.95 * out.clientWidth && Math.abs(drawn - gd.clientWidth) <= 2;
                if (fits) resolve(true);
                else if (performance.now() - t0 > timeout) reject(new Error(
                  `figure ${drawn} px wide in an output ${out.clientWidth} px wide`));
                else requestAnimationFrame(check);
              };
              check();
            })""",
            STEP_TIMEOUT_MS,
        )

    def check(self, out: object, label: str) -> dict:
        self.wait_fitted(out)
        found = self.measure(out)
        assert found["traces"] > 0, f"{label}: no figure"
        assert not found["problems"], f"{label}: {found['problems']}"
        assert found["status"] == "", f"{label}: the explorer reports {found['status']!r}"
        return found

    def shot(self, out: object, shots: Path | None, label: str) -> None:
        if shots is not None:
            out.scroll_into_view_if_needed()
            screenshot(out, shots, f"{label}.png")

    def save(self) -> None:
        self.page.click(".jp-NotebookPanel .jp-Notebook")
        self.page.keyboard.press("Control+s")
        self.page.wait_for_function("() => !document.querySelector('.jp-mod-current.jp-mod-dirty, .jp-mod-dirty')")

    def close(self) -> None:
        """Close the notebook, as a reader does before opening the next one (its kernel still
        running: Lab.shut_down_kernels comes after, or its explorers' last messages would fail).
        Where that fails (the chapter's test failed in the middle of something), the next
        chapter starts JupyterLab afresh."""
        from playwright.sync_api import Error  # here: the test module skips where playwright is absent

        try:
            self._menu("File", "application:close-all")
            closed = (
                "() => document.querySelector('.jp-Dialog') ? 'asked' : !document.querySelector('.jp-NotebookPanel')"
            )
            if self.page.wait_for_function(closed, timeout=10_000).json_value() == "asked":
                # a chapter without explorers is never saved: JupyterLab asks, as it asks a reader
                self.page.click(".jp-Dialog .jp-Dialog-button:has-text('Discard')")
                self.page.wait_for_selector(".jp-NotebookPanel", state="detached", timeout=10_000)
        except Error as err:
            self.pages.opened = False
            warnings.warn(f"{self.name}: its notebook did not close ({err}); JupyterLab is opened afresh", stacklevel=2)
        finally:
            self.page.remove_listener("console", self._console)
            self.page.remove_listener("pageerror", self._page_error)

    def unexpected_errors(self) -> list[str]:
        return [e for e in self.errors if not any(known in e for known in IGNORED_ERRORS)]
