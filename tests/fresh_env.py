"""A reader's fresh environment, built once per test run and shared by the tests that need it.

Colab stand-in: a new virtual environment with what ``requirements.txt`` gives a reader (torch
pinned to the CPU build this checkout uses, its files linked from this checkout's environment, as
are pip's: :func:`_link`) and a Jupyter kernel, ``posviz-fresh``; no posviz and nothing of this
checkout until a chapter's setup cell installs posviz from a wheel built from the checkout's
files as they are now (``POSVIZ_INSTALL``). The chapters then run in it:
tests/test_jupyterlab.py's kernels are this environment's, so JupyterLab's *Run All* of every
chapter is also the run in a fresh environment (it once ran every chapter a third time, on its
own: 264 s here).

Built by whichever process asks first, under a file lock, in the run's own temporary folder
(the xdist workers' basetemps are in it); the others wait for it and find it done. In a parallel
run of the whole suite (``make test``) the xdist controller, idle otherwise, starts it at once
(:func:`build_in_the_background`), so no worker waits for it. What the build saw (posviz absent
before the setup cell, installed after) is recorded for tests/test_launch.py to check.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KERNEL = "posviz-fresh"  # a kernel name nothing else uses, so the environment's python runs the cells


@dataclass(frozen=True)
class FreshEnvironment:
    python: Path  # the environment's interpreter
    wheel: Path  # posviz, built from this checkout
    jupyter_path: Path  # JUPYTER_PATH entry where the kernel spec lives
    posviz_before: bool  # could it import posviz before the setup cell ran? (it must not)
    setup_cell: str  # the setup cell's source, as a chapter notebook has it
    installed: str  # `pip show posviz` after the setup cell
    chinese: str  # a figure word from the installed wheel, in Chinese

    def env(self) -> dict[str, str]:
        """An environment for a process that runs this environment's python or kernel: nothing of
        the checkout on the path, and the setup cell's wheel."""
        return {**_outside_the_checkout(), "POSVIZ_INSTALL": str(self.wheel)}


def _outside_the_checkout() -> dict[str, str]:
    """This process's environment without what points into the checkout or its .venv."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def _run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def setup_cell(notebook: Path) -> str:
    """The code cell that installs posviz when it is missing (the same in every chapter)."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    return next(cell for cell in cells if "POSVIZ_INSTALL" in cell)


# Not copied for the wheel: what is no part of the package's source, and setuptools' own build/
# folder, which it leaves in the tree it builds in and does not refresh from a source file older
# than its copy (a file restored with its old mtime): a wheel built in the checkout once kept a
# change that had been undone.
LEFT_OUT = {".git", ".venv", "_build", "build", "dist", "node_modules", "screenshots", "results", ".pytest_cache",
            ".ruff_cache", ".hypothesis", "__pycache__", ".ipynb_checkpoints"}  # fmt: skip


def _build(folder: Path) -> dict[str, object]:
    import shutil

    import torch

    source, wheels = folder / "source", folder / "wheels"
    shutil.copytree(ROOT, source, ignore=lambda _, names: [n for n in names if n in LEFT_OUT or n.endswith("egg-info")])
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(source)])
    (wheel,) = wheels.glob("posviz-*.whl")
    venv = folder / "venv"
    env = _outside_the_checkout()
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    py = venv / "bin" / "python"
    torch_pin = f"torch=={torch.__version__.split('+')[0]}"  # the CPU build already used here
    reader = [
        line.strip()
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#") and line.strip() != "."
    ]
    _link(py, "pip", "torch")
    # --no-compile: pip byte-compiles every module it installs; Python compiles the ones the
    # chapters import when they first import them. torch is there already (_link): pip finds the
    # pin satisfied and installs what torch itself requires, as for a reader
    _run([str(py), "-m", "pip", "install", "-q", "--no-compile", torch_pin, *reader, "ipykernel"], env=env)
    before = subprocess.run([str(py), "-c", "import posviz"], capture_output=True, cwd=folder, env=env).returncode == 0
    _run([str(py), "-m", "ipykernel", "install", "--sys-prefix", "--name", KERNEL], env=env)
    # the setup cell, run by the environment's python as its kernel would run it: it installs
    # posviz once, here, so that two workers' kernels never install it at the same time
    cell = setup_cell(ROOT / "book" / "rope.ipynb")
    _run([str(py), "-c", cell], env={**env, "POSVIZ_INSTALL": str(wheel)}, cwd=folder)
    shown = _run([str(py), "-m", "pip", "show", "posviz"], env=env).stdout
    # the wheel carries the figure catalogs: what a Chinese notebook's setup cell switches on
    probe = "import posviz, posviz.i18n as i; posviz.set_language('zh_CN'); print(i.tr('position p'))"
    said = _run([str(py), "-c", probe], env=env, cwd=folder).stdout
    return {
        "python": str(py), "wheel": str(wheel), "jupyter_path": str(venv / "share" / "jupyter"),
        "posviz_before": before, "setup_cell": cell, "installed": shown, "chinese": said.strip(),
    }  # fmt: skip


def _link(py: Path, *names: str) -> None:
    """Give the environment of ``py`` this environment's distributions ``names``: the files each
    wheel installed here (its RECORD, dist-info included), hard-linked, so that pip finds them
    installed. The same files as ``pip install`` unpacks from the same wheels (for torch, the CPU
    build pinned below; for pip, what ``python -m venv`` installs), for little of its cost: the
    whole build took 37-49 s of CPU here with pip unpacking torch's 14,600 files, 20-26 s with
    both linked (linking takes about a second), CPU that the test workers want in a run of the
    whole suite; and deleting an old run's copy, which pytest does at the end of a run, while
    nothing else runs, took 3.3-4.4 s before, 1.8-2.0 s after.
    Left out: their console scripts (``torchrun``, ``pip``), outside site-packages and tied to
    this environment's python; the setup cell runs ``python -m pip``, and no chapter cell runs a
    script. Copied where a link cannot be made (another file system)."""
    import importlib.metadata
    import shutil

    found = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    site = Path(found)
    for name in names:
        dist = importlib.metadata.distribution(name)
        here = Path(dist.locate_file("")).resolve()
        for file in dist.files or []:
            if file.parts[0] == "..":  # a console script, in bin/
                continue
            source, target = here / file, site / file
            if not source.is_file():  # a RECORD entry for a file that is not there (a .pyc)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source, target)
            except OSError:
                shutil.copy2(source, target)


def fresh_environment(tmp_path_factory: pytest.TempPathFactory) -> FreshEnvironment:
    """This run's fresh environment, built on the first call of any worker."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "fresh-environment"
    folder.mkdir(parents=True, exist_ok=True)
    record = folder / "built.json"
    with (folder / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record.exists():
            try:
                built = _build(folder)
            except subprocess.CalledProcessError as err:
                raise RuntimeError(f"the fresh environment failed: {err.cmd}\n{(err.stderr or '')[-3000:]}") from None
            record.write_text(json.dumps(built))
    found = json.loads(record.read_text())
    return FreshEnvironment(**{k: Path(v) if k in ("python", "wheel", "jupyter_path") else v for k, v in found.items()})


def has_chinese(text: str) -> bool:
    return bool(re.search(r"[\u4e00-\u9fff]", text))


def build_in_the_background(config: pytest.Config) -> None:
    """In the xdist controller of a run of the whole suite whose markers select the install tests,
    start building the fresh environment in a thread (pip's work is in subprocesses); elsewhere
    the first test that needs it builds it."""
    from _pytest.mark.expression import Expression

    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    if config.args_source != pytest.Config.ArgsSource.TESTPATHS or config.option.keyword:
        return  # some tests only: maybe none that needs it
    marks = config.option.markexpr
    if marks and not Expression.compile(marks).evaluate(lambda name, **_: name in ("install", "browser", "slow")):
        return

    def build() -> None:
        try:
            fresh_environment(config._tmp_path_factory)
        except Exception:  # the test that needs it builds it again, and says why it fails
            pass

    threading.Thread(target=build, name="fresh-environment", daemon=True).start()
