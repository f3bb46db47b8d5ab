r"""A chapter's MyST Markdown as plain Markdown, for the paired notebooks (tools/notebooks.py):
what Colab and a JupyterLab without ``jupyterlab-myst`` render.

Equation references become the numbers the book gives them (``(5.3)``, tagged on the equations
too), citations author-year text linked to the book's bibliography page (:func:`site_url`),
section references the section's title linked to the built page, admonitions collapsed
``<details>`` blocks (dropdowns, e.g. solutions) or quotes, and a glued value (computed when the
book is built) a note saying where the chapter's code computes it. ``_edition`` is the edition
being written (tools/notebooks.py's ``paired_ipynb`` sets it): its language for citations and
glue notes, its folder on the site for links, its catalog for section titles.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

import yaml
from pybtex.backends.plaintext import Backend as PlainText
from pybtex.database import parse_file
from pybtex.richtext import Text

ROOT = Path(__file__).resolve().parents[1]

_WHERE = {
    "zh_CN": {
        "in the code above": "由上方代码计算",
        "in the code below": "由下方代码计算",
        "in this notebook": "在本笔记本中计算",
    },
}
_edition: dict = {"language": "en", "folder": "", "catalog": {}}  # the edition being written


def _tr(text: str) -> str:
    """A message of the book in the edition being written (itself in English)."""
    return _edition["catalog"].get(text, text)


def config() -> dict:
    """``_config.yml``, read afresh; a copy, so that a caller may change it."""
    return copy.deepcopy(_parsed((ROOT / "_config.yml").read_text()))


@cache
def _parsed(text: str) -> dict:
    """A YAML text parsed once (every citation and link asks for the site's address)."""
    return yaml.safe_load(text)


ROLE = re.compile(r"\{(?P<role>[a-z][\w:-]*)\}`(?P<body>[^`]*)`")
LABELLED_MATH = re.compile(r"^\$\$(?P<body>.*?)\$\$[ \t]*\((?P<label>[^()\s]+)\)[ \t]*$", re.S | re.M)
TARGET = re.compile(r"^\((?P<label>[^()\s]+)\)=[ \t]*\n", re.M)
FENCE = re.compile(r"^(?P<fence>:{3,}|`{3,})\{(?P<name>[\w-]+)\}[ \t]*(?P<title>.*)$")
GLUE_CALL = re.compile(r"""\bglue\(\s*(?P<f>f?)(?P<quote>["'])(?P<name>.*?)(?P=quote)""")


def site_url(cfg: dict | None = None) -> str:
    """The built book's address: ``html.baseurl`` in ``_config.yml``, else the GitHub Pages
    address of ``repository.url`` (``https://ORG.github.io/REPO/``)."""
    cfg = cfg or config()
    base = (cfg.get("html") or {}).get("baseurl")
    if not base:
        org, repo = cfg["repository"]["url"].rstrip("/").split("/")[-2:]
        base = f"https://{org.lower()}.github.io/{repo}/"
    return base.rstrip("/") + "/"


def chapter_numbers() -> dict[str, int]:
    """Chapter numbers as the book shows them (numbered parts of ``_toc.yml``, counted across parts)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    numbers: dict[str, int] = {}
    for part in toc.get("parts", []):
        if part.get("numbered"):
            for chapter in part.get("chapters", []):
                numbers[Path(chapter["file"]).stem] = len(numbers) + 1
    return numbers


def _pages() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])]
    return [Path(f).stem for f in files + [c["file"] for c in toc.get("chapters", [])]]


@cache
def _labels() -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """Equation numbers as the book shows them (label -> "5.3"; numbered chapters) and labelled
    sections (label -> (page, title)) of every page."""
    equations: dict[str, str] = {}
    sections: dict[str, tuple[str, str]] = {}
    numbers = chapter_numbers()
    for name in _pages():
        path = ROOT / "book" / f"{name}.md"
        text = path.read_text() if path.exists() else ""
        if name in numbers:
            for k, match in enumerate(LABELLED_MATH.finditer(text), start=1):
                equations[match["label"]] = f"{numbers[name]}.{k}"
        for match in re.finditer(r"^\((?P<label>[^()\s]+)\)=[ \t]*\n+(?P<next>.+)$", text, re.M):
            # the title: the heading that follows, else the paragraph's bold lead-in, else the label
            heading = re.match(r"#+[ \t]+(.+)", match["next"])
            bold = re.match(r"\*\*(.+?)\.?\*\*", match["next"])
            title = heading[1] if heading else bold[1] if bold else match["label"].replace("-", " ").capitalize()
            sections[match["label"]] = (name, title.strip())
    return equations, sections


@cache
def _bibliography() -> dict[str, tuple[str, str]]:
    """Citation key -> (authors as the book cites them, year), from the ``bibtex_bibfiles``."""
    entries: dict[str, tuple[str, str]] = {}
    # one backend for every name: render_as("text") looks the backend up among the installed
    # packages' entry points on each call (7 s for the book's references; this takes 0.2 s)
    text = PlainText()
    for path in config().get("bibtex_bibfiles", []):
        for key, entry in parse_file(str(ROOT / path)).entries.items():
            people = entry.persons.get("author") or entry.persons.get("editor") or []
            names = [Text.from_latex(" ".join(p.prelast_names + p.last_names)).render(text) for p in people]
            entries[key] = (names or [key], entry.fields.get("year", "n.d."))
    return entries


# How a citation names its authors, per edition (the book's HTML: "Vaswani et al." / "Vaswani 等人").
_CITE_STYLE = {
    "en": {"et_al": "{first} et al.", "two": "{a} and {b}", "year_sep": ", ", "list_sep": ", "},
    "zh_CN": {"et_al": "{first} 等人", "two": "{a} 和 {b}", "year_sep": "，", "list_sep": "；"},
}


def _authors(names: list[str], language: str) -> str:
    style = _CITE_STYLE.get(language, _CITE_STYLE["en"])
    if len(names) > 2 or names[-1] == "others":
        return style["et_al"].format(first=names[0])
    return style["two"].format(a=names[0], b=names[1]) if len(names) == 2 else names[0]


def _site() -> str:
    """The built edition's address: the site's root, or its translation's folder."""
    folder = _edition["folder"]
    return site_url() + (f"{folder}/" if folder else "")


def _cite(role: str, keys: str) -> str:
    url = _site() + "book/references.html"
    bib = _bibliography()
    language = _edition["language"]
    style = _CITE_STYLE.get(language, _CITE_STYLE["en"])
    cites = []
    for key in (k.strip() for k in keys.split(",")):
        if key not in bib:
            raise KeyError(f"no bibliography entry {key!r}")
        names, year = bib[key]
        authors = _authors(names, language)
        if role == "cite:t":
            cites.append(f"[{authors} [{year}]]({url})")
        else:
            cites.append(f"[{authors}{style['year_sep']}{year}]({url})")
    return style["list_sep"].join(cites) if role == "cite:t" else "[" + style["list_sep"].join(cites) + "]"


def _role(match: re.Match, glue_place: Callable[[str], str | None] | None = None) -> str:
    role, body = match["role"], match["body"]
    equations, sections = _labels()
    explicit = re.fullmatch(r"(?P<text>.*?)\s*<(?P<target>[^<>]+)>", body, re.S)
    if role.startswith("cite"):
        return _cite(role if role == "cite:t" else "cite:p", body)
    if role == "eq":
        if body not in equations:
            raise KeyError(f"no labelled equation {body!r}")
        return f"({equations[body]})"
    if role in ("ref", "numref"):
        label = explicit["target"] if explicit else body
        if label not in sections:
            raise KeyError(f"no labelled section {label!r}")
        page, title = sections[label]
        return f"[{explicit['text'] if explicit else _tr(title)}]({_site()}book/{page}.html#{label})"
    if explicit:
        return explicit["text"]
    if role.startswith("glue"):
        # a value the chapter's code computes and the book build pastes in (myst-nb glue); the
        # notebook is generated without running it, so it says where the value is computed
        key = body.split(":")[0]
        where = (glue_place(key) if glue_place else None) or "in this notebook"
        if _edition["language"] in _WHERE:
            return f"*（{_WHERE[_edition['language']][where]}：`{key}`）*"
        return f"*(computed {where}: `{key}`)*"
    if role in ("math",):
        return f"${body}$"
    return f"`{body}`" if role in ("code", "literal", "file", "command") else body


def _directives(text: str) -> str:
    """``:::{admonition}`` blocks (and other directives) in plain Markdown, innermost first."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            out.append(lines[i])
            i += 1
            continue
        fence, name, title = opening["fence"], opening["name"], opening["title"].strip()
        j = i + 1
        options: dict[str, str] = {}
        while j < len(lines) and (m := re.match(r"^:(?P<key>[\w-]+):[ \t]*(?P<value>.*)$", lines[j])):
            options[m["key"]] = m["value"]
            j += 1
        depth, k = 1, j
        while k < len(lines):  # the closing fence: the same characters, at least as many, nothing else
            if FENCE.match(lines[k]) and lines[k].startswith(fence[0]) and FENCE.match(lines[k])["fence"] == fence:
                depth += 1
            elif lines[k].strip() == fence:
                depth -= 1
                if depth == 0:
                    break
            k += 1
        body = _directives("\n".join(lines[j:k])).strip("\n")
        title = title or name.capitalize()
        if "dropdown" in options.get("class", "") or name == "dropdown":
            out += ["<details>", f"<summary>{title}</summary>", "", body, "", "</details>"]
        else:
            out += [f"> **{title}**", ">"] + [f"> {line}".rstrip() for line in body.split("\n")]
        i = k + 1
    return "\n".join(out)


def glue_names(code: str) -> list[re.Pattern]:
    """The names that ``glue(...)`` calls in ``code`` give values to, as patterns (an f-string
    name matches any text in place of its fields: ``f"ppl-{name}-1x"``)."""
    patterns = []
    for call in GLUE_CALL.finditer(code):
        parts = re.split(r"\{[^{}]*\}", call["name"]) if call["f"] else [call["name"]]
        patterns.append(re.compile(".+?".join(re.escape(part) for part in parts)))
    return patterns


def glue_places(cells: list[dict]) -> list[Callable[[str], str | None]]:
    """For each cell, a function telling where a glued value is computed: "in the code above"
    (a code cell before it glues that name), "in the code below", or ``None`` (not found)."""
    names = [glue_names(c["source"]) if c["cell_type"] == "code" else [] for c in cells]

    def place(i: int) -> Callable[[str], str | None]:
        def where(key: str) -> str | None:
            for cells_, text in ((names[:i], "in the code above"), (names[i + 1 :], "in the code below")):
                if any(p.fullmatch(key) for patterns in cells_ for p in patterns):
                    return text
            return None

        return where

    return [place(i) for i in range(len(cells))]


def plain_markdown(source: str, glue_place: Callable[[str], str | None] | None = None) -> str:
    """One Markdown cell of a chapter without MyST: what Colab and a bare JupyterLab render.

    A glued value (``{glue:text}`name:format```, computed when the book is built) cannot be
    known without running the chapter; it becomes ``(computed in the code above: `name`)``,
    ``glue_place(name)`` telling where (default: "in this notebook")."""
    text = _directives(source)
    text = TARGET.sub("", text)
    equations, _ = _labels()

    def tagged(match: re.Match) -> str:
        label = match["label"]
        if label not in equations:
            raise KeyError(f"no labelled equation {label!r}")
        return f"$${match['body'].rstrip()}\n\\tag{{{equations[label]}}}\n$$"

    text = LABELLED_MATH.sub(tagged, text)
    text = ROLE.sub(lambda match: _role(match, glue_place), text)
    # links to other pages of the book: to the built site (a notebook opened alone has no pages)
    return re.sub(
        r"\]\((?![a-z]+:|#)(?P<page>[^()\s#]+)\.md(?P<anchor>#[^()\s]*)?\)",
        lambda m: f"]({_site()}book/{m['page']}.html{m['anchor'] or ''})",
        text,
    )
