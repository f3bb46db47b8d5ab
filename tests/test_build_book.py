"""tools/build_book.py, what ``make book`` runs: the English edition, then the translations in a process
of their own, each with Sphinx's worker processes (``--jobs``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import build_book as book  # noqa: E402  (tools/build_book.py)
import i18n  # noqa: E402


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """The builds tools/build_book.py asks for, none of them run (English succeeds, translations too)."""
    made: list[tuple] = []

    def sphinx(builder: str, outdir: Path, doctrees: Path, overrides: dict, strict: bool, **kw: object) -> int:
        made.append(("sphinx", builder, outdir, strict, kw))
        return 0

    def call(args: list[str]) -> int:
        made.append(("process", args[1:]))
        return 0

    monkeypatch.setattr(i18n, "sphinx", sphinx)
    monkeypatch.setattr(book.subprocess, "call", call)
    return made


def test_the_english_edition_then_the_translations_in_their_own_process(calls: list[tuple]) -> None:
    assert book.main(["--jobs", "2"]) == 0
    (kind, builder, outdir, strict, kw), (process, args) = calls
    # as `jupyter-book build . --all -W -n --keep-going`: every page read again, warnings are errors
    assert (kind, builder, outdir, strict) == ("sphinx", "html", i18n.BUILD / "html", True)
    assert kw == {"jobs": 2, "freshenv": True}
    # a Chinese build in the English build's process kept Sphinx's own words English
    # (tests/test_built_sphinx_words.py)
    assert process == "process" and args == [str(ROOT / "tools" / "i18n.py"), "html", "--jobs", "2"]


def test_a_failed_english_build_stops_there(calls: list[tuple], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(i18n, "sphinx", lambda *a, **kw: calls.append("english") or 1)
    assert book.main([]) == 1
    assert calls == ["english"]


@pytest.mark.parametrize("main", [book.main, i18n.main], ids=["book", "i18n"])
def test_jobs_below_one_is_refused_with_the_allowed_range(main: object, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as stop:
        main((["html"] if main is i18n.main else []) + ["--jobs", "0"])
    assert stop.value.code == 2
    assert "--jobs must be 1 or more, not 0" in capsys.readouterr().err


def test_posviz_build_moves_every_output(tmp_path: Path) -> None:
    """``POSVIZ_BUILD``: the build folder, for the English site, the translations and the execution
    cache alike (``python -m posviz.bench --book`` builds a clean book there, leaving _build alone)."""
    import subprocess

    code = "import i18n; print(i18n.BUILD)"
    env = {**__import__("os").environ, "POSVIZ_BUILD": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT / "tools", env=env, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == str(tmp_path)
    assert i18n.BUILD == ROOT / "_build"  # unset: the checkout's own
