"""posviz.sphinxext: the plotly render plugin and the offline-assets Sphinx extension."""

from __future__ import annotations

import io
import json
from importlib.metadata import entry_points
from pathlib import Path
from types import SimpleNamespace

import plotly.graph_objects as go
import pytest
import yaml
from docutils import nodes
from myst_nb.core.render import get_mime_priority, load_mime_renders, load_renderer
from sphinx.application import Sphinx
from sphinx.util.docutils import docutils_namespace

from posviz.sphinxext import MIME_PRIORITY_OVERRIDES, PlotlyNbRenderer, plotly_html, plotly_nodes
from posviz.sphinxext._mime import PLOTLY_MIME

FIGURE = json.loads(go.Figure(go.Scatter(y=[1, 3, 2]), layout={"title": {"text": "t"}}).to_json())


def _data(content: object, mime: str = PLOTLY_MIME, cell: int = 0, output: int = 0) -> SimpleNamespace:
    return SimpleNamespace(mime_type=mime, content=content, cell_index=cell, output_index=output)


def _handle(data: SimpleNamespace) -> list | None:
    return plotly_nodes(data)


def test_registered_only_as_a_named_render_plugin() -> None:
    # nothing in the global mime-renderer group: other projects' docs are untouched
    assert not [ep for ep in entry_points(group="myst_nb.mime_renderers") if ep.value.startswith("posviz")]
    assert all(not getattr(p, "__module__", "").startswith("posviz") for p in load_mime_renders())
    assert PLOTLY_MIME not in get_mime_priority("html", [])  # no priority unless a project asks
    assert load_renderer("posviz-plotly") is PlotlyNbRenderer
    assert get_mime_priority("html", MIME_PRIORITY_OVERRIDES)[0] == PLOTLY_MIME


def test_the_book_config_selects_the_renderer() -> None:
    config = yaml.safe_load((Path(__file__).parents[1] / "_config.yml").read_text())["sphinx"]["config"]
    assert config["nb_render_plugin"] == "posviz-plotly"
    assert [tuple(o) for o in config["nb_mime_priority_overrides"]] == MIME_PRIORITY_OVERRIDES


def test_renders_plotly_json_as_a_figure_without_cdn_or_autoplay() -> None:
    (node,) = _handle(_data(FIGURE))
    assert isinstance(node, nodes.raw) and node["format"] == "html"
    html = node.astext()
    assert 'class="plotly-graph-div"' in html and "Plotly.newPlot" in html
    assert "<script src" not in html and "cdn" not in html.lower() and "MathJax" not in html
    assert "Plotly.animate" not in html


def test_accepts_a_json_string_and_rejects_other_mime_types() -> None:
    assert _handle(_data(json.dumps(FIGURE)))
    assert _handle(_data("x", mime="text/html")) is None


def test_div_ids_are_deterministic_and_distinct_per_output() -> None:
    assert plotly_html(FIGURE, "0-0") == plotly_html(json.loads(json.dumps(FIGURE)), "0-0")
    assert "uuid" not in plotly_html(FIGURE)
    first = _handle(_data(FIGURE, cell=1))[0].astext()
    second = _handle(_data(FIGURE, cell=2))[0].astext()
    assert first != second  # the same figure twice on one page gets two ids


def _notebook_project(tmp_path: Path, conf: str) -> tuple[str, str]:
    """Build a one-notebook myst-nb project holding a stored plotly output; return (html, warnings)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text("extensions = ['myst_nb']\nnb_execution_mode = 'off'\nhtml_theme = 'basic'\n" + conf)
    output = {"output_type": "display_data", "metadata": {}, "data": {PLOTLY_MIME: FIGURE, "text/plain": ["Figure"]}}
    nb = {
        "nbformat": 4, "nbformat_minor": 5, "metadata": {},
        "cells": [
            {"cell_type": "markdown", "id": "a", "metadata": {}, "source": ["# Page"]},
            {"cell_type": "code", "id": "b", "metadata": {}, "execution_count": 1, "source": ["fig"],
             "outputs": [output]},
        ],
    }
    (src / "index.ipynb").write_text(json.dumps(nb))
    warnings = io.StringIO()
    with docutils_namespace():  # each build registers its nodes afresh, as a separate process would
        app = Sphinx(src, src, tmp_path / "out", tmp_path / "doctrees", "html", status=None, warning=warnings)
        app.build()
    return (tmp_path / "out" / "index.html").read_text(), warnings.getvalue()


def test_another_project_with_posviz_installed_is_unchanged(tmp_path: Path) -> None:
    html, _ = _notebook_project(tmp_path, "")
    assert "plotly-graph-div" not in html and "posviz-plotly" not in html  # myst-nb's own fallback


def test_a_project_that_selects_the_plugin_gets_figures(tmp_path: Path) -> None:
    conf = f"nb_render_plugin = 'posviz-plotly'\nnb_mime_priority_overrides = {MIME_PRIORITY_OVERRIDES!r}\n"
    html, warnings = _notebook_project(tmp_path, conf)
    assert 'class="plotly-graph-div"' in html and "posviz-plotly" in html
    assert "unknown" not in warnings.lower()


def _build(tmp_path: Path, mathjax_dir: Path) -> tuple[Path, str]:
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        f"extensions = ['posviz.sphinxext']\nposviz_mathjax_dir = {str(mathjax_dir)!r}\nhtml_theme = 'basic'\n"
    )
    (src / "index.rst").write_text("Index\n=====\n\n.. toctree::\n\n   figure\n   math\n")
    (src / "figure.rst").write_text(
        'Figure\n======\n\n.. raw:: html\n\n   <div class="plotly-graph-div"></div>\n\n'
        "See :func:`apply_rope` and :func:`posviz.rope.apply_rope`.\n\n"
        ".. currentmodule:: posviz\n\n.. function:: apply_rope(x)\n\n   Documented here.\n"
    )
    (src / "math.rst").write_text("Math\n====\n\n:math:`x^2`\n")
    warnings = io.StringIO()
    with docutils_namespace():  # each build registers its nodes afresh, as a separate process would
        app = Sphinx(src, src, tmp_path / "out", tmp_path / "doctrees", "html", status=None, warning=warnings)
        app.build()
    return tmp_path / "out", warnings.getvalue()


@pytest.fixture
def fake_mathjax(tmp_path: Path) -> Path:
    root = tmp_path / "mathjax"
    for part in ("output/chtml/fonts/woff-v2", "a11y", "ui", "sre"):
        (root / part).mkdir(parents=True)
    (root / "output/chtml/fonts/woff-v2/MathJax_Zero.woff").write_bytes(b"font")
    (root / "tex-chtml-full.js").write_text("/* mathjax */")
    return root


def test_serves_plotly_and_mathjax_locally_only_where_needed(tmp_path: Path, fake_mathjax: Path) -> None:
    out, warnings = _build(tmp_path, fake_mathjax)
    assert warnings == ""
    static = out / "_static" / "posviz"
    assert (static / "plotly.min.js").stat().st_size > 1_000_000
    assert (static / "mathjax/tex-chtml-full.js").read_text() == "/* mathjax */"
    assert (static / "mathjax/output/chtml/fonts/woff-v2/MathJax_Zero.woff").exists()

    figure, math, index = ((out / f"{p}.html").read_text() for p in ("figure", "math", "index"))
    assert '<script src="_static/posviz/plotly.min.js' in figure
    assert "plotly.min.js" not in math and "plotly.min.js" not in index
    assert 'src="_static/posviz/mathjax/tex-chtml-full.js' in math
    assert "mathjax" not in figure.lower()
    assert "://" not in "".join(line for line in math.splitlines() if "<script" in line)
    assert figure.count('class="reference internal" href="#posviz.apply_rope" title=') == 2  # both resolved


def test_a_missing_mathjax_is_a_warning(tmp_path: Path) -> None:
    _, warnings = _build(tmp_path, tmp_path / "nowhere")
    assert "MathJax 3 not found" in warnings and "npm ci" in warnings


def test_key_order_does_not_change_the_html() -> None:
    reordered = json.loads(json.dumps(FIGURE, sort_keys=True))  # as read back from the execution cache
    assert list(reordered["data"][0]) != list(FIGURE["data"][0])
    assert plotly_html(reordered, "k") == plotly_html(FIGURE, "k")
