"""The built pages as text: Markdown that a cell or the source left unrendered; on the Chinese
edition, prose left in English, its language and its links to the English twin, the twin's
equations, and no kind of element or stylesheet rule the twin lacks.

Reads ``_build/html`` (``make book`` first; ``POSVIZ_SITE`` points elsewhere); no browser. A table
that a cell prints with ``IPython.display.Markdown`` once came out as a paragraph of pipes (the
notebook renderer's CommonMark has no tables), and a role that fails to resolve stays as text.
test_built_pages_wording.py holds the Chinese edition's wording (tables' and figures' words,
citations, numbers) and imports the helpers it shares with this file from here.
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(os.environ.get("POSVIZ_SITE", ROOT / "_build" / "html"))
PAGES = sorted(SITE.glob("book/*.html")) + sorted(SITE.glob("zh/book/*.html")) if SITE.exists() else []
ZH_PAGES = [p for p in PAGES if p.relative_to(SITE).parts[0] == "zh"]
if not PAGES:
    pytest.skip(f"{SITE} is not built: run `make book` first", allow_module_level=True)

CODE = re.compile(r"<(pre|code|script|style)\b.*?</\1>", re.S)
PARAGRAPH = re.compile(r"<p\b[^>]*>(.*?)</p>", re.S)
TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
ROLE = re.compile(r"\{[a-z][\w:-]*\}`")


def _paragraphs(page: Path) -> list[str]:
    text = CODE.sub("", page.read_text(encoding="utf-8"))
    return [html.unescape(re.sub(r"<[^>]+>", "", p)) for p in PARAGRAPH.findall(text)]


def test_a_raw_markdown_table_is_found() -> None:
    """The check itself: the paragraph the CommonMark renderer made of a table fails it."""
    page = "<p>| method | ppl |\n|—|–:|\n| none | 8.52 |</p>"
    lines = html.unescape(PARAGRAPH.findall(page)[0]).splitlines()
    assert sum(bool(TABLE_ROW.match(line)) for line in lines) >= 2


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(SITE).as_posix())
def test_no_markdown_left_as_text(page: Path) -> None:
    raw_tables, raw_roles = [], []
    for paragraph in _paragraphs(page):
        lines = paragraph.splitlines()
        if sum(bool(TABLE_ROW.match(line)) for line in lines) >= 2:
            raw_tables.append(paragraph[:120])
        raw_roles += ROLE.findall(paragraph)
    assert not raw_tables, f"Markdown tables shown as text: {raw_tables}"
    assert not raw_roles, f"MyST roles shown as text: {raw_roles}"


# The Chinese edition: no prose left in English. Checked: every paragraph, list item, heading,
# table cell, caption, admonition title, self-check question and figure description, with code,
# math and citations removed. Left alone, by design: the API reference's docstrings (the page says
# they stay English), bibliography entries, and names (a short allowlist).
CJK = re.compile(r"[\u3400-\u9fff]")
PROSE = "p, li, h1, h2, h3, h4, th, td, figcaption, .admonition-title, legend, label, summary, caption"
SKIP = (
    "pre, code, script, style, mjx-container, .math, dl.py, .bibliography, .citation, .cite, nav.bd-links,"
    " .cell_output table,"  # a table a cell prints (display(Markdown)) is code output: it may stay English
    " .docstrings"  # the API reference's docstrings (book/api*.md wrap them in this container)
)
NAMES = re.compile(
    r"^(?:RoPE|ALiBi|NoPE|T5|Shaw|Transformer-XL|BERT[\w-]*|GPT[\w.-]*|PI|NTK|YaRN|xPos|LLaMA|PyTorch|"
    r"Hugging|Face|posviz|et|al|Colab|Binder|JupyterLab|English|Python|softmax|max_len|transformers|torch|"
    r"rotary-embedding-torch|x-transformers|eager|DistilBERT|[A-Za-z]|\W+)$"
)


# What the text checks below read of a page: its HTML without the typeset math (MathJax's output,
# written at build time: about 3/4 of a chapter's elements) and without the scripts' bodies (the
# figures' data): 115 kB of rope's 761 kB. Each check removes both before it reads a word (SKIP;
# test_built_pages_wording.py's UI_SKIP, NUMBER_SKIP; no figure holds math), so the texts are the
# same, as test_the_text_checks_read_the_same_without_math_and_scripts (in test_built_pages_wording.py)
# shows. Parsing them too cost 0.2-0.4 s of CPU a page, several times a page: this file (then with
# test_built_pages_wording.py's checks) took 33 s alone here, 22 s without them.
MATH_AND_SCRIPTS = re.compile(r"<mjx-container\b.*?</mjx-container>|(<script\b[^>]*>).*?(</script>)", re.S)


def _soup(page: Path, whole: bool = False) -> object:
    """``page`` parsed, without its typeset math and its scripts' bodies (``whole``: with them)."""
    from bs4 import BeautifulSoup

    html = page.read_text(encoding="utf-8")
    if not whole:
        html = MATH_AND_SCRIPTS.sub(lambda m: m[1] + m[2] if m[1] else "", html)
    return BeautifulSoup(html, "html.parser")


def _english_prose(page: Path, whole: bool = False) -> list[str]:
    soup = _soup(page, whole)
    main = soup.select_one("main") or soup
    for node in main.select(SKIP):
        node.decompose()
    if page.stem == "glossary":  # the table shows both languages by design: its English column
        for row in main.select("table tr"):
            cells = row.find_all(["td", "th"])
            if cells:
                cells[0].decompose()
    left = []
    for element in main.select(PROSE):
        if element.find(PROSE.split(", ")):  # judged by its innermost prose element
            continue
        text = " ".join(element.get_text(" ").split())
        words = [w for w in re.findall(r"[A-Za-z][\w'.-]*", text) if not re.search(r"[_.]\w", w)]  # not identifiers
        if CJK.search(text) or len(words) < 2 or all(NAMES.match(w) for w in words):
            continue
        left.append(text[:100])
    return left


@pytest.mark.parametrize("page", ZH_PAGES, ids=lambda p: p.relative_to(SITE).as_posix())
def test_chinese_pages_leave_no_prose_in_english(page: Path) -> None:
    assert not _english_prose(page), f"English left on {page.name}: {_english_prose(page)[:8]}"


def test_the_english_prose_check_sees_english() -> None:
    english = SITE / "book" / "rope.html"
    assert len(_english_prose(english)) > 20  # the same check on an English page fails loudly


@pytest.mark.parametrize("page", ZH_PAGES, ids=lambda p: p.relative_to(SITE).as_posix())
def test_chinese_pages_declare_their_language_and_link_their_twin(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert '<html lang="zh-CN"' in text
    # words that scripts write into the page: the solutions' show/hide hints
    assert "toggleHintShow = '点击显示'" in text and "Click to" not in text
    twin = SITE / page.relative_to(SITE / "zh")
    assert twin.exists()
    assert f'href="../../{page.relative_to(SITE / "zh").as_posix()}" hreflang="en"' in text
    assert f'href="../zh/{page.relative_to(SITE / "zh").as_posix()}" hreflang="zh-CN"' in twin.read_text(
        encoding="utf-8"
    ).replace('href="../zh/book/', 'href="../zh/book/')


# --- The Chinese edition against its English twin: equations, kinds of element, stylesheets ---

EN_PAGES = [p for p in PAGES if p.relative_to(SITE).parts[0] != "zh" and (SITE / "zh" / p.relative_to(SITE)).exists()]
MATH = re.compile(
    r'<(?P<tag>span|div) class="math notranslate nohighlight"[^>]*>(?:\s*<span class="eqno">.*?</span>)?'
    r'(?:\s*<span class="posviz-tex" hidden>(?P<source>.*?)</span>)?(?P<rest>.*?)</(?P=tag)>',
    re.S,
)
DELIMITED = re.compile(r"\\\[(.*?)\\\]|\\\((.*?)\\\)", re.S)
TEXT_WORDS = re.compile(r"\\(text|textrm|textit|textbf|textsf|mbox)\s*\{(?:[^{}]|\{[^{}]*\})*\}")


def _twin(page: Path) -> Path:
    return SITE / "zh" / page.relative_to(SITE)


def _equations(page: Path) -> dict[str, list[str]]:
    """A page's display and inline equations, in page order: the TeX that MathJax reads in the
    browser (``\\[...\\]``, ``\\(...\\)``), or, where the build typeset the math, the TeX it kept
    beside the typeset markup (``<span class="posviz-tex" hidden>``). An element with no TeX at all
    counts as ``"<no TeX>"``."""
    found: dict[str, list[str]] = {"display": [], "inline": []}
    for match in MATH.finditer(page.read_text(encoding="utf-8")):
        kind = "display" if match["tag"] == "div" else "inline"
        source = html.unescape(match["source"] if match["source"] is not None else match["rest"])
        tex = ["".join(pair) for pair in DELIMITED.findall(source)] or ["<no TeX>"]
        found[kind] += [" ".join(t.split()) for t in tex]
    return found


def _without_words(tex: str) -> str:
    """The equation up to what a translation may change: the words of its ``\\text{...}``, and
    the grouping of its numbers (the Chinese edition writes ``10{,}000`` as ``10000``)."""
    from posviz.sphinxext._translated_math import plain_digits

    return " ".join(plain_digits(TEXT_WORDS.sub(lambda m: f"\\{m[1]}{{}}", tex)).split())


def test_the_equation_comparison_sees_a_lost_and_a_changed_equation() -> None:
    assert _without_words("a \\quad \\text{for every } m") == _without_words("a \\quad \\text{对所有 {x}} m")
    assert _without_words("a \\text{x} m") != _without_words("::")
    assert _without_words("\\operatorname{Attn}(X)") != _without_words("\\operatorname{注意力}(X)")
    assert _without_words("b = 10{,}000") == _without_words("b = 10000") != _without_words("b = 1000")


@pytest.mark.parametrize("page", EN_PAGES, ids=lambda p: p.relative_to(SITE).as_posix())
def test_every_equation_is_in_the_chinese_twin(page: Path) -> None:
    """Same count of display and of inline equations, none empty, the same TeX up to the words in
    its ``\\text{...}`` (the first Chinese edition showed six display equations as ``\\[::\\]``)."""
    english, chinese = _equations(page), _equations(_twin(page))
    for kind in ("display", "inline"):
        unread = [m for m in english[kind] + chinese[kind] if m == "<no TeX>"]
        assert not unread, f"{page.name}: {len(unread)} {kind} equations whose TeX the page does not keep"
        empty = [m for m in chinese[kind] if not m.strip() or m.strip() == "::"]
        assert not empty, f"{kind} equations empty in the Chinese {page.name}: {len(empty)} ({empty[:3]})"
        en = sorted(_without_words(m) for m in english[kind])
        zh = sorted(_without_words(m) for m in chinese[kind])
        missing = [m for m in en if m not in zh]
        extra = [m for m in zh if m not in en]
        assert len(en) == len(zh) and not missing and not extra, (
            f"{page.name}: {len(en)} English {kind} equations, {len(zh)} Chinese; "
            f"missing in Chinese {missing[:4]}, not in English {extra[:4]}"
        )


# test_browser.py audits a Chinese page with every axe rule but the colour rules: its English
# twin's audit read the colours. That holds while a Chinese page shows no kind of element (tag and
# classes, and any colour its style attribute sets) and no colour the twin lacks. MathJax's own
# elements are left out: the Chinese words in an equation (\text{...}) are typeset as other
# glyph boxes, in the equation's colour.
TWINS = [
    page
    for page in sorted(SITE.glob("zh/**/*.html"))
    if not any(part.startswith("_") for part in page.relative_to(SITE).parts)
    and (SITE / page.relative_to(SITE / "zh")).exists()
]
COLOUR = re.compile(r"#[0-9a-fA-F]{6}\b|#[0-9a-fA-F]{3}\b|rgba?\([^)]*\)")
ELEMENT = re.compile(r"<([a-zA-Z][\w-]*)\b([^>]*)>")
ATTRIBUTE = re.compile(r'\b(class|style)="([^"]*)"')


def _kinds(text: str) -> set[tuple[str, ...]]:
    """Every kind of element on a page, and every colour it names."""
    kinds: set[tuple[str, ...]] = {("colour", c.lower().replace(" ", "")) for c in COLOUR.findall(text)}
    for tag, attributes in ELEMENT.findall(text):
        if tag.startswith("mjx-"):
            continue
        found = dict(ATTRIBUTE.findall(attributes))
        style = found.get("style", "")
        kinds.add((tag.lower(), " ".join(sorted(found.get("class", "").split())), *COLOUR.findall(style)))
    return kinds


def test_the_kinds_check_sees_a_new_kind_of_element() -> None:
    english = '<p class="a b">x</p><span style="color: #123456">y</span>'
    assert not _kinds('<p class="b a">字</p>') - _kinds(english)
    assert _kinds('<p class="a c">字</p>') - _kinds(english)
    assert _kinds('<span style="color: #654321">字</span>') - _kinds(english)


@pytest.mark.parametrize("page", TWINS, ids=lambda p: p.relative_to(SITE).as_posix())
def test_a_chinese_page_has_its_english_twins_kinds_of_element(page: Path) -> None:
    english = SITE / page.relative_to(SITE / "zh")
    new = _kinds(page.read_text(encoding="utf-8")) - _kinds(english.read_text(encoding="utf-8"))
    assert not new, f"on the Chinese page only, so no axe colour rule has read them: {sorted(new)[:8]}"


def _rules(sheet: Path) -> set[str]:
    """A stylesheet's rules, one per selector of a list, each with its declarations (an at-rule's
    own line left out: the pruning drops selectors no page matches, from lists and at-rules)."""
    rules = set()
    for chunk in sheet.read_text(encoding="utf-8").split("}"):
        parts = [" ".join(part.split()) for part in chunk.split("{")]
        if len(parts) >= 2:
            rules |= {f"{selector.strip()} {{{parts[-1]}" for selector in parts[-2].split(",")}
    return rules


def test_the_chinese_stylesheets_have_no_rule_the_english_ones_lack() -> None:
    """The other half of what lets the Chinese pages skip axe's colour rules: their styles are the
    English edition's (each edition's stylesheets keep only the rules its own pages can match)."""
    sheets = sorted((SITE / "zh" / "_static").rglob("*.css"))
    assert sheets
    for sheet in sheets:
        english = SITE / sheet.relative_to(SITE / "zh")
        rules = _rules(sheet)
        new = rules - _rules(english) if english.exists() else rules
        assert not new, f"{sheet.relative_to(SITE)}: rules the English stylesheet lacks: {sorted(new)[:3]}"
