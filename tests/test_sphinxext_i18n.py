"""posviz.sphinxext in a translated edition: equations, glued phrases and citations.

Each test builds a one-page MyST project in Chinese (``language = "zh_CN"``) from a small catalog,
with and without posviz's extension where the difference is the point. They are the first line
against the Chinese edition's losses; tests/test_built_pages.py checks the built book itself.
"""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest
import sphinx.locale
from sphinx.application import Sphinx
from sphinx.util.docutils import docutils_namespace

from posviz.sphinxext._assets import MATHJAX_PARTS, PLOTLY_FULL_JS
from posviz.sphinxext._translated_math import plain_digits, skeleton

PLOTLY_JS = PLOTLY_FULL_JS  # plotly.py's own bundle: no `npm ci` needed (a copy of the tree has none)
PAGE = """# Page

$$
a = b \\quad \\text{for every } m
$$ (eq-one)

Inline $x \\text{ if } y$ and $z$.

$$
c = d
$$
"""
CATALOG = {
    "Page": "页面",
    "\na = b \\quad \\text{for every } m\n": "\na = b \\quad \\text{对所有 } m\n",
    "Inline $x \\text{ if } y$ and $z$.": "行内 $x \\text{ 若 } y$ 与 $z$。",
    "\nc = d\n": "\nc = d\n",  # the same in both: Sphinx keeps it as it is
}


def _po(messages: dict[str, str]) -> str:
    def quote(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

    entries = [f"msgid {quote(k)}\nmsgstr {quote(v)}\n" for k, v in messages.items()]
    return 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n' + "\n".join(entries)


@pytest.fixture
def fake_mathjax(tmp_path: Path) -> Path:
    root = tmp_path / "mathjax"
    for part in MATHJAX_PARTS:
        path = root / part
        if path.suffix == ".js":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("/* mathjax */")
        else:
            path.mkdir(parents=True, exist_ok=True)
    return root


def _build(
    tmp_path: Path,
    page: str,
    catalog: dict[str, str],
    extensions: tuple[str, ...] = ("myst_nb", "posviz.sphinxext"),
    language: str = "zh_CN",
    conf: str = "",
    name: str = "out",
    files: dict[str, str] | None = None,
) -> tuple[str, str]:
    """Build ``page`` (index.md, beside ``files``) in ``language`` with ``catalog``; (the page's
    HTML, the warnings)."""
    src = tmp_path / f"{name}-src"
    (src / "locale/zh_CN/LC_MESSAGES").mkdir(parents=True, exist_ok=True)
    (src / "conf.py").write_text(
        f"extensions = {list(extensions)!r}\nmyst_enable_extensions = ['dollarmath', 'amsmath']\n"
        f"html_theme = 'basic'\nlocale_dirs = ['locale']\ngettext_compact = False\nnb_execution_mode = 'off'\n"
        f"posviz_mathjax_dir = {str(tmp_path / 'mathjax')!r}\nposviz_plotly_js = {str(PLOTLY_JS)!r}\n{conf}"
        # (always set: an earlier build in this process may have changed Sphinx's shared default)
        + f"source_suffix = {{'.md': {'myst-nb' if 'myst_nb' in extensions else 'markdown'!r}}}\n"
    )
    (src / "index.md").write_text(page)
    for path, text in (files or {}).items():
        (src / path).write_text(text)
    (src / "locale/zh_CN/LC_MESSAGES/index.po").write_text(_po(catalog), encoding="utf-8")
    warnings = io.StringIO()
    # Sphinx keeps each catalog it has read for the whole process (a second build would see the
    # first one's messages): every build here reads its own
    sphinx.locale.translators.clear()
    with docutils_namespace():
        app = Sphinx(
            src,
            src,
            tmp_path / name,
            tmp_path / f"{name}-doctrees",
            "html",
            status=None,
            warning=warnings,
            confoverrides={"language": language},
            freshenv=True,
        )
        app.build()
    return (tmp_path / name / "index.html").read_text(encoding="utf-8"), warnings.getvalue()


def _display_math(html: str) -> list[str]:
    return [m.strip() for m in re.findall(r"\\\[(.*?)\\\]", html, re.S)]


# --- equations ---------------------------------------------------------------------------------


def test_skeleton_empties_text_and_nothing_else() -> None:
    assert skeleton("a \\text{for every } m") == skeleton("a  \\text{对所有 }\n m") == "a \\text{} m"
    assert skeleton("\\text{a {b} c}x") == "\\text{}x"  # nested braces
    assert skeleton("\\text{\\}}y") == "\\text{}y"  # an escaped brace inside
    assert skeleton("\\mbox{w} \\textbf{v}") == "\\mbox{} \\textbf{}"
    assert skeleton("\\operatorname{Attn}(x)") == "\\operatorname{Attn}(x)"  # not words to translate
    assert skeleton("x^2") != skeleton("x^3")


def test_myst_alone_loses_a_translated_display_equation(tmp_path: Path, fake_mathjax: Path) -> None:
    """The root cause, pinned: Sphinx's Locale wraps a literal node's msgstr in reST's ``::``
    notation and parses it with the page's parser; MyST makes a paragraph ``::`` of it and the
    equation becomes ``\\[::\\]``. (If this starts failing, Sphinx or MyST fixed it upstream.)"""
    html, _ = _build(tmp_path, PAGE, CATALOG, extensions=("myst_parser",))
    assert "::" in _display_math(html)


def test_a_translated_display_equation_survives(tmp_path: Path, fake_mathjax: Path) -> None:
    html, warnings = _build(tmp_path, PAGE, CATALOG)
    display = _display_math(html)
    assert display == ["a = b \\quad \\text{对所有 } m", "c = d"], display
    assert 'id="equation-eq-one"' in html and "(1)" in html  # its label and number kept
    assert "\\(x \\text{ 若 } y\\)" in html and "页面" in html  # the rest translated as before
    assert "equation" not in warnings, warnings


def test_an_untranslated_equation_stays_english(tmp_path: Path, fake_mathjax: Path) -> None:
    catalog = {**CATALOG, "\na = b \\quad \\text{for every } m\n": ""}
    html, warnings = _build(tmp_path, PAGE, catalog)
    assert _display_math(html)[0] == "a = b \\quad \\text{for every } m"
    assert "equation" not in warnings


def test_an_equation_lost_or_changed_in_translation_is_a_warning(tmp_path: Path, fake_mathjax: Path) -> None:
    lost = {**CATALOG, "Inline $x \\text{ if } y$ and $z$.": "行内 $x \\text{ 若 } y$。"}
    _, warnings = _build(tmp_path, PAGE, lost, name="lost")
    assert "an equation lost in translation (1 of 1): 'z'" in warnings, warnings
    changed = {**CATALOG, "\nc = d\n": "\nc = e\n"}
    _, warnings = _build(tmp_path, PAGE, changed, name="changed")
    assert "an equation lost in translation (1 of 1): 'c = d'" in warnings
    assert "an equation the English page does not have" in warnings and "'c = e'" in warnings


def test_the_check_catches_what_locale_alone_loses(tmp_path: Path, fake_mathjax: Path) -> None:
    """Without the verbatim translation, the check after Locale names the emptied equation."""
    extension = (
        "from posviz.sphinxext._translated_math import CheckTranslatedMath, RecordMath\n"
        "def setup(app):\n    app.add_transform(RecordMath)\n    app.add_transform(CheckTranslatedMath)\n"
    )
    conf = "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n"
    html, warnings = _build(
        tmp_path, PAGE, CATALOG, extensions=("myst_parser", "check_only"), conf=conf, files={"check_only.py": extension}
    )
    assert "::" in _display_math(html)
    assert "an equation lost in translation (1 of 1): 'a = b \\\\quad \\\\text{} m'" in warnings, warnings


GROUPED_PAGE = """# Page

$$
b = 10{,}000 \\cdot 16^{32/30} \\approx 192{,}484
$$

At $1{,}023/16$, $2\\,048$ and $40\\,\\mu$, $f(1, 2)$.
"""


def test_plain_digits_removes_group_separators_only() -> None:
    assert plain_digits("10{,}000 + 1{,}000{,}000 + 1\\,024") == "10000 + 1000000 + 1024"
    for kept in ("40\\,\\mu", "f(1, 2)", "0.125{,}5", "a_{12}\\,345", "1{,}02"):
        assert plain_digits(kept) == kept
    assert skeleton("b = 10{,}000") == skeleton("b = 10000")  # the check compares up to the grouping


def test_chinese_equations_write_numbers_in_plain_digits(tmp_path: Path, fake_mathjax: Path) -> None:
    """The Chinese edition writes 10000, never 10,000 (its glossary); an equation too, untranslated or not."""
    catalog = {
        "Page": "页面",
        "At $1{,}023/16$, $2\\,048$ and $40\\,\\mu$, $f(1, 2)$.": (
            "在 $1{,}023/16$、$2\\,048$ 与 $40\\,\\mu$、$f(1, 2)$ 处。"
        ),
    }
    html, warnings = _build(tmp_path, GROUPED_PAGE, catalog)
    assert _display_math(html) == ["b = 10000 \\cdot 16^{32/30} \\approx 192484"], _display_math(html)
    inline = re.findall(r"\\\((.*?)\\\)", html)
    assert inline == ["1023/16", "2048", "40\\,\\mu", "f(1, 2)"], inline
    assert "{,}" not in html and "equation" not in warnings, warnings
    english, _ = _build(tmp_path, GROUPED_PAGE, {}, language="en", name="en")
    assert _display_math(english) == ["b = 10{,}000 \\cdot 16^{32/30} \\approx 192{,}484"]
    assert "\\(1{,}023/16\\)" in english and "\\(2\\,048\\)" in english


def test_the_catalog_lint_sees_a_display_equation_changed(tmp_path: Path) -> None:
    """``tools/i18n.py check`` (make test) finds it in the catalog already, before any build."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
    import i18n

    equations = {k: v for k, v in CATALOG.items() if k.startswith("\n")}  # (inline math stays as it is)
    po = tmp_path / "page.po"
    po.write_text(_po(equations), encoding="utf-8")
    assert i18n.lint(po) == []  # the \text{} words translated: the same equation
    po.write_text(_po({**equations, "\nc = d\n": "\nc = e\n"}), encoding="utf-8")
    assert any("display equation 'c = d'" in problem for problem in i18n.lint(po)), i18n.lint(po)


# --- glued phrases -------------------------------------------------------------------------------


GLUE_PAGE = "# Page\n\nThe difference is {glue:text}`spread`.\n"


def _glue_build(tmp_path: Path, language: str) -> str:
    """A page whose translated paragraph glues a phrase made by posviz.i18n.tr (as posviz.book.glue
    saves it: the English text and the message behind it)."""
    executed = tmp_path / "jupyter_execute"
    executed.mkdir(exist_ok=True)
    saved = {
        "spread": {
            "data": {"text/plain": "'inside the seed spread'"},
            "metadata": {"posviz_i18n": ["inside the seed spread", {}]},
        }
    }
    (executed / "index.glue.json").write_text(json.dumps(saved))
    catalog = {"Page": "页面", "The difference is {glue:text}`spread`.": "差值{glue:text}`spread`。"}
    html, warnings = _build(tmp_path, GLUE_PAGE, catalog, language=language, name=f"out-{language}")
    assert "WARNING" not in warnings, warnings
    return re.sub(r"<[^>]+>", "", html)


def test_a_glued_phrase_shows_in_the_editions_language(tmp_path: Path, fake_mathjax: Path) -> None:
    from posviz.i18n import translate

    chinese = translate("inside the seed spread", "zh_CN")
    assert chinese != "inside the seed spread"  # the catalog translates it
    assert f"差值{chinese}。" in _glue_build(tmp_path, "zh_CN")
    assert "The difference is inside the seed spread." in _glue_build(tmp_path, "en")


# --- citations -----------------------------------------------------------------------------------


BIB = """@article{vaswani2017attention,
  author = {Vaswani, Ashish and Shazeer, Noam and Parmar, Niki},
  title = {Attention Is All You Need}, journal = {NeurIPS}, year = {2017}}
@article{press2022train,
  author = {Press, Ofir and Smith, Noah A.},
  title = {Train Short, Test Long}, journal = {ICLR}, year = {2022}}
"""
CITE_PAGE = """# Page

As {cite:t}`vaswani2017attention` and {cite:t}`press2022train` show {cite:p}`vaswani2017attention`.

Both {cite:p}`vaswani2017attention,press2022train`.

```{bibliography}
```
"""
CITE_CATALOG = {
    "As {cite:t}`vaswani2017attention` and {cite:t}`press2022train` show {cite:p}`vaswani2017attention`.": (
        "正如 {cite:t}`vaswani2017attention` 与 {cite:t}`press2022train` 所示 {cite:p}`vaswani2017attention`。"
    ),
    "Both {cite:p}`vaswani2017attention,press2022train`.": "两者 {cite:p}`vaswani2017attention,press2022train`。",
}


def _cite_build(tmp_path: Path, language: str) -> str:
    conf = "bibtex_bibfiles = ['refs.bib']\nbibtex_reference_style = 'author_year'\n"
    extensions = ("myst_parser", "sphinxcontrib.bibtex", "posviz.sphinxext")
    html, warnings = _build(
        tmp_path, CITE_PAGE, CITE_CATALOG, extensions, language, conf, f"out-{language}", {"refs.bib": BIB}
    )
    assert "WARNING" not in warnings, warnings
    body = html.split('<div class="body"', 1)[-1]
    return re.sub(r"\s+", " ", re.sub(r"<(?!/?em\b)[^>]+>", "", body))  # the text, with <em> kept


def test_citations_in_chinese_prose_read_chinese(tmp_path: Path, fake_mathjax: Path) -> None:
    text = _cite_build(tmp_path, "zh_CN")
    assert "正如 Vaswani 等人 [2017] 与 Press 和 Smith [2022] 所示 [Vaswani 等人，2017]。" in text, text
    assert "两者 [Press 和 Smith，2022；Vaswani 等人，2017]。" in text, text  # the zh marks (issue 26 review)
    assert "et al." not in text.split("Attention Is All")[0]


def test_citations_in_english_are_unchanged(tmp_path: Path, fake_mathjax: Path) -> None:
    text = _cite_build(tmp_path, "en")
    assert "As Vaswani <em>et al.</em> [2017] and Press and Smith [2022] show [Vaswani <em>et al.</em>, 2017]." in text
    assert "Both [Press and Smith, 2022, Vaswani <em>et al.</em>, 2017]." in text, text
