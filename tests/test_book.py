"""posviz.book.glue: myst-nb's glue in the book, a plain display where myst-nb is missing."""

from __future__ import annotations

import builtins
import sys

import pytest

from posviz.book import glue


def test_with_myst_nb_it_is_myst_nb_glue(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    import myst_nb

    monkeypatch.setattr(myst_nb, "glue", lambda *args, **kwargs: calls.append((args, kwargs)))
    glue("ppl-1x", 6.5, display=False)
    assert calls == [(("ppl-1x", 6.5), {"display": False})]


@pytest.mark.parametrize("display", [True, False])
def test_without_myst_nb_the_value_is_shown_only_when_asked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], display: bool
) -> None:
    real_import = builtins.__import__

    def no_myst_nb(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith("myst_nb"):
            raise ImportError("No module named 'myst_nb'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "myst_nb", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_myst_nb)
    glue("ppl-1x", 6.5, display=display)
    assert capsys.readouterr().out.strip() == ("6.5" if display else "")


def test_a_name_is_required() -> None:
    with pytest.raises(TypeError, match="name must be a non-empty str"):
        glue("", 1)
