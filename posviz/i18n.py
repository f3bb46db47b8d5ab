r"""Figure text in the reader's language: one message catalog for every figure and explorer.

Every title, axis title, legend entry, slider or button label and hover template that posviz
draws goes through :func:`tr`. English is the source; the translations live in one gettext
catalog per language, ``posviz/locale/<language>/LC_MESSAGES/posviz.po`` (kept in step by
``python tools/i18n.py update``, like the book's own catalogs).

Two ways a figure reaches a language:

* **Live** (a notebook, an explorer): :func:`set_language` (or the ``POSVIZ_LANG`` environment
  variable) picks the language, and :func:`tr` returns the translation as the figure is made.
  The Chinese notebooks start with ``posviz.set_language("zh_CN")``.
* **In the built book**, figures are computed once, in English, and both editions render the
  same cached output. A figure made by a :func:`translatable` function carries a record of its
  messages (``layout.meta["posviz_i18n"]``: each English string with its message and fields),
  and :func:`translate_figure` rewrites the figure in the edition's language as the page is
  rendered (``posviz.sphinxext``), then drops the record.

Messages are ``str.format`` templates: ``tr("pair i = {i}", i=3)``. Plotly's own placeholders
(``%{x}``, ``%{y:.3f}``) are written as they are, with single braces, and pass through
untouched.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from ._text import plain_text, tidy

__all__ = [
    "LANGUAGES",
    "N_",
    "TranslationWarning",
    "get_language",
    "join_list",
    "keyed",
    "number",
    "plain_text",
    "set_language",
    "tidy",
    "tr",
    "translatable",
    "translate_figure",
]

LOCALE = Path(__file__).parent / "locale"
DOMAIN = "posviz"
LANGUAGES = ("en", "zh_CN")
"""The languages posviz draws figures in (English is the source)."""

META_KEY = "posviz_i18n"

_language: str | None = None
_recorders: list[dict[str, list[Any]]] = []
# Every message made in this process (English text -> [msgid, fields]), newest last, bounded:
# what a self-check block looks its strings up in (posviz.selfcheck).
_made: dict[str, list[Any]] = {}
_MADE_LIMIT = 20_000


def _normalise(language: str | None) -> str:
    if language is None:
        return "en"
    name = language.replace("-", "_")
    aliases = {"zh": "zh_CN", "zh_Hans": "zh_CN", "zh_cn": "zh_CN", "en_US": "en", "en_GB": "en"}
    name = aliases.get(name, name)
    if name not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)} (or None for English), got {language!r}")
    return name


def set_language(language: str | None) -> None:
    """Draw figures in ``language`` from now on: ``"en"`` (the default) or ``"zh_CN"``."""
    global _language
    _language = _normalise(language)


def get_language() -> str:
    """The language figures are drawn in: :func:`set_language`'s, else ``$POSVIZ_LANG``, else English."""
    if _language is not None:
        return _language
    return _normalise(os.environ.get("POSVIZ_LANG") or None)


def _unquote(lines: list[str]) -> str:
    return "".join(ast.literal_eval(line) for line in lines)


@functools.cache
def catalog(language: str) -> dict[str, str]:
    """The translations of one language (``{}`` for English): msgid -> msgstr, translated ones only.

    ``posviz.po`` holds the figures' and explorers' text; ``selfcheck/<chapter>.po`` the book's
    self-check questions (their strings are made by :func:`tr` in the chapters' code).
    A small reader for the ``.po`` files posviz ships (no dependency): ``msgid``/``msgstr`` with
    C-escaped, possibly multi-line strings; fuzzy entries are skipped, as gettext does.
    """
    language = _normalise(language)
    folder = LOCALE / language / "LC_MESSAGES"
    if language == "en" or not folder.is_dir():
        return {}
    messages: dict[str, str] = {}
    for path in sorted(folder.rglob("*.po")):
        messages.update(_read_po(path))
    return messages


def _read_po(path: Path) -> dict[str, str]:
    messages: dict[str, str] = {}
    entry: dict[str, list[str]] = {}
    key: str | None = None
    fuzzy = False

    def flush() -> None:
        nonlocal fuzzy
        if "msgid" in entry and "msgstr" in entry and not fuzzy:
            msgid, msgstr = _unquote(entry["msgid"]), _unquote(entry["msgstr"])
            if msgid and msgstr:
                messages[msgid] = msgstr
        entry.clear()
        fuzzy = False

    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line:
            flush()
            key = None
        elif line.startswith("#,"):
            fuzzy = fuzzy or "fuzzy" in line
        elif line.startswith("#"):
            continue
        elif line.startswith('"'):
            if key is not None:
                entry[key].append(line)
        else:
            key, _, rest = line.partition(" ")
            if key in entry:  # a new entry without a blank line before it
                flush()
            entry[key] = [rest]
    flush()
    return messages


_PLOTLY_PLACEHOLDER = re.compile(r"%\{[^{}]*\}")
# A number written with a thousands separator (10,000 · 10 000 · 1 000 000): Chinese figure text
# writes numbers without one (10000), as the Chinese prose does.
_GROUPED = re.compile(r"(?<![\d.,])\d{1,3}(?:[,\u202f\u2009\u00a0 ]\d{3})+(?![\d,])")
_GROUPING_SPEC = re.compile(r"(\{[A-Za-z_]\w*(?:![rsa])?:[^{}]*?)[,_]([^{}]*\})")
# Comma (thin / no-break space) groups only: a plain space in figure text may be no separator (GPT-3 175B)
_COMMA_GROUPED = re.compile(r"(?<![\d.,])\d{1,3}(?:[,\u202f\u2009\u00a0]\d{3})+(?![\d,])")
UNGROUPED = ("zh_CN",)
"""The languages whose figure text writes numbers without a thousands separator."""


class TranslationWarning(UserWarning):
    """A translation that does not fit its message's fields: the English text is shown instead."""


def ungrouped(text: str, *, spaces: bool = True) -> str:
    """``text`` with every thousands separator of a number removed (``10,000`` -> ``10000``); with
    ``spaces=False`` a plain space is kept (in a figure or table it may part two numbers: GPT-3 175B)."""
    return (_GROUPED if spaces else _COMMA_GROUPED).sub(lambda m: re.sub(r"\D", "", m.group(0)), text)


def _format(template: str, fields: Mapping[str, Any], language: str = "en") -> str:
    """``str.format`` that leaves Plotly's ``%{...}`` placeholders alone.

    In a language of :data:`UNGROUPED`, numbers get no thousands separator: a field's format spec
    loses its ``,`` and a string field its separators (a number formatted before it was passed).
    """
    kept: list[str] = []

    def keep(match: re.Match[str]) -> str:
        kept.append(match.group(0))
        return f"\x00{len(kept) - 1}\x00"

    text = _PLOTLY_PLACEHOLDER.sub(keep, template)
    if fields:
        if language in UNGROUPED:
            text = _GROUPING_SPEC.sub(r"\1\2", text)
            fields = {k: ungrouped(v) if isinstance(v, str) else v for k, v in fields.items()}
        text = text.format(**fields)
    else:
        text = text.replace("{{", "{").replace("}}", "}")
    return re.sub("\x00(\\d+)\x00", lambda m: kept[int(m.group(1))], text)


def translate(msgid: str, language: str, /, **fields: Any) -> str:
    """``msgid`` in ``language``, formatted with ``fields`` (English when it has no translation).

    A translation that does not fit the fields (it names a field the message does not have, or
    is not a valid template) gives the English text and a :class:`TranslationWarning`, live and
    in the book alike; ``tools/i18n.py check`` (and ``tests/test_catalogs.py``) reports it.
    """
    language = _normalise(language)
    text = catalog(language).get(msgid)
    if text is not None:
        try:
            return _format(text, fields, language)
        except (KeyError, IndexError, ValueError, AttributeError) as err:
            warnings.warn(
                f"the {language} translation of {msgid!r} does not fit its fields ({type(err).__name__}: {err}); "
                "showing the English",
                TranslationWarning,
                stacklevel=2,
            )
    return _format(msgid, fields)


def tr(msgid: str, /, **fields: Any) -> str:
    """A figure string in the current language (:func:`get_language`), formatted with ``fields``.

    Inside a :func:`translatable` call the English text is also recorded with its message and
    fields, so that a figure made in English can be translated later (:func:`translate_figure`).
    """
    english = _format(msgid, fields)
    entry = [msgid, {k: _plain(v) for k, v in fields.items()}]
    for record in _recorders:
        record[english] = entry
    _made.pop(english, None)
    _made[english] = entry
    if len(_made) > _MADE_LIMIT:
        del _made[next(iter(_made))]
    return translate(msgid, get_language(), **fields)


def number(text: str) -> str:
    """A number written for a figure (a slider step, a legend entry): ``text`` in English, and
    recorded, so that Chinese writes it without a thousands separator (``10,000`` -> ``10000``)."""
    return tr("{number}", number=text)


def keyed(key: str, msgid: str) -> str:
    """A key (a method's name, ``"t5"``) shown as itself in English and as ``msgid``'s translation
    in another language, recorded like a :func:`tr` message (English ``key`` -> ``[msgid, {}]``), so
    that a phrase holding it is translated later too, as the lab's tables translate their rows."""
    if not isinstance(key, str) or not isinstance(msgid, str):
        raise TypeError(f"key and msgid must be strings, got {key!r} and {msgid!r}")
    entry: list[Any] = [msgid, {}]
    for record in _recorders:
        record.setdefault(key, entry)  # a message whose English text is the key itself keeps it
    _made.pop(key, None)
    _made[key] = entry
    language = get_language()
    return key if language == "en" else translate(msgid, language)


def join_list(items: Iterable[str]) -> str:
    """``items`` as a list in a sentence, in the current language: ``"a, b and c"`` in English,
    ``"a、b 和 c"`` in Chinese (one item is itself, two are ``"a and b"`` / ``"a 和 b"``).

    Made of two messages, ``"{some}, {next}"`` and ``"{some} and {last}"``, nested (as a balanced
    tree, so a long list stays a few messages deep): a list made in English inside a
    :func:`translatable` figure or a self-check is translated later like any nested :func:`tr`
    field. Made live in Chinese, a space the message puts between two Chinese items goes
    (:func:`tidy`: ``"甲、乙和丙"``; beside a Latin word or a number it stays). A list glued into
    prose is translated at every level where the glue keeps the nested messages of its fields
    (``posviz.book.glue``); where only the outer message is kept (a self-check's strings), a list of
    up to two items is still one message.

    Raises:
        TypeError: ``items`` is a single string, or an item is not a string.
        ValueError: ``items`` is empty.
    """
    if isinstance(items, str):
        raise TypeError(f"items must be an iterable of strings, not one string: {items!r}")
    items = list(items)
    if not items:
        raise ValueError("join_list needs at least one item, got none")
    bad = [item for item in items if not isinstance(item, str)]
    if bad:
        raise TypeError(f"every item must be a str, got {bad[0]!r} ({type(bad[0]).__name__})")
    if len(items) == 1:
        return items[0]

    def some(part: list[str]) -> str:  # "a, b, c" as nested "{some}, {next}" messages, balanced
        if len(part) == 1:
            return part[0]
        half = len(part) // 2
        return tr("{some}, {next}", some=some(part[:half]), next=some(part[half:]))

    text = tr("{some} and {last}", some=some(items[:-1]), last=items[-1])
    return tidy(text, get_language()) if get_language() == "zh_CN" else text


def _plain(value: Any) -> str | int | float:
    """A field as JSON can hold it (a NumPy or torch scalar becomes a Python number)."""
    if isinstance(value, (str, int, float)):
        return value
    item = getattr(value, "item", None)
    if callable(item):
        try:
            value = item()
        except (TypeError, ValueError, RuntimeError):
            pass
    return value if isinstance(value, (str, int, float)) else str(value)


def N_(msgid: str) -> str:
    """Mark a module-level string as a message without translating it (translate it where it is
    drawn: ``tr(LABELS[name])``): a constant is made once, before any language is chosen."""
    return msgid


@contextmanager
def recording() -> Iterator[dict[str, list[Any]]]:
    """Record every :func:`tr` message made inside the block: English text -> [msgid, fields]."""
    record: dict[str, list[Any]] = {}
    _recorders.append(record)
    try:
        yield record
    finally:
        _recorders.remove(record)


F = TypeVar("F", bound=Callable[..., Any])


def translatable(function: F) -> F:
    """Decorate a function that returns a Plotly figure: the figure records its messages."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with recording() as record:
            figure = function(*args, **kwargs)
        layout = getattr(figure, "layout", None)
        if record and layout is not None and get_language() == "en":
            meta = layout.meta if isinstance(layout.meta, dict) else {}
            merged = {**(meta.get(META_KEY) or {}), **record}
            layout.meta = {**meta, META_KEY: merged}
        return figure

    return wrapper  # type: ignore[return-value]


def message_of(english: str) -> list[Any] | None:
    """``[msgid, fields]`` of a string that :func:`tr` made in this process, if it did."""
    return _made.get(english)


def translate_text(english: str, language: str, record: Mapping[str, Any]) -> str:
    """One string in ``language``, via the ``record`` of the message that made it (else unchanged)."""
    table = _translated_record({english: record[english]}, _normalise(language)) if english in record else {}
    return table.get(english, english)


def _translated_record(record: Mapping[str, Any], language: str) -> dict[str, str]:
    """English string -> its translation, for every recorded message that has one.

    A field may itself be a recorded message (``tr("Head {h}: {head}", head=tr("no bias"))``):
    it is translated first, whatever order the record comes in (a cached output sorts its keys).
    """
    done: dict[str, str] = {}

    def text_of(english: str, depth: int = 0) -> str:
        if english in done:
            return done[english]
        if english not in record or depth > 8:
            return translate(english, language)
        msgid, fields = record[english]
        fields = {k: (text_of(v, depth + 1) if isinstance(v, str) else v) for k, v in fields.items()}
        text = translate(msgid, language, **fields)  # English (and a warning) if it lost a field
        done[english] = text
        return text

    return {english: text for english in record if (text := text_of(english)) != english}


# Where a figure holds text a reader sees: titles (``title.text``, a string ``title``), annotation,
# shape-label and trace ``text``, hover text and templates, slider and button labels, the slider's
# prefix, tick labels, and category values (``x``, ``y`` and the axes' ``categoryarray``, which
# must stay equal to them). A trace's ``name`` is text too; a frame's, a step's or a button's is
# an id. Ids and enumerations (legendgroup, uid, meta, hoverinfo, mode, type, ...) are never text.
TEXT_KEYS = frozenset(
    "text title hovertemplate texttemplate hovertext label prefix suffix ticktext x y categoryarray".split()
)
_HOLD_TRACES = ("data", "args")  # a list whose dicts are traces (or a restyle's / update's trace changes)


def translate_figure(figure: dict[str, Any], language: str) -> dict[str, Any]:
    """A figure dict (``fig.to_dict()``) rewritten in ``language``; its message record removed.

    Every text-bearing string in the figure (data, layout, frames, slider steps, button
    arguments; see :data:`TEXT_KEYS`) that holds a recorded English message gets it replaced by
    its translation, longest message first, and only as a whole run of words (never inside a
    longer word). Ids and enumerated values are left as they are. In a language of
    :data:`UNGROUPED` that text loses its comma thousands separators (``11,160`` -> ``11160``) and
    the layout's ``separators`` becomes ``"."``, so Plotly's own ticks and ``%{y:,}`` group nothing.
    """
    layout = figure.get("layout")
    meta = layout.get("meta") if isinstance(layout, dict) else None
    record = meta.pop(META_KEY, None) if isinstance(meta, dict) else None
    if isinstance(meta, dict) and not meta:
        del layout["meta"]
    language = _normalise(language)
    if not record or language == "en":
        return figure
    table = _translated_record(record, language)
    plain = language in UNGROUPED  # numbers in plain digits (10000), as the prose writes them
    if not table and not plain:
        return figure

    # a message is replaced only as a whole run of words: not where the text goes on with a letter
    # or digit right before or after an end of it that is itself a letter or digit
    def edge(key: str) -> str:
        start = r"(?<![A-Za-z0-9_])" if re.match(r"\w", key[0]) else ""
        end = r"(?![A-Za-z0-9_])" if re.match(r"\w", key[-1]) else ""
        return start + re.escape(key) + end

    pattern = re.compile("|".join(edge(k) for k in sorted(table, key=len, reverse=True))) if table else None

    def text(value: str) -> str:
        value = pattern.sub(lambda m: table[m.group(0)], value) if pattern else value
        return ungrouped(value, spaces=False) if plain else value

    def walk(value: Any, key: str, in_trace: bool) -> Any:
        """``value`` found under ``key`` (the last part of a dotted key) of a dict that is a trace
        (``in_trace``) or not."""
        if isinstance(value, str):
            is_text = key in TEXT_KEYS or (key == "name" and in_trace)
            return text(value) if is_text else value
        if isinstance(value, list):
            return [walk_dict(v, key in _HOLD_TRACES) if isinstance(v, dict) else walk(v, key, in_trace) for v in value]
        if isinstance(value, dict):
            return walk_dict(value, False)
        return value

    def walk_dict(value: dict[str, Any], is_trace: bool) -> dict[str, Any]:
        return {k: v if k == "meta" else walk(v, k.rsplit(".", 1)[-1], is_trace) for k, v in value.items()}

    translated = walk_dict(figure, False)
    if plain and isinstance(translated.get("layout"), dict):  # Plotly's own numbers (ticks, %{y:,}): no grouping
        translated["layout"].setdefault("separators", ".")
    return translated


def messages_in(source: str) -> list[tuple[str, int]]:
    """The ``tr("...")``, ``translate("...", ...)``, ``_t("...")`` (a module's own shorthand for
    ``translate``) and ``N_("...")`` messages of a Python source (message, line), for the catalog."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) in ("tr", "translate", "N_", "_t")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.args[0].value, node.lineno))
    return found
