"""Shared fixtures: every device test runs on the CPU and again on CUDA when one is present."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

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
