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
from posviz.sphinxext._assets import MATHJAX_PARTS, PLOTLY_FULL_JS, PLOTLY_JS_DEFAULT, plotly_js_version
from posviz.sphinxext._mime import PLOTLY_MIME, describe_figure

# the book's partial bundle (make book: npm ci, then tools/plotly_bundle.mjs)
PLOTLY_JS = Path(__file__).parents[1] / PLOTLY_JS_DEFAULT
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
    html_overrides = [tuple(o) for o in config["nb_mime_priority_overrides"] if o[0] != "gettext"]
    assert sorted(html_overrides) == sorted(MIME_PRIORITY_OVERRIDES)


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
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {"cell_type": "markdown", "id": "a", "metadata": {}, "source": ["# Page"]},
            {
                "cell_type": "code",
                "id": "b",
                "metadata": {},
                "execution_count": 1,
                "source": ["fig"],
                "outputs": [output],
            },
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
        f"posviz_plotly_js = {str(PLOTLY_JS)!r}\n"
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
    for part in MATHJAX_PARTS:
        path = root / part
        if path.suffix == ".js":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"/* mathjax {part} */")
        else:
            path.mkdir(parents=True, exist_ok=True)
    (root / "output/chtml/fonts/woff-v2/MathJax_Zero.woff").write_bytes(b"font")
    return root


def test_serves_plotly_and_mathjax_locally_only_where_needed(tmp_path: Path, fake_mathjax: Path) -> None:
    out, warnings = _build(tmp_path, fake_mathjax)
    assert warnings == ""
    static = out / "_static" / "posviz"
    served = static / "plotly-book.min.js"
    assert 1_000_000 < served.stat().st_size < 2_000_000  # the partial bundle, not the 4.8 MB one
    assert plotly_js_version(served) == plotly_js_version(PLOTLY_FULL_JS)  # the version plotly.py bundles
    assert (static / "mathjax/startup.js").read_text() == "/* mathjax startup.js */"
    assert (static / "mathjax/output/chtml/fonts/woff-v2/MathJax_Zero.woff").exists()
    assert (static / "figures.js").read_text().startswith("window.POSVIZ_TEMPLATES = {")
    assert (static / "page.js").exists() and (static / "page.css").exists()

    figure, math, index = ((out / f"{p}.html").read_text() for p in ("figure", "math", "index"))
    assert '<script src="_static/posviz/plotly-book.min.js' in figure
    assert figure.index("plotly-book.min.js") < figure.index("_static/posviz/figures.js")
    assert "plotly" not in math and "figures.js" not in index
    assert all('src="_static/posviz/page.js' in page for page in (figure, math, index))  # every page
    assert 'src="_static/posviz/mathjax/startup.js' in math
    assert '"load": ["input/tex", "output/chtml", "a11y/assistive-mml"]' in math  # no 430 kB menu
    assert "mathjax" not in figure.lower()
    assert "://" not in "".join(line for line in math.splitlines() if "<script" in line)
    assert figure.count('class="reference internal" href="#posviz.apply_rope" title=') == 2  # both resolved


def test_a_plotly_bundle_of_another_version_is_a_warning(tmp_path: Path, fake_mathjax: Path) -> None:
    other = tmp_path / "plotly-other.js"
    other.write_text("/**\n* plotly.js (cartesian - minified) v1.0.0\n*/")
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        f"extensions = ['posviz.sphinxext']\nposviz_mathjax_dir = {str(fake_mathjax)!r}\n"
        f"posviz_plotly_js = {str(other)!r}\nhtml_theme = 'basic'\n"
    )
    (src / "index.rst").write_text("Index\n=====\n")
    warnings = io.StringIO()
    with docutils_namespace():
        Sphinx(src, src, tmp_path / "out", tmp_path / "doctrees", "html", status=None, warning=warnings).build()
    assert "found 1.0.0" in warnings.getvalue() and "plotly_bundle.mjs" in warnings.getvalue()


def test_a_missing_mathjax_is_a_warning(tmp_path: Path) -> None:
    _, warnings = _build(tmp_path, tmp_path / "nowhere")
    assert "MathJax 3 not found" in warnings and "npm ci" in warnings


def test_key_order_does_not_change_the_html() -> None:
    reordered = json.loads(json.dumps(FIGURE, sort_keys=True))  # as read back from the execution cache
    assert list(reordered["data"][0]) != list(FIGURE["data"][0])
    assert plotly_html(reordered, "k") == plotly_html(FIGURE, "k")


def test_every_figure_has_a_text_alternative() -> None:
    fig = go.Figure(
        [
            go.Heatmap(z=[[1, 2], [3, 4]], colorbar={"title": {"text": "weight"}}),
            go.Scatter(y=[1, 2], name="a<sub>m</sub>"),
        ],
        layout={"title": {"text": "Attention<br>at m = 3"}, "xaxis": {"title": {"text": "key n"}}},
    )
    fig.update_layout(
        sliders=[{"active": 1, "currentvalue": {"prefix": "m: "}, "steps": [{"label": str(m)} for m in range(4)]}]
    )
    name, words = describe_figure(json.loads(fig.to_json()))
    assert name == "Attention at m = 3"
    assert "heat map and line chart" in words and "x axis: key n" in words and "Colour: weight" in words
    assert "Series: aₘ" in words and "A slider (m) steps through 4 values, 0 to 3; it opens at 1." in words
    html = plotly_html(json.loads(fig.to_json()), "k")
    assert html.startswith('<figure class="posviz-figure" aria-label="Attention at m = 3" aria-describedby="plotly-')
    assert "<figcaption" in html and 'role="img"' not in html  # the plot's slider and buttons stay reachable


def test_figures_are_stored_compactly() -> None:
    import numpy as np

    from posviz.plots import slider_figure

    rounded = np.round(np.linspace(-1, 1, 200), 2)
    steps = [(str(k), [go.Scatter(x=np.arange(200), y=rounded * k)]) for k in range(3)]
    fig = json.loads(slider_figure(steps, slider_label="k").to_json())
    assert "template" in fig["layout"]
    html = plotly_html(fig, "k")
    assert '"template"' not in html and 'data-posviz-template="plotly"' in html  # the page script holds it
    assert '"bdata"' not in html.split('"sliders"')[0].split('"y"')[1][:20]  # rounded floats as short JSON
    assert '"x"' not in html.split('"sliders"')[1]  # the same in every step: stored once
    assert len(html) < 12_000


def test_theme_without_font_awesome_script_and_with_a_named_search_field(tmp_path: Path, fake_mathjax: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        f"extensions = ['posviz.sphinxext']\nhtml_theme = 'sphinx_book_theme'\n"
        f"posviz_mathjax_dir = {str(fake_mathjax)!r}\nposviz_plotly_js = {str(PLOTLY_JS)!r}\n"
    )
    (src / "index.rst").write_text("Index\n=====\n\n.. toctree::\n\n   refs\n")
    (src / "refs.rst").write_text("Refs\n====\n\nSee [X]_.\n\n.. [X] A cited work.\n")
    warnings = io.StringIO()
    with docutils_namespace():
        Sphinx(src, src, tmp_path / "out", tmp_path / "doctrees", "html", status=None, warning=warnings).build()
    page = (tmp_path / "out" / "index.html").read_text()
    assert "fontawesome.js" not in page and "fa-solid" in page  # icons drawn by the theme's CSS fonts
    fields = [b for b in page.split("<button")[1:] if "search-button-field" in b.split(">")[0]]
    assert fields and all("aria-label" not in b.split(">")[0] for b in fields)  # named by its visible text
    root = (tmp_path / "out").glob("*.html")
    assert all('role="doc-biblioentry"' not in p.read_text() for p in root)
    # only the icon rules of icons the site shows stay in the theme's CSS
    css = (tmp_path / "out/_static/styles/pydata-sphinx-theme.css").read_text()
    assert ".fa-magnifying-glass:before" in css and ".fa-500px:before" not in css and ".fa-github:before" not in css
    assert len(css) < 330_000


def _expand(value: object, root: dict) -> object:
    """What the page script (figures.js) makes of a figure's compact storage, in Python."""
    import base64

    import numpy as np

    types = {"i1": "<i1", "i2": "<i2", "i4": "<i4", "f8": "<f8", "u1": "<u1"}

    def typed(spec: dict) -> np.ndarray:
        array = np.frombuffer(base64.b64decode(spec["bdata"]), dtype=types[spec["dtype"]])
        shape = [int(n) for n in str(spec.get("shape", "")).split(",") if n]
        return array.reshape(shape) if shape else array

    if isinstance(value, list):
        return [_expand(v, root) for v in value]
    if isinstance(value, dict):
        if "posviz_decimals" in value:
            ints, d = typed(value["ints"]), value["posviz_decimals"]
            d = np.asarray(d) if isinstance(d, int) else typed(d).reshape(ints.shape)
            return (ints.astype(np.float64) / np.power(10.0, d)).tolist()  # IEEE division, as in the page
        if "bdata" in value:
            return typed(value).astype(np.float64).tolist()
        if "posviz_same" in value:
            target = root
            for key in value["posviz_same"]:
                target = target[key]
            return _expand(target, root)
        return {k: _expand(v, root) for k, v in value.items()}
    return value


def _stored(html: str) -> dict:
    """The data and layout a figure's HTML hands to Plotly.newPlot."""
    decoder = json.JSONDecoder()
    start = html.index("Plotly.newPlot(")
    start = html.index("[", start)
    data, end = decoder.raw_decode(html, start)
    layout, _ = decoder.raw_decode(html, html.index("{", end))
    return {"data": data, "layout": layout}


def test_compact_storage_gives_back_the_numbers_or_what_the_figure_shows_of_them() -> None:
    import numpy as np

    from posviz.plots import slider_figure

    rng = np.random.default_rng(1)
    exact = rng.normal(size=(3, 7, 4))  # shown by plotly's default hover: every digit kept
    shown = rng.normal(size=(3, 7, 4)) * 5  # %{z:.2f}
    small = rng.lognormal(sigma=5, size=(3, 30))  # %{y:.3g} and %{y:.1%}
    ints = rng.integers(-300, 300, size=(3, 25))  # integers stay integers
    steps = [
        (
            str(k),
            [
                go.Heatmap(z=exact[k]),
                go.Heatmap(z=shown[k], hovertemplate="z = %{z:.2f}<extra></extra>"),
                go.Scatter(y=small[k], hovertemplate="%{y:.3g} (%{y:.1%})"),
                go.Scatter(y=ints[k], hovertemplate="%{y}"),
                go.Scatter(y=np.round(exact[0, 0], 2), hovertemplate="%{y}"),  # the same in every step
            ],
        )
        for k in range(3)
    ]
    fig = json.loads(slider_figure(steps, slider_label="k", active=1).to_json())
    html = plotly_html(fig, "k")
    assert len(html) < 0.5 * len(json.dumps(fig))
    stored = _stored(html)
    expanded = _expand(stored, stored)
    states = [expanded["layout"]["sliders"][0]["steps"][k]["args"][0] for k in range(3)]
    for k, state in enumerate(states):
        z, y = state["z"], state["y"]
        assert z[0] == exact[k].tolist() and y[3] == ints[k].tolist()  # exactly
        assert [f"{v:.2f}" for v in np.ravel(z[1])] == [f"{v:.2f}" for v in shown[k].ravel()]
        assert all(v == round(v, 2) for v in np.ravel(z[1]))  # no digit the hover never shows
        assert [float(f"{v:.3g}") for v in y[2]] == [float(f"{v:.3g}") for v in small[k]]
        assert [f"{100 * v:.1f}" for v in y[2]] == [f"{100 * v:.1f}" for v in small[k]]
    data = expanded["data"]
    assert [data[0]["z"], data[1]["z"], data[2]["y"], data[3]["y"]] == [
        states[1]["z"][0],
        states[1]["z"][1],
        states[1]["y"][2],
        states[1]["y"][3],
    ]
    assert data[4]["y"] == np.round(exact[0, 0], 2).tolist()
    assert '"posviz_same"' in html  # the state the figure opens with is stored once


def test_hidden_code_cells_are_named_by_their_visible_text(tmp_path: Path, fake_mathjax: Path) -> None:
    from posviz.sphinxext._assets import _HIDDEN_CELL_LABEL, _page_context

    body = f'<details class="hide">{_HIDDEN_CELL_LABEL}<p class="collapsed">Show code cell content</p></summary>'
    context = {"body": body}
    _page_context(SimpleNamespace(builder=None), "p", "page.html", context, None)
    assert "aria-label" not in context["body"] and "<summary><p" in context["body"]


def test_a_table_posviz_prints_is_rendered_in_the_editions_language() -> None:
    """The lab's tables are made once, in English, with the messages they hold in the output's
    metadata: the Chinese edition renders them in Chinese, and any other Markdown as it is."""
    from myst_nb.core.render import MimeData

    from posviz.i18n import recording, tr
    from posviz.lab.tables import Table
    from posviz.sphinxext._mime import markdown_in_language

    with recording() as record:
        text = f"| {tr('method')} |\n|---|\n| {tr('cannot run')} |\n"
    markdown, metadata = Table(text, record)._repr_markdown_()
    data = MimeData("text/markdown", markdown, output_metadata={"text/markdown": metadata})
    assert markdown_in_language(data, "zh_CN").content == "| 方法 |\n|---|\n| 无法运行 |\n"
    assert markdown_in_language(data, "en").content == markdown
    plain = MimeData("text/markdown", "| method |")
    assert markdown_in_language(plain, "zh_CN").content == "| method |"  # no record: shown as it is
