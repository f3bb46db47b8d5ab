"""No module of posviz, tools or tests binds a top-level name twice; no module of tests or tools
takes the name of a module Python or an installed package already has.

A second binding replaces the first for every later reader of the name, while an f-string or a
default argument built before it keeps the first: test_browser.py once held two ``_STATE_JS``, and
its page test compared each figure, after a slider click, with the other test's state (a page's
theme and storage), so that every slider passed, the broken ones too. ruff's F811 sees only a
redefinition that nothing used in between.

The tests' helper modules are imported by their bare names (pytest puts tests/ first on the path,
conftest.py puts tools/ there too): one named like a package, such as ``jupyterlab_server.py``,
hides that package from everything the run imports, and JupyterLab's test skipped itself as "not
installed" when a helper was first given that name.
"""

from __future__ import annotations

import ast
import importlib.metadata
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("posviz", "tools", "tests")


def twice_bound(text: str) -> dict[str, list[int]]:
    """The names a module's top level binds more than once (assignment, def, class), with their lines."""
    lines: dict[str, list[int]] = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
            names = [node.target.id]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        else:
            names = []
        for name in names:
            lines.setdefault(name, []).append(node.lineno)
    return {name: at for name, at in lines.items() if len(at) > 1}


def test_the_check_sees_a_name_bound_twice() -> None:
    text = 'STATE = "figure"\nCHANGED = f"{STATE}"\n\n\ndef STATE_of() -> None: ...\n\n\nSTATE = "page"\n'
    assert twice_bound(text) == {"STATE": [1, 8]}
    assert twice_bound("A = 1\nB: int = 2\nif A:\n    A = 3\n") == {}  # only the top level counts


def test_no_module_binds_a_top_level_name_twice() -> None:
    modules = [p for folder in FOLDERS for p in sorted((ROOT / folder).rglob("*.py")) if "__pycache__" not in p.parts]
    assert len(modules) > 100, len(modules)
    found = {str(p.relative_to(ROOT)): at for p in modules if (at := twice_bound(p.read_text(encoding="utf-8")))}
    assert not found, found


def shadowing(stems: list[str]) -> list[str]:
    """The module names among ``stems`` that the standard library or an installed package has."""
    taken = set(sys.stdlib_module_names) | set(importlib.metadata.packages_distributions())
    return sorted(set(stems) & taken)


def test_no_helper_module_hides_a_module_of_python_or_of_an_installed_package() -> None:
    assert shadowing(["jupyterlab_server", "json", "browser_pages"]) == ["json", "jupyterlab_server"]
    stems = [p.stem for folder in ("tests", "tools") for p in (ROOT / folder).glob("*.py")]
    assert "conftest" in stems and len(stems) > 50, stems
    assert not shadowing(stems)
