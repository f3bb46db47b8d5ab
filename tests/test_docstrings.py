"""Every public posviz function documents itself, and no LaTeX escape was eaten by Python.

A docstring with LaTeX must be raw (``r\"\"\"``): otherwise ``\\b`` in ``\\begin`` becomes a
backspace, ``\\t`` in ``\\theta`` a tab, ``\\f`` in ``\\frac`` a form feed.
"""

import inspect

import pytest

import posviz

PUBLIC = [(name, getattr(posviz, name)) for name in posviz.__all__]


@pytest.mark.parametrize(("name", "obj"), PUBLIC, ids=[n for n, _ in PUBLIC])
def test_documented_without_eaten_escapes(name, obj):
    doc = obj.__doc__  # not inspect.getdoc: it would expand tabs
    assert doc and doc.strip(), f"posviz.{name} has no docstring"
    bad = {"\b": "\\b", "\f": "\\f", "\v": "\\v", "\a": "\\a", "\r": "\\r"}
    for char, esc in bad.items():
        assert char not in doc, f"posviz.{name}'s docstring contains a raw {esc}: make it r-string"
    assert "\t" not in doc, f"posviz.{name}'s docstring contains a tab (\\t eaten?)"


def test_module_docstrings_are_clean():
    import pkgutil

    for info in pkgutil.walk_packages(posviz.__path__, "posviz."):
        if info.name.endswith("__main__"):
            continue
        module = __import__(info.name, fromlist=["_"])
        doc = module.__doc__ or ""
        assert not any(c in doc for c in "\b\f\v\a"), f"{info.name}: docstring has a control character"


FORMULAS = [
    "sinusoidal_encoding", "rope_frequencies", "apply_rope", "rope_rotation_matrix", "alibi_slopes",
    "alibi_bias", "relative_positions", "t5_relative_bucket", "attention", "rope_decay_bound",
    "sinusoidal_shift_matrix", "transformer_xl_scores",
]


@pytest.mark.parametrize("name", FORMULAS)
def test_formula_functions_show_their_formula(name):
    assert ".. math::" in inspect.getdoc(getattr(posviz, name))
