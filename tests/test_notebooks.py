"""The generated Colab notebooks as a renderer without MyST shows them (Colab, JupyterLab without
extensions): the Markdown cells rendered by a plain CommonMark renderer (markdown-it-py's
``commonmark`` preset, no plugins), and what a reader sees checked for MyST markup left over."""

from __future__ import annotations

import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import myst_plain  # noqa: E402
import notebooks  # noqa: E402

ROLES = r"(?:eq|numref|ref|doc|cite(?::\w+)?|glue(?::\w*)?|term|download|abbr|index|math|sub|sup|prf:\w+)"
# what MyST markup looks like once a plain renderer has been through it (a role's backticks become
# a code span, so the role's name is left in front of the code's text)
SHOWN = {
    "role": re.compile(r"\{" + ROLES + r"\}"),
    "directive fence": re.compile(r"^:{3,}", re.M),
    "target": re.compile(r"^\([^()\s]+\)=\s*$", re.M),
    "equation label": re.compile(r"\$\$[ \t]*\([^()\s]+\)[ \t]*$", re.M),
    "glue key": re.compile(r"\{glue"),
}


class _Text(HTMLParser):
    """The text of rendered HTML, and whether each ``<details>`` is open."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.details: list[bool] = []
        self.code_languages: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "details":
            self.details.append("open" in values)
        if tag == "code" and (values.get("class") or "").startswith("language-"):
            self.code_languages.append(values["class"].removeprefix("language-"))

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def _rendered(name: str, folder: str = "") -> tuple[str, _Text]:
    nb = json.loads((ROOT / folder / "book" / f"{name}.ipynb").read_text())
    source = "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    html = MarkdownIt("commonmark").render(source)
    text = _Text()
    text.feed(html)
    return "".join(text.parts), text


@pytest.mark.parametrize("name", [p.stem for p in notebooks.chapters()])
def test_colab_notebook_shows_no_myst(name: str) -> None:
    shown, parsed = _rendered(name)
    left = {kind: pattern.findall(shown)[:3] for kind, pattern in SHOWN.items() if pattern.search(shown)}
    assert not left, f"{name}.ipynb shows MyST markup when rendered as plain Markdown: {left}"
    # a directive fence that survived would render as a code block "in the language" {name}
    assert not [lang for lang in parsed.code_languages if lang.startswith("{")]
    md = (ROOT / "book" / f"{name}.md").read_text()
    assert parsed.details == [False] * md.count("class: dropdown"), "every solution collapsed"
    # every glued value says where it is computed, by the name the code gives it
    for key in re.findall(r"\{glue(?::\w*)?\}`([^`:]+)", md):
        assert (
            f"(computed in the code above: {key})" in shown
            or f"(computed in the code below: {key})" in shown
            or (f"(computed in this notebook: {key})" in shown)
        ), f"{name}: glued value {key} not shown as computed"


def test_glue_placeholder_says_where():
    cells = [
        {"cell_type": "code", "source": 'glue("a-b", 1.0, display=False)\nfor n in "xy":\n    glue(f"p-{n}-1x", 2)'},
        {"cell_type": "markdown", "source": "A {glue:text}`a-b:.2f`, {glue:text}`p-x-1x` and {glue:text}`c`."},
        {"cell_type": "code", "source": "glue('c', 3)"},
    ]
    place = myst_plain.glue_places(cells)[1]
    out = myst_plain.plain_markdown(cells[1]["source"], place)
    assert out == (
        "A *(computed in the code above: `a-b`)*, *(computed in the code above: `p-x-1x`)* and "
        "*(computed in the code below: `c`)*."
    )
    assert myst_plain.plain_markdown("{glue:text}`z`") == "*(computed in this notebook: `z`)*"


CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.mark.parametrize("name", [p.stem for p in notebooks.chapters()])
def test_chinese_notebook_is_translated_and_shows_no_myst(name: str) -> None:
    """zh/book/<chapter>.ipynb: the same cells, the prose from the catalogs, figures in Chinese."""
    shown, _ = _rendered(name, "zh")
    left = {kind: pattern.findall(shown)[:3] for kind, pattern in SHOWN.items() if pattern.search(shown)}
    assert not left, f"zh/{name}.ipynb shows MyST markup: {left}"
    zh = json.loads((ROOT / "zh" / "book" / f"{name}.ipynb").read_text())
    en = json.loads((ROOT / "book" / f"{name}.ipynb").read_text())
    assert [c["cell_type"] for c in zh["cells"]] == [c["cell_type"] for c in en["cells"]]
    code = [
        ("".join(a["source"]), "".join(b["source"]))
        for a, b in zip(zh["cells"], en["cells"])
        if a["cell_type"] == "code"
    ]
    assert 'posviz.set_language("zh_CN")' in code[0][0]
    assert all(a == b for a, b in code[1:]), "the code cells are the English notebook's"
    english = []
    for cell in zh["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        text = re.sub(r"\$\$.*?\$\$|```.*?```", "", "".join(cell["source"]), flags=re.S)  # display math, code
        for block in re.split(r"\n\s*\n", text):
            prose = re.sub(r"\$[^$]*\$|`[^`]*`|\[[^\]]*\]\([^)]*\)|<[^>]+>", "", block)
            if len(re.findall(r"[A-Za-z]{3,}", prose)) >= 4 and not CJK.search(prose):
                english.append(block[:80])
    assert not english, f"zh/{name}.ipynb: paragraphs left in English: {english[:3]}"
    assert f"{myst_plain.site_url()}zh/book/" in "".join("".join(c["source"]) for c in zh["cells"])
