"""The Chinese edition's catalogs (tools/i18n.py): complete, in step with the sources, and faithful
to each message's roles, math, code, fields and tags."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import i18n  # noqa: E402  (tools/i18n.py)

CJK = re.compile(r"[\u3400-\u9fff\uff00-\uffef\u3000-\u303f]")
CATALOGS = i18n.CATALOGS()


def _read(po: Path):
    from babel.messages.pofile import read_po

    with po.open("rb") as f:
        return [m for m in read_po(f) if m.id]


def test_there_are_catalogs_for_every_page_and_every_chapter_figure() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in CATALOGS}
    for page in ("intro", "attention", "sinusoidal", "learned", "relative", "rope", "alibi", "extrapolation"):
        assert f"locale/zh_CN/LC_MESSAGES/book/{page}.po" in names
    for chapter in i18n.CHAPTERS:
        assert f"posviz/locale/zh_CN/LC_MESSAGES/figures/{chapter}.po" in names
        assert f"posviz/locale/zh_CN/LC_MESSAGES/selfcheck/{chapter}.po" in names


@pytest.mark.parametrize("po", CATALOGS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_catalog_is_complete(po: Path) -> None:
    _, fuzzy, untranslated = i18n.stats(po)
    assert (fuzzy, untranslated) == (0, 0), f"{po.name}: {fuzzy} fuzzy, {untranslated} untranslated (make translations)"


@pytest.mark.parametrize("po", CATALOGS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_translations_keep_roles_math_code_fields_and_tags(po: Path) -> None:
    assert i18n.lint(po) == []


# Kept in English on purpose: names of models and libraries (as Chinese writing keeps them).
KEPT = {"GPT-2 small", "GPT-2 XL", "BERT-large", "transformers eager", "Shaw (ms)"}


@pytest.mark.parametrize("po", CATALOGS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_messages_with_words_are_in_chinese(po: Path) -> None:
    """A message with English prose (two or more English words in a row) gets Chinese; names,
    symbols, hover templates and display math may stay as they are."""
    english_left = []
    for m in _read(po):
        if not m.string or CJK.search(m.string) or m.id in KEPT:
            continue
        if m.string == m.id and (re.search(r"\\[a-zA-Z]+", m.id) or po.stem == "glossary"):
            continue  # display math (kept as it is), and the glossary's English column
        bare = re.sub(r"<[^>]+>|%\{[^}]*\}|\{[^}]*\}", " ", m.string)
        bare = i18n._SPAN.sub(" ", bare)
        bare = re.sub(r"\b(?:sin|cos|tan|exp|log|max|min|clip|softmax)\b", " ", bare)  # maths, not words
        # a run of two English words (not a symbol like sin, cos, d or a name in capitals)
        if re.search(r"\b[a-z]{3,}\b[ ,]+\b[a-z]{3,}\b", bare) and not re.fullmatch(
            r"[\w.-]+ [A-Z][\w-]*", bare.strip()
        ):
            english_left.append(m.string[:80])
    assert not english_left, f"{po.name}: messages left in English: {english_left[:5]}"


def test_span_lint_sees_a_lost_role_and_a_kept_title_change() -> None:
    msgid = "See {ref}`the sign table <sign-conventions>` and $r = m - n$ with `posviz.rope`."
    assert i18n.spans(msgid) == i18n.spans("见{ref}`符号表 <sign-conventions>`，$r = m - n$，`posviz.rope`。")
    assert i18n.spans(msgid) != i18n.spans("见符号表，$r = m - n$，`posviz.rope`。")
    assert i18n.fields("a %{x}<br>{n:.3f}") != i18n.fields("a %{y}<br>{n:.3f}")


def test_figure_catalogs_are_in_step_with_posviz_and_the_chapters() -> None:
    """Every tr()/N_() message of the library and of the chapters' code is in its catalog, and
    no catalog holds a message that no longer exists (make translations)."""
    for rel, messages in i18n.figure_templates().items():
        po = i18n.POSVIZ_LOCALE / "zh_CN" / "LC_MESSAGES" / rel
        assert po.exists(), f"{rel}: no catalog (make translations)"
        assert {m.id for m in _read(po)} == {msgid for msgid, _, _ in messages}, f"{rel} is out of date"


@pytest.mark.slow
def test_book_catalogs_are_in_step_with_the_chapters(tmp_path: Path) -> None:
    """Extract the book's messages afresh: each catalog holds exactly them (make translations)."""
    from babel.messages.pofile import read_po

    rc = i18n.sphinx("gettext", tmp_path / "gettext", tmp_path / "doctrees", {"nb_execution_mode": "off"}, False)
    assert rc == 0
    for pot in sorted((tmp_path / "gettext").rglob("*.pot")):
        i18n.drop_docstrings(pot)
        with pot.open("rb") as f:
            fresh = {m.id for m in read_po(f) if m.id}
        po = i18n.LOCALE / "zh_CN" / "LC_MESSAGES" / pot.relative_to(tmp_path / "gettext").with_suffix(".po")
        if not fresh:
            continue
        assert po.exists(), f"{po.name}: no catalog (make translations)"
        assert {m.id for m in _read(po)} == fresh, f"{po.name} is out of date (make translations)"


def test_lint_sees_a_translation_that_lost_or_renamed_a_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A figure message whose translation dropped ``{n}`` (the number would silently vanish) or
    renamed it (posviz.i18n would fall back to English): each is a lint problem, so
    test_translations_keep_roles_math_code_fields_and_tags fails on it."""
    folder = tmp_path / "zh_CN" / "LC_MESSAGES" / "figures"
    folder.mkdir(parents=True)
    po = folder / "x.po"
    po.write_text(
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        'msgid "every {n} positions"\nmsgstr "每隔几个位置"\n\n'
        'msgid "pair {i}: %{y:.1%}"\nmsgstr "维度对 {j}：%{y:.1%}"\n\n'
        'msgid "head {h}"\nmsgstr "头 {h}"\n',
        encoding="utf-8",
    )
    monkeypatch.setattr(i18n, "POSVIZ_LOCALE", tmp_path)
    problems = i18n.lint(po)
    assert len(problems) == 2, problems
    assert "every {n} positions" in problems[0] and "'{n}'" in problems[0]
    assert "'{i}'" in problems[1] and "'{j}'" in problems[1]


# One name per term in the figures and self-checks (issue 26; the glossary's terms), and numbers
# written one way: no thousands separator (10000), a percent sign right after its number (90%).
TERMS = {
    r"可学习位置表|可学习的位置编码": "可学习的位置表",
    r"(?<!交互)探索器|实时交互探索器": "交互探索器",
    r"NTK 感知(?!缩放)(?:的)?基数(?:缩放)?|NTK 感知的": "NTK 感知缩放",
}
POSVIZ_CATALOGS = [p for p in CATALOGS if i18n.POSVIZ_LOCALE in p.parents]


@pytest.mark.parametrize("po", POSVIZ_CATALOGS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_figure_and_selfcheck_catalogs_use_one_name_per_term_and_one_number_style(po: Path) -> None:
    wrong = []
    for m in _read(po):
        text = re.sub(r"%\{[^}]*\}|\{[^}]*\}", " ", m.string or "")
        wrong += [
            f"{found.group(0)!r} (say {term})" for pattern, term in TERMS.items() if (found := re.search(pattern, text))
        ]
        if found := re.search(r"(?<![\w.,-])\d{1,3}(?:[, \u2009\u202f]\d{3})+(?![\w,])|\d %", text):
            wrong.append(f"{found.group(0)!r} in {m.string[:50]!r}")
    assert not wrong, f"{po.name}: {wrong[:5]}"
