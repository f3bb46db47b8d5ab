"""The Chinese edition: extract the English prose into catalogs, and build the book from them.

English (``book/*.md``) is the source. Sphinx's standard translation workflow makes the Chinese
edition from gettext catalogs committed under ``locale/zh_CN/LC_MESSAGES/`` (one ``.po`` per
page), so code cells and figures exist once and a code change reaches both editions at the next
build.

    python tools/i18n.py update   # English prose changed: refresh the catalogs (make translations)
    python tools/i18n.py html     # build the Chinese edition into _build/html/zh/ (make book: --jobs)
    python tools/i18n.py check    # catalog statistics; exit 1 on untranslated or fuzzy messages

``update`` extracts the messages (Sphinx's ``gettext`` builder, outputs not executed) and merges
them into the catalogs with ``sphinx-intl``: a changed paragraph comes back untranslated (its old
translation marked fuzzy), and ``make test`` fails until it is translated again.

The API reference's docstrings stay English (the Chinese API page says so): messages that come
only from docstrings are left out of the catalogs.

``html`` reuses the English build's execution cache (``_build/.jupyter_cache``): nothing
executes twice. Figures are translated as the page is rendered, through ``posviz``'s own
catalog (``posviz/locale``), by ``posviz.sphinxext``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# POSVIZ_BUILD: another build folder (`python -m posviz.bench --book` times a clean build in one)
BUILD = Path(os.environ.get("POSVIZ_BUILD") or ROOT / "_build")
LOCALE = ROOT / "locale"
# chapters with their own figure modules (posviz.plots.<chapter>, posviz.widgets.<chapter>); the lab's
# figures, those of "The lab grows" included, go with the extrapolation chapter's catalog
CHAPTERS = ("attention", "sinusoidal", "learned", "relative", "rope", "alibi", "extrapolation", "models", "vision")
POSVIZ_LOCALE = ROOT / "posviz" / "locale"  # figure text and self-check questions (posviz.i18n)
LANGUAGES = {"zh_CN": "zh"}  # language -> the edition's folder under _build/html
# Settings that differ in an edition: its title, and the words myst-nb puts on hidden cells.
EDITION_CONFIG = {
    "zh_CN": {
        "html_title": "位置编码：交互式图解",
        "author": "posviz 作者团队",
        "nb_code_prompt_show": "显示代码",
        "nb_code_prompt_hide": "隐藏代码",
        # launch buttons open zh/book/<chapter>.ipynb (tools/notebooks.py writes them)
        "html_theme_options": {"path_to_docs": "zh"},
    },
}


def sphinx(
    builder: str,
    outdir: Path,
    doctrees: Path,
    overrides: dict,
    strict: bool,
    force_all: bool = False,
    jobs: int = 1,
    freshenv: bool = False,
) -> int:
    """Build the book with jupyter-book's Sphinx wrapper and ``_config.yml``, plus ``overrides``,
    in ``jobs`` processes (tools/build_book.py); ``freshenv``: every page read again, as
    ``jupyter-book build --all`` does."""
    from jupyter_book.sphinx import build_sphinx

    config = {
        "external_toc_path": (ROOT / "_toc.yml").as_posix(),
        "latex_individualpages": False,
        # one execution cache for every edition (myst-nb's default sits beside the output folder)
        "nb_execution_cache_path": str(BUILD / ".jupyter_cache"),
        **overrides,
    }
    if strict:
        config["nitpicky"] = True
    result = build_sphinx(
        ROOT,
        outdir,
        noconfig=True,
        path_config=str(ROOT / "_config.yml"),
        confoverrides=config,
        doctreedir=doctrees,
        builder=builder,
        warningiserror=strict,
        keep_going=strict,
        force_all=force_all,
        jobs=jobs,
        freshenv=freshenv,
    )
    return result if isinstance(result, int) else 1


def drop_docstrings(pot: Path) -> int:
    """Remove the messages that come only from docstrings (autodoc) from a template.

    Returns how many were removed.
    """
    from babel.messages.pofile import read_po, write_po

    with pot.open("rb") as f:
        catalog = read_po(f)
    dropped = [
        m.id
        for m in catalog
        # autodoc's locations read "of posviz.rope:3" (a module, not a file under book/)
        if m.id and not any(str(path).endswith(".md") for path, _ in m.locations)
    ]
    for msgid in dropped:
        del catalog[msgid]
    with pot.open("wb") as f:
        write_po(f, catalog, width=100)
    return len(dropped)


# What a translation must carry over unchanged: MyST roles (a {ref} keeps its target, its title
# may be translated), math, inline code and link targets.
_SPAN = re.compile(
    r"(?P<role>\{[\w:-]+\}`[^`]*`)"
    r"|(?P<dmath>\$\$.+?\$\$)"
    r"|(?P<math>\$[^$]+?\$)"
    r"|(?P<code>``.+?``|`[^`]+`)"
    r"|(?P<link>\]\([^)]*\))",
    re.S,
)
_TITLED = re.compile(r"^(\{(?:ref|numref|doc|download)\})`.*<([^<>]+)>`$", re.S)


def spans(text: str) -> list[str]:
    """The roles, math, inline code and link targets of a message, sorted."""
    found = []
    for match in _SPAN.finditer(text):
        span = match.group(0)
        titled = _TITLED.match(span)
        found.append(f"{titled[1]}`<{titled[2]}>`" if titled else span)
    return sorted(found)


def needs_words(msgid: str) -> bool:
    """Whether a message has words to translate (not only numbers, math, code and roles)."""
    return re.search(r"[A-Za-z]{2,}", _SPAN.sub(" ", msgid)) is not None


_FIELDS = re.compile(
    r"%\{[^{}]*\}|(?<!\{)\{[A-Za-z_][\w]*(?:![rsa])?(?::[^{}]*)?\}(?!\})"
    r"|</?(?:br|sub|sup|b|i|extra|span)\b[^>]*>"
)


def fields(text: str) -> list[str]:
    """The format fields, Plotly placeholders and HTML tags of a figure message, sorted."""
    return sorted(_FIELDS.findall(text))


def lint(po: Path) -> list[str]:
    """Problems of one catalog's translations: a changed role, math span, code or link target; in
    the book's catalogs a display equation changed beyond its ``\\text{}`` words; in posviz's
    catalogs a changed format field (``{name:.3f}``), Plotly placeholder (``%{y:.3f}``) or HTML tag."""
    from babel.messages.pofile import read_po

    with po.open("rb") as f:
        catalog = read_po(f)
    problems = []
    figure_text = POSVIZ_LOCALE in po.parents
    for m in catalog:
        if m.id and m.string and figure_text and fields(m.id) != fields(m.string):
            lost = sorted(set(fields(m.id)) - set(fields(m.string)))
            extra = sorted(set(fields(m.string)) - set(fields(m.id)))
            problems.append(f"{po.name}: {m.id[:60]!r}...: fields/tags missing {lost}, extra {extra}")
        if m.id and m.string and spans(m.id) != spans(m.string):
            lost = sorted(set(spans(m.id)) - set(spans(m.string)))
            extra = sorted(set(spans(m.string)) - set(spans(m.id)))
            problems.append(f"{po.name}: {m.id[:60]!r}...: missing {lost}, extra {extra}")
        if m.id and m.string and not figure_text and is_display_math(m.id) and not same_equation(m.id, m.string):
            problems.append(f"{po.name}: display equation {m.id.strip()[:60]!r}...: changed beyond its \\text words")
    return problems


def is_display_math(msgid: str) -> bool:
    """Whether a book message is a display equation: the only messages that start with a newline
    (Sphinx strips a paragraph's; a MyST display equation keeps the one after its ``$$``)."""
    return msgid.startswith("\n")


def same_equation(msgid: str, msgstr: str) -> bool:
    """The same equation up to the words of its ``\\text{...}`` (what posviz.sphinxext checks in the
    built page; see posviz/sphinxext/_translated_math.py)."""
    from posviz.sphinxext._translated_math import skeleton

    return skeleton(msgid) == skeleton(msgstr)


def fill_untranslatable(po: Path) -> int:
    """Give messages with nothing to translate (numbers, math, code) their own text."""
    from babel.messages.pofile import read_po, write_po

    with po.open("rb") as f:
        catalog = read_po(f)
    filled = 0
    for m in catalog:
        if m.id and not m.string and not needs_words(m.id):
            m.string = m.id
            filled += 1
    if filled:
        with po.open("wb") as f:
            write_po(f, catalog, width=100)
    return filled


def _code_cells(md: Path) -> list[tuple[str, int]]:
    """(code, first line) of each code cell of a MyST notebook."""
    text = md.read_text(encoding="utf-8")
    cells = []
    for m in re.finditer(r"```\{code-cell\}[^\n]*\n((?::[^\n]*\n)*)(.*?)\n```", text, re.S):
        cells.append((m.group(2), text.count("\n", 0, m.start(2)) + 1))
    return cells


def figure_templates() -> dict[Path, list[tuple[str, str, int]]]:
    """posviz's own messages: catalog path -> [(msgid, source, line)].

    ``figures/<chapter>.po``: the ``tr``/``translate``/``N_`` messages of that chapter's figures and
    explorer; ``posviz.po``: the library's other messages; ``selfcheck/<chapter>.po``: those of each
    chapter's code cells (its self-check questions).
    """
    from posviz.i18n import messages_in

    out: dict[Path, list[tuple[str, str, int]]] = {}
    for py in sorted((ROOT / "posviz").rglob("*.py")):
        rel = py.relative_to(ROOT)
        found = [(msg, rel.as_posix(), line) for msg, line in messages_in(py.read_text(encoding="utf-8"))]
        if not found:
            continue
        # one file per chapter's figures and explorers (posviz.plots.X, posviz.widgets.X; the lab's
        # figures with the lab chapter), the rest (figure descriptions, self-check buttons) in posviz.po
        chapter = rel.stem.split("_")[0]  # posviz.plots.models_tables: the models chapter's too
        if rel.parts[1] in ("plots", "widgets") and chapter in CHAPTERS:
            out.setdefault(Path("figures") / f"{chapter}.po", []).extend(found)
        elif rel.parts[1] == "lab":
            out.setdefault(Path("figures") / "extrapolation.po", []).extend(found)
        elif rel.parts[1] == "vislab":  # the resolution miniature (issue 23)
            out.setdefault(Path("figures") / "vislab.po", []).extend(found)
        else:
            out.setdefault(Path("posviz.po"), []).extend(found)
    for md in sorted((ROOT / "book").glob("*.md")):
        found = []
        for code, first in _code_cells(md):
            try:
                found += [(msg, f"book/{md.name}", first + line - 1) for msg, line in messages_in(code)]
            except SyntaxError:  # IPython magics: no messages there
                continue
        if found:
            out[Path("selfcheck") / f"{md.stem}.po"] = found
    return out


def update_figure_catalogs() -> None:
    """Merge posviz's messages into ``posviz/locale/<language>/LC_MESSAGES`` (new ones untranslated,
    changed ones fuzzy, gone ones dropped)."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import read_po, write_po

    for language in LANGUAGES:
        folder = POSVIZ_LOCALE / language / "LC_MESSAGES"
        for rel, messages in figure_templates().items():
            template = Catalog(project="posviz", fuzzy=False)
            for msgid, source, line in messages:
                template.add(msgid, locations=[(source, line)], flags=("no-python-format",) if "%" in msgid else ())
            path = folder / rel
            if path.exists():
                with path.open("rb") as f:
                    catalog = read_po(f, locale=language)
                catalog.update(template, update_header_comment=False)
            else:
                catalog = Catalog(locale=language, project="posviz", fuzzy=False)
                for m in template:
                    if m.id:
                        catalog.add(m.id, locations=m.locations, flags=m.flags)
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("wb") as f:
                write_po(f, catalog, width=100, ignore_obsolete=True, omit_header=False)


def update() -> int:
    out = BUILD / "gettext"
    rc = sphinx("gettext", out, BUILD / ".doctrees-gettext", {"nb_execution_mode": "off"}, False)
    if rc:
        return rc
    dropped = sum(drop_docstrings(p) for p in sorted(out.rglob("*.pot")))
    print(f"left {dropped} docstring messages to the English API reference")
    bin_dir = Path(sys.executable).parent
    for language in LANGUAGES:
        subprocess.run(
            [bin_dir / "sphinx-intl", "update", "-p", out, "-d", LOCALE, "-l", language, "-w", "100"],
            check=True,
        )
    update_figure_catalogs()
    filled = sum(fill_untranslatable(p) for p in sorted(CATALOGS()))
    print(f"{filled} messages with nothing to translate (numbers, math, code) kept as they are")
    return check(strict=False)


def html(jobs: int = 1) -> int:
    """Build each translation in its own folder (in ``jobs`` processes), then copy it into the
    English site.

    (myst-nb writes executed notebooks beside the output folder, so building straight into
    ``_build/html/zh`` would leave a ``jupyter_execute`` folder in the English site.)
    """
    rc = 0
    for language, folder in LANGUAGES.items():
        out = BUILD / language / "html"
        config = {"language": language, **EDITION_CONFIG.get(language, {})}
        # every page re-read (as `make book` does for English): a figure's or a self-check's
        # translation changes no source file, and execution stays cached
        rc |= sphinx("html", out, BUILD / language / ".doctrees", config, True, force_all=True, jobs=jobs)
        site = BUILD / "html" / folder
        shutil.rmtree(site, ignore_errors=True)
        shutil.copytree(out, site)
    return rc


def CATALOGS() -> list[Path]:  # every catalog of every edition
    return sorted(LOCALE.rglob("*.po")) + sorted(POSVIZ_LOCALE.rglob("*.po"))


def stats(po: Path) -> tuple[int, int, int]:
    """(translated, fuzzy, untranslated) messages of one catalog."""
    from babel.messages.pofile import read_po

    with po.open("rb") as f:
        catalog = read_po(f)
    messages = [m for m in catalog if m.id]
    fuzzy = sum(m.fuzzy for m in messages)
    untranslated = sum(not m.string for m in messages if not m.fuzzy)
    return len(messages) - fuzzy - untranslated, fuzzy, untranslated


def check(strict: bool = True) -> int:
    bad = 0
    total = [0, 0, 0]
    for po in CATALOGS():
        t, f, u = stats(po)
        total = [total[0] + t, total[1] + f, total[2] + u]
        print(f"{po.relative_to(ROOT)}: {t} translated, {f} fuzzy, {u} untranslated")
        bad += f + u
    print(f"all catalogs: {total[0]} translated, {total[1]} fuzzy, {total[2]} untranslated")
    problems = [p for po in CATALOGS() for p in lint(po)]
    print("\n".join(problems) or "every translation keeps its roles, math, code and link targets")
    return 1 if (strict and (bad or problems)) else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["update", "html", "check"])
    parser.add_argument("--jobs", type=int, default=1, help="html: Sphinx's worker processes (default 1)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be 1 or more, not {args.jobs}")
    if args.command == "html":
        return html(args.jobs)
    return {"update": update, "check": check}[args.command]()


if __name__ == "__main__":
    sys.exit(main())
