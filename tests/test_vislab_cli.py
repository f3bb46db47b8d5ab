"""python -m posviz.vislab: errors name the flag (exit status 2, no traceback); a tiny quick run writes
its JSON, figure and tables; --publish refuses anything but the full run."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from posviz.vislab import load_results
from posviz.vislab.cli import main

pytestmark = pytest.mark.usefixtures("one_torch_thread", "restore_determinism")


def run(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as err:  # argparse's own errors (a value of the wrong type)
        return int(err.code)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--train-grid", "1"], "--train-grid must be an int >= 2"),
        (["--eval-grids", "12", "16"], "--eval-grids must include the training grid 8"),
        (["--eval-grids", "8", "0"], "--eval-grids must be an int >= 2"),
        (["--eval-grids", "8", "x"], "--eval-grids: invalid int value"),
        (["--methods", "alibi"], "--methods must name one or more of"),
        (["--seeds", "1", "1"], "--seeds must be distinct"),
        (["--workers", "0"], "workers \\(--workers\\) must be a positive int"),
        (["--steps", "0"], "steps \\(--steps\\) must be a positive int"),
        (["--heads", "3"], "--heads 3 must divide --d-model 64"),
        (["--quick", "--publish"], "--publish takes the full run only"),
        (["--publish", "--steps", "10"], "--publish takes the full configuration only; this run differs in train"),
    ],
)
def test_bad_flags_exit_2_naming_the_flag(argv: list[str], message: str, capsys) -> None:
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert re.search(message, err), err


def test_a_tiny_quick_run_writes_results_figure_and_tables(tmp_path, capsys) -> None:
    argv = ["--quick", "--methods", "none", "swin-bias", "--seeds", "0", "1", "--steps", "2", "--n-heldout", "8",
            "--n-validation", "8", "--eval-grids", "8", "12", "--no-progress", "--out", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    results = load_results(tmp_path / "results.json")
    assert results["config"]["mode"] == "quick" and results["eval_grids"] == [8, 12]
    assert results["config"]["train"]["steps"] == 2
    assert list(results["methods"]) == ["none", "swin-bias"]
    assert (tmp_path / "accuracy.html").stat().st_size > 1000
    assert "| swin-bias |" in out and "points at 12×12" in out


def test_the_entry_point_runs_as_a_module() -> None:
    done = subprocess.run([sys.executable, "-m", "posviz.vislab", "--train-grid", "0"], capture_output=True, text=True)
    assert done.returncode == 2 and "--train-grid must be an int >= 2" in done.stderr
    assert "Traceback" not in done.stderr
