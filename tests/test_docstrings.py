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
    "alibi_bias", "relative_positions", "t5_relative_bucket", "attention", "rope_mean_partial_sum",
    "sinusoidal_shift_matrix", "transformer_xl_scores",
]


@pytest.mark.parametrize("name", FORMULAS)
def test_formula_functions_show_their_formula(name):
    assert ".. math::" in inspect.getdoc(getattr(posviz, name))


# --- A docstring's formula is the chapter's formula ---------------------------------------------

import re  # noqa: E402
from pathlib import Path  # noqa: E402

BOOK = Path(__file__).resolve().parents[1] / "book"


def _normalise(tex: str) -> str:
    """LaTeX without spacing and sizing commands, so that layout differences do not count."""
    tex = re.sub(r"\\(?:[,!;: ]|q?quad|left|right|big|Big|bigg|Bigg)(?![a-zA-Z])", "", tex)
    return re.sub(r"\s+", "", tex)


def _chapter_equations() -> dict[str, str]:
    eqs = {}
    for page in BOOK.glob("*.md"):
        for m in re.finditer(r"\$\$\n(.*?)\n\$\$ \(([\w-]+)\)", page.read_text(), re.S):
            eqs[m.group(2)] = m.group(1)
    return eqs


# (object whose docstring the API page shows, chapter equation label, the formula's core, which
# must appear in both: the API page and the chapter may not tell two stories)
KEY_EQUATIONS = [
    ("posviz.alibi", "alibi-score", r"s_{h,ij}=\frac{q_i^\top k_j}{\sqrt{d}}-\mu_h(i-j)"),
    ("alibi_bias", "alibi-score", r"\frac{q_i^\top k_j}{\sqrt{d}}-\mu_h(i-j)"),
    ("alibi_slopes", "alibi-slopes", r"\mu_h=(2^{-8/H})^{h}=2^{-8h/H}"),
    ("alibi_distance_weights", "alibi-weights", r"\frac{e^{-\mu\delta}(1-e^{-\mu})}{1-e^{-\muL}}"),
    ("alibi_window_mass", "alibi-mass", r"M(w)=\sum_{\delta=0}^{w}a(\delta)=\frac{1-e^{-\mu(w+1)}}{1-e^{-\muL}}"),
    ("rope_frequencies", "rope-theta", r"\theta_i=\text{base}^{-2i/d}"),
    ("sinusoidal_encoding", "sinusoidal-pe", r"PE(p,2i)=\sin(p\theta_i),PE(p,2i+1)=\cos(p\theta_i)"),
    ("sinusoidal_offset_similarity", "sinusoidal-similarity", r"=\sum_{i=0}^{d/2-1}\cos(\delta\theta_i)"),
    ("learned_table_parameters", "learned-params", r"\#P=L_{\max}\cdotd"),
    ("T5RelativeBias", "relative-t5-bias", r"B_{h,mn}=b_{h,\operatorname{bucket}(n-m)}"),
    ("attention_scores", "attention-score", r"q_m^\top k_n"),
]


@pytest.mark.parametrize(("name", "label", "core"), KEY_EQUATIONS, ids=[f"{n}:{lab}" for n, lab, _ in KEY_EQUATIONS])
def test_docstring_formula_is_the_chapter_formula(name, label, core):
    import importlib

    obj = importlib.import_module(name) if name.startswith("posviz.") else getattr(posviz, name)
    chapter = _normalise(_chapter_equations()[label])
    doc = _normalise(obj.__doc__)
    core = _normalise(core)
    assert core in chapter, f"the chapter's {label} no longer holds {core}: update the pair"
    assert core in doc, f"{name}'s docstring does not show the chapter's {label}: {core}"
