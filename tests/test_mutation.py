"""tools/mutation.py's mutants (tools/mutants/*.toml) still point at code and tests that exist: a
mutant whose ``find`` text is gone, or whose test moved to another file, would err or test
nothing when the mutation pass runs (it is run by hand, not by ``make test``). Splitting
test_lab.py, test_lab_protocol.py and test_i18n.py moved tests that 24 of the mutants' test lists
named, and 4 mutants' code had been rewritten since they were written (both found by this file)."""

from __future__ import annotations

import ast
import re
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import mutation  # noqa: E402  (tools/mutation.py)

MUTANTS = mutation.load(None, None)


@cache
def _tests_in(path: Path) -> frozenset[str]:
    """The test functions (and test classes) defined at the top of a test file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return frozenset(n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)))


def missing_tests(tests: list[str], root: Path = ROOT) -> list[str]:
    """The pytest arguments of ``tests`` (files or node ids) that name no file or no test in it."""
    missing = []
    for arg in tests:
        file, _, node = arg.partition("::")
        path = root / file
        name = re.sub(r"\[.*\]$", "", node.split("::")[0])
        if not path.is_file() or (name and name not in _tests_in(path)):
            missing.append(arg)
    return missing


def test_the_check_sees_a_moved_test_and_a_missing_file() -> None:
    here = "tests/test_mutation.py"
    assert missing_tests([here, f"{here}::test_the_check_sees_a_moved_test_and_a_missing_file[x]"]) == []
    assert missing_tests([f"{here}::test_gone", "tests/test_gone.py"]) == [f"{here}::test_gone", "tests/test_gone.py"]


def test_there_are_mutants() -> None:
    assert len(MUTANTS) > 50


def test_every_mutant_names_tests_that_exist() -> None:
    wrong = {m["id"]: missing_tests(m["tests"]) for m in MUTANTS}
    assert not {k: v for k, v in wrong.items() if v}


def test_every_mutant_finds_its_text_once() -> None:
    wrong = [m["id"] for m in MUTANTS if (ROOT / m["file"]).read_text(encoding="utf-8").count(m["find"]) != 1]
    assert not wrong, f"mutants whose text is not in their file exactly once: {wrong}"
