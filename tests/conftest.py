"""Shared fixtures: every device test runs on the CPU and again on CUDA when one is present.

Also the test tiers (README, *Tests*): :func:`pytest_collection_modifyitems` marks what a test
needs (``browser``: headless Chromium; ``book``: the built site in ``_build/html``; ``install``: a
package index, for a fresh environment), so ``make check`` runs the rest without either, and
``make test`` runs everything. Under pytest-xdist each worker's torch gets its share of the cores,
and a worker that draws JupyterLab tests starts its own server for them (a module fixture), so the
chapters run in JupyterLab on every worker at once.
``--time-budget`` fails a run that takes longer than it may, and every run ends with its wall time.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import http.server
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

# jsonschema (imported by nbformat, and so by plotly's widget) checks the "iri" format with
# rfc3987-syntax when that is installed (jupyter-events asks for it), which builds an Earley parser
# with lark on import: 1.5 s of CPU in each test process here, before its first test. No schema
# a test validates has that format; without the module, jsonschema leaves the format unchecked.
sys.modules.setdefault("rfc3987_syntax", None)  # None: its import fails at once

# --- tiers, markers and the time budget -----------------------------------------------------------

# Test files that need the built book (_build/html) or a browser as a whole; other tests are
# judged by the fixtures they ask for, or carry the marker themselves.
BOOK_FILES = {
    "test_browser.py",
    "test_browser_dark.py",
    "test_browser_phone.py",
    "test_built_pages.py",
    "test_built_pages_wording.py",
    "test_built_sphinx_words.py",
}
BROWSER_FILES = {"test_browser.py", "test_browser_dark.py", "test_browser_phone.py", "test_jupyterlab.py"}
BOOK_FIXTURES = {"site_url", "base_url"}  # fixtures that serve _build/html
BROWSER_FIXTURES = {"browser"}
_STARTED = time.monotonic()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--time-budget",
        type=float,
        default=None,
        metavar="SECONDS",
        help="fail the run when it takes longer than this wall time (make check and make test set it)",
    )
    parser.addoption(
        "--time-goal",
        type=float,
        default=None,
        metavar="SECONDS",
        help="the wall time the run aims at on an idle machine: printed beside the run's time, never failing it",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        name = item.path.name
        fixtures = set(getattr(item, "fixturenames", ()))
        if name in BROWSER_FILES or fixtures & BROWSER_FIXTURES:
            item.add_marker(pytest.mark.browser)
        if name in BOOK_FILES or fixtures & BOOK_FIXTURES:
            item.add_marker(pytest.mark.book)


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _core_share() -> int | None:
    """This xdist worker's share of the cores, or ``None`` outside a parallel run."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if not os.environ.get("PYTEST_XDIST_WORKER") or workers < 2:
        return None
    return max(1, (os.cpu_count() or 1) // workers)


def thread_env() -> dict[str, str]:
    """Environment for a subprocess that runs torch (a kernel, a fresh environment): in a parallel
    run, this worker's share of the cores, so that two workers' kernels do not fight for them."""
    share = _core_share()
    return {} if share is None else {"OMP_NUM_THREADS": str(share), "MKL_NUM_THREADS": str(share)}


def pytest_configure(config: pytest.Config) -> None:
    share = _core_share()
    if share is not None:  # each worker's torch gets its share of the cores
        torch.set_num_threads(share)


def pytest_sessionstart(session: pytest.Session) -> None:
    from fresh_env import build_in_the_background  # the JupyterLab kernels' environment (tests/fresh_env.py)

    build_in_the_background(session.config)


def pytest_terminal_summary(terminalreporter: object, exitstatus: int, config: pytest.Config) -> None:
    if _is_worker(config):
        return
    wall = time.monotonic() - _STARTED
    budget = config.getoption("--time-budget")
    said = f"posviz test time: {wall:.0f} s wall"
    if budget is not None:
        said += f" of a {budget:.0f} s budget" + (" - OVER BUDGET" if wall > budget else "")
    goal = config.getoption("--time-goal")
    if goal is not None:
        said += f"; goal {goal:.0f} s on an idle machine: " + ("met" if wall <= goal else f"{wall - goal:.0f} s over")
    terminalreporter.write_line(said, bold=True, red=budget is not None and wall > budget)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    budget = session.config.getoption("--time-budget")
    if budget is not None and not _is_worker(session.config) and time.monotonic() - _STARTED > budget:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: tuple) -> None:
        # the browser closed a page, or gave up a request, while it was being answered: socketserver
        # printed "Exception occurred during processing of request" into the test output
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[str]:
    """``folder`` served on 127.0.0.1 (a free port) while in the block: its URL, quietly."""
    server = _QuietServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# Screenshots for review (README, *Tests*): taken when POSVIZ_SHOTS names a folder (`make shots`
# sets it to screenshots/), never by default. Nothing asserts on a screenshot, and they cost: a
# full-page shot of a chapter took 4-5 s here, and a run took 126 (77 full pages, 48 explorers, 1 more).
SHOTS = Path(os.environ["POSVIZ_SHOTS"]) if os.environ.get("POSVIZ_SHOTS") else None


def screenshot(target: object, folder: Path | None, name: str, **options: object) -> None:
    """A screenshot of ``target`` (a Playwright page or locator) as ``folder/name``, when screenshots
    were asked for (``folder`` is not ``None``)."""
    if folder is not None:
        target.screenshot(path=str(folder / name), **options)


def fresh_folder(config: pytest.Config, folder: Path) -> Path:
    """``folder`` emptied of its files once per run, whichever xdist worker asks first (the
    others find it already done); its subfolders (another test file's) are left alone."""
    run = getattr(config, "workerinput", {}).get("testrunuid") or f"pid-{os.getpid()}"
    folder.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha1(str(folder.resolve()).encode()).hexdigest()[:12]
    lock = Path(tempfile.gettempdir()) / f"posviz-shots-{key}.lock"
    with lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        stamp = folder / ".run"
        if not stamp.exists() or stamp.read_text() != run:
            for entry in folder.iterdir():
                if not entry.is_dir():
                    entry.unlink()
            stamp.write_text(run)
    return folder

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

DEVICES = [
    "cpu",
    pytest.param(
        "cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
    ),
]


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> torch.device:
    return torch.device(request.param)


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """One headless Chromium for every browser test of the session (Debian's; Playwright never
    downloads one). One Playwright instance only: a second sync one in the same thread fails."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is absent (apt-get install chromium)")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()



# --- the built book in the browser (test_browser*.py) --------------------------------------------


@pytest.fixture(scope="session")
def base_url() -> Iterator[str]:
    """The built book (tests/browser_pages.py's SITE: _build/html, or POSVIZ_SITE) on 127.0.0.1."""
    from browser_pages import SITE

    with serve(SITE) as url:
        yield url


@pytest.fixture(scope="session")
def shots(request: pytest.FixtureRequest) -> Path | None:
    """Where screenshots go, or ``None`` when none were asked for (:data:`SHOTS`)."""
    return None if SHOTS is None else fresh_folder(request.config, SHOTS)  # emptied once, also under xdist


@pytest.fixture(scope="session")
def tabs(browser: object) -> Iterator[dict[str, object]]:
    """This worker's kept tabs, ``desktop`` and ``phone`` (tests/browser_visit.py's ``Tab``),
    opened when first asked for and shared by every test file of the session."""
    from browser_visit import Tab

    opened: dict[str, Tab] = {}

    class Tabs(dict):
        def __missing__(self, kind: str) -> Tab:
            opened[kind] = self[kind] = Tab(browser, phone=kind == "phone")
            return opened[kind]

    yield Tabs()
    for tab in opened.values():
        tab.close()

# --- the lab's tiny models (tests/test_lab*.py ask for these with pytest.mark.usefixtures) -------


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """One torch thread for a module's tiny models (3x less CPU than 2 threads on a busy 2-core
    machine: OpenMP threads wait for each other on ops of a few hundred elements); restored after."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def restore_determinism() -> Iterator[None]:
    """Whatever a test does to torch's deterministic-algorithms switch is undone after it."""
    enabled = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    yield
    torch.use_deterministic_algorithms(enabled, warn_only=warn_only)


@pytest.fixture(scope="module")
def corpus() -> object:
    """The lab's pydoc corpus, split three ways (read once per module)."""
    from posviz.lab.data import load_corpus

    return load_corpus()
