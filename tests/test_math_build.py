"""posviz.sphinxext._math: equations typeset at build time by MathJax in Node (no MathJax script
in the page). Needs Node and ``npm ci`` (node_modules/mathjax); skipped with the reason without."""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from sphinx.application import Sphinx
from sphinx.util.docutils import docutils_namespace

from posviz.sphinxext import _math
from posviz.sphinxext._assets import PLOTLY_JS_DEFAULT

ROOT = Path(__file__).resolve().parents[1]
MATHJAX = ROOT / "node_modules" / "mathjax" / "es5"
needs_node = pytest.mark.skipif(
    shutil.which("node") is None or not (MATHJAX / "node-main.js").exists(),
    reason="needs node and node_modules/mathjax (npm ci)",
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (r"\(x^2\)", ("x^2", False)),
        ("\\[\nf(x) = 1\n\\]", ("\nf(x) = 1\n", True)),
        (r"$$a &lt; b$$", ("a < b", True)),  # the page's HTML escapes are undone
        ("\\begin{align}a &amp;= b\\end{align}", ("\\begin{align}a &= b\\end{align}", True)),
        (r"\(x\]", None),  # mismatched delimiters: MathJax would leave the text alone too
        ("plain words", None),
    ],
)
def test_the_tex_of_a_math_element(raw: str, expected: tuple[str, bool] | None) -> None:
    assert _math._tex(raw) == expected


def _build(tmp_path: Path, body: str, **conf: object) -> tuple[Path, str]:
    src = tmp_path / "src"
    src.mkdir()
    settings = {
        "posviz_mathjax_dir": str(MATHJAX),
        "posviz_plotly_js": str(ROOT / PLOTLY_JS_DEFAULT),
        "posviz_math_at_build": True,
        "html_theme": "basic",
        **conf,
    }
    (src / "conf.py").write_text(
        "extensions = ['posviz.sphinxext']\n" + "".join(f"{k} = {v!r}\n" for k, v in settings.items())
    )
    (src / "index.rst").write_text("Index\n=====\n\n.. toctree::\n\n   math\n   sub/deep\n")
    (src / "math.rst").write_text(f"Math\n====\n\n{body}\n")
    (src / "sub").mkdir()
    (src / "sub" / "deep.rst").write_text("Deep\n====\n\n:math:`\\theta_i`\n")
    warnings = io.StringIO()
    with docutils_namespace():
        Sphinx(src, src, tmp_path / "out", tmp_path / "doctrees", "html", status=None, warning=warnings).build()
    return tmp_path / "out", warnings.getvalue()


@needs_node
def test_math_is_typeset_at_build_and_mathjax_is_not_loaded(tmp_path: Path) -> None:
    body = "Inline :math:`x^2 < y` and\n\n.. math::\n   :label: one\n\n   \\frac{a}{b} = \\text{位置}\n"
    out, warnings = _build(tmp_path, body)
    assert warnings == ""
    page, deep = (out / "math.html").read_text(), (out / "sub" / "deep.html").read_text()
    assert page.count('<mjx-container class="MathJax" jax="CHTML"') == 2
    assert '<mjx-container class="MathJax" jax="CHTML" display="true"' in page
    assert "<mjx-assistive-mml" in page and "<mjx-merror" not in page  # what screen readers read
    assert 'class="eqno">(1)' in page  # the number is kept
    # the TeX stays, hidden, first in its element (what a text tool reads); nowhere else
    inline = '<span class="math notranslate nohighlight"><span class="posviz-tex" hidden>\\(x^2 &lt; y\\)</span><mjx'
    assert inline in page
    assert page.count("\\frac") == 1 and '<span class="posviz-tex" hidden>\\[\\frac{a}{b}' in page
    assert "startup.js" not in page and "window.MathJax" not in page
    assert '<link rel="stylesheet" type="text/css" href="_static/posviz/mathjax/chtml.css" />' in page
    assert 'href="../_static/posviz/mathjax/chtml.css"' in deep and "mjx-container" in deep
    css = (out / "_static" / "posviz" / "mathjax" / "chtml.css").read_text()
    assert css.startswith(_math.SCALE_CSS) and "mjx-assistive-mml {" in css  # hidden MathML stays hidden
    fonts = out / "_static" / "posviz" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2"
    used = {line.split('woff-v2/')[1].split('"')[0] for line in css.splitlines() if "woff-v2/" in line}
    assert used and all((fonts / name).exists() for name in used)  # every font it names is served
    index = (out / "index.html").read_text()
    assert "chtml.css" not in index  # a page without math gets nothing
    # a second run over pages already typeset (an incremental build rewrites only what changed)
    # typesets them again from the TeX they kept: the same pages, the same stylesheet
    config = SimpleNamespace(posviz_math_at_build=True, posviz_mathjax_dir=str(MATHJAX))
    app = SimpleNamespace(outdir=str(out), srcdir=str(tmp_path), builder=SimpleNamespace(format="html"), config=config)
    _math.render_math(app, None)
    assert (out / "math.html").read_text() == page and (out / "sub" / "deep.html").read_text() == deep
    assert (out / "_static" / "posviz" / "mathjax" / "chtml.css").read_text() == css


@needs_node
def test_a_tex_error_is_a_warning_naming_the_page(tmp_path: Path) -> None:
    _, warnings = _build(tmp_path, ":math:`\\frac{a}`")
    assert "math.html: TeX error" in warnings and "\\\\frac{a}" in warnings


def test_without_node_the_pages_keep_mathjax(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_math.shutil, "which", lambda name: None)
    out, warnings = _build(tmp_path, ":math:`x`")
    assert "math is left to MathJax in the browser: node is not on PATH" in warnings
    page = (out / "math.html").read_text()
    assert "startup.js" in page and "\\(x\\)" in page and "mjx-container" not in page


def test_off_by_default(tmp_path: Path) -> None:
    out, warnings = _build(tmp_path, ":math:`x`", posviz_math_at_build=False)
    assert warnings == "" and "startup.js" in (out / "math.html").read_text()
