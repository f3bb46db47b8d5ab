"""Markdown tables of a results dictionary, in the reader's language.

Every header and word of a table goes through :func:`posviz.i18n.tr`, so a table made after
``posviz.set_language("zh_CN")`` (the Chinese notebooks) is Chinese. A table made in English is a
:class:`Table`: a ``str`` that also remembers the messages it was made of (``record``, as a
:func:`posviz.i18n.translatable` figure does), so the book, which executes its chapters once in
English, can render it in the edition's language (:func:`translate_markdown`). In a notebook it
displays as Markdown, with the record in the output's metadata (``posviz_i18n``).

Numbers are formatted the same in every language, except that Chinese writes them without a
thousands separator (627840, as its prose does); ``cannot run`` (a length past the learned table)
is a word, never a number; a method is named by its key (``none``, ``shaw``: what the CLI takes),
which a translated table shows as the figures' label (NoPE（无位置）, Shaw（相对 k/v）); Chinese writes
a negative number with the minus sign U+2212 (−0.20), as its prose does; a paired difference *inside the seed spread*
(:func:`posviz.lab.inside_spread`) is marked, and so is a paired difference with one seed, which
has no spread to be inside or outside of (:func:`spread_words`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..i18n import META_KEY, UNGROUPED, get_language, keyed, recording, tr, translate_figure, ungrouped
from .results import validate_results

__all__ = [
    "Table",
    "comparison_phrase",
    "cost_table",
    "format_tables",
    "lr_search_table",
    "lr_sensitivity",
    "lr_sensitivity_table",
    "paired_table",
    "perplexity_table",
    "previous_run_table",
    "spread_words",
    "translate_markdown",
    "translate_output",
]


class Table(str):
    """A Markdown table (a ``str``) and ``record``, the :func:`~posviz.i18n.tr` messages it holds
    (English text -> ``[msgid, fields]``; empty when it was made in another language)."""

    record: dict[str, list[Any]]

    def __new__(cls, text: str, record: dict[str, list[Any]] | None = None) -> Table:
        table = super().__new__(cls, text)
        table.record = dict(record or {})
        return table

    def _repr_markdown_(self) -> str | tuple[str, dict]:
        if self.record:
            return str(self), {META_KEY: self.record}
        return str(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def translated(self, language: str) -> str:
        """The table in ``language`` (``"en"`` or ``"zh_CN"``)."""
        return translate_markdown(str(self), self.record, language)


def translate_markdown(markdown: str, record: dict[str, list[Any]], language: str) -> str:
    """``markdown`` with every recorded English message replaced by its translation in ``language``,
    as whole runs of words (the rule of :func:`posviz.i18n.translate_figure`, which does the work)."""
    figure = {"layout": {"meta": {META_KEY: dict(record)}}, "text": markdown}
    return _minus_signs(translate_figure(figure, language)["text"], language)


def _minus_signs(text: str, language: str) -> str:
    """``text`` with each ASCII hyphen that is a minus sign (``-0.20``, ``| -3 |``) written as U+2212
    in Chinese (as its prose writes it); unchanged in English. A hyphen inside a word (``rope-pi``)
    or a range (``0-3``) is no minus sign."""
    if language.replace("-", "_") != "zh_CN":
        return text
    return re.sub(r"(?<![\w.)\]])-(?=\d)", "\u2212", text)


def _method(name: str) -> str:
    """A method's key as a table shows it: in English the key itself; in another language the
    figures' label (``posviz.lab._style``). The key is recorded with that label
    (:func:`posviz.i18n.keyed`), so a table made in English and translated later
    (:func:`translate_markdown`) names the method as the figures do."""
    from ._style import _LABELS  # _style imports this module

    return keyed(name, _LABELS[name]) if name in _LABELS else name


def translate_output(markdown: str, output_metadata: dict, language: str) -> str:
    """A notebook's ``text/markdown`` output in ``language``: translated through the record a
    :class:`Table` left in the output's metadata (``{"text/markdown": {"posviz_i18n": ...}}``, as
    IPython stores it), unchanged when it has none. What a renderer of the Chinese edition calls."""
    meta = output_metadata.get("text/markdown") if isinstance(output_metadata.get("text/markdown"), dict) else None
    record = (meta or output_metadata).get(META_KEY)
    return translate_markdown(markdown, record, language) if record else markdown


F = TypeVar("F", bound=Callable[..., str])


def _table(function: F) -> F:
    """Decorate a function that returns a Markdown table: it returns a :class:`Table` instead."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Table:
        with recording() as record:  # its messages, and the method keys _method recorded
            text = function(*args, **kwargs)
        text = _minus_signs(text, get_language())
        if get_language() in UNGROUPED:  # plain digits (627840), as translate_markdown writes them
            text = ungrouped(text, spaces=False)
        return Table(text, record if get_language() == "en" else None)

    return wrapper  # type: ignore[return-value]


def spread_words(inside: bool | None) -> str:
    """The verdict on a paired difference (:func:`posviz.lab.inside_spread`): inside or outside
    the seed spread, or, with one seed (``None``), that there is no spread to compare with."""
    if inside is None:
        return tr("one seed: no spread")
    return tr("inside the seed spread") if inside else tr("outside the seed spread")


def _multiple(length: int, train_len: int) -> str:
    return f" ({length // train_len}×)" if length % train_len == 0 else ""


def _fmt(v: float | None, digits: int = 2) -> str:
    if v is None:
        return "-"
    if abs(v) >= 1000:
        return f"{v:.3g}" if abs(v) >= 1e5 else f"{v:.0f}"
    return f"{v:.{digits}f}"


def _rows(head: Sequence[str], rows: Sequence[Sequence[str]], align: str = "--:") -> str:
    lines = ["| " + " | ".join(head) + " |", "|---" + f"|{align}" * (len(head) - 1) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _lengths_head(results: dict) -> list[str]:
    train_len = results["train_len"]
    return [f"L = {x}{_multiple(x, train_len)}" for x in results["eval_lengths"]]


@_table
def perplexity_table(results: dict, *, spread: bool = True, methods: Sequence[str] | None = None) -> str:
    """Markdown table, method × evaluation length: mean ± sample std over seeds (with ``spread``, the
    [min–max] too); "cannot run" where a method has no value (never a number). ``methods``: only
    these rows, in the results' order (default: every method)."""
    validate_results(results)
    if methods is not None:
        unknown = [m for m in methods if m not in results["methods"]]
        if unknown:
            raise ValueError(f"methods {unknown} are not in these results; they have {results['method_order']}")
    rows = []
    for name in results["method_order"]:
        if methods is not None and name not in methods:
            continue
        agg = results["methods"][name]["aggregate"]["perplexity"]
        cells = [_method(name)]
        for i in range(len(results["eval_lengths"])):
            if agg["mean"][i] is None:
                cells.append(tr("cannot run"))
                continue
            cell = _fmt(agg["mean"][i]) + (f" ± {_fmt(agg['std'][i])}" if agg["std"][i] is not None else "")
            if spread:
                cell += f" [{_fmt(agg['min'][i])}–{_fmt(agg['max'][i])}]"
            cells.append(cell)
        rows.append(cells)
    return _rows([tr("method"), *_lengths_head(results)], rows)


@_table
def paired_table(results: dict) -> str:
    """Markdown table, method x length: the mean over seeds of the per-seed perplexity difference to
    the baseline, ± the sample std of those differences; "(inside spread)" marks a difference
    inside the seed spread (:func:`posviz.lab.inside_spread`), "(one seed: no spread)" one measured
    with a single seed, "cannot run" where either has no value."""
    validate_results(results)
    paired = results.get("paired")
    if paired is None:
        raise ValueError("these results have no paired differences (the baseline method was not run)")
    rows = []
    for name in results["method_order"]:
        if name == paired["baseline"]:
            continue
        p = paired["methods"][name]
        cells = [_method(name)]
        for i in range(len(results["eval_lengths"])):
            if p["mean"][i] is None:
                cells.append(tr("cannot run"))
                continue
            cell = f"{p['mean'][i]:+.2f}" + (f" ± {p['std'][i]:.2f}" if p["std"][i] is not None else "")
            if p["inside_spread"][i] is None:
                cell = tr("{value} (one seed: no spread)", value=cell)
            elif p["inside_spread"][i]:
                cell = tr("{value} (inside spread)", value=cell)
            cells.append(cell)
        rows.append(cells)
    return _rows([tr("method") + f" − {_method(paired['baseline'])}", *_lengths_head(results)], rows)


@_table
def lr_search_table(results: dict, *, length: int | None = None) -> str:
    """Markdown table of the learning-rate search (first seed): per method with position parameters
    and per multiplier, the validation loss at the training length (what chose it) and the held-out
    perplexity at the training length and at ``length`` (default: the longest); the chosen row in bold."""
    validate_results(results)
    lengths, train_len = results["eval_lengths"], results["train_len"]
    length = max(lengths) if length is None else length
    if length not in lengths:
        raise ValueError(f"length must be one of the evaluation lengths {lengths}, got {length!r}")
    i0, i1 = lengths.index(train_len), lengths.index(length)
    head = [
        tr("method"),
        tr("position lr ×"),
        tr("validation loss (nats)"),
        tr("perplexity, L = {length}", length=train_len),
        tr("perplexity, L = {length}", length=f"{length}{_multiple(length, train_len)}"),
    ]
    rows = []
    for name in results["method_order"]:
        m = results["methods"][name]
        for point in m.get("lr_search", []):
            ppl = point["perplexity"]
            cells = [
                _method(name),
                f"{point['position_lr_mult']:g}",
                f"{point['validation_loss']:.4f}",
                _fmt(ppl[i0]) if ppl[i0] is not None else tr("cannot run"),
                _fmt(ppl[i1]) if ppl[i1] is not None else tr("cannot run"),
            ]
            if point["position_lr_mult"] == m["position_lr_mult"]:
                cells = [f"**{c}**" for c in cells]
            rows.append(cells)
    return _rows(head, rows)


@_table
def cost_table(results: dict, *, clock: str = "cpu", length: int | None = None) -> str:
    """Markdown table of costs per method: parameters, training throughput (mean ± std over seeds of
    the median step), peak training memory (tensor MiB), and inference throughput and peak inference
    memory (one batch) at evaluation ``length`` (default: the longest). ``clock``: ``"cpu"`` (tokens
    per CPU second) or ``"wall"`` (tokens per wall-clock second)."""
    validate_results(results)
    if clock not in ("cpu", "wall"):
        raise ValueError(f"clock must be 'cpu' or 'wall', got {clock!r}")
    suffix, unit = ("_cpu_s", tr("tokens/CPU-s")) if clock == "cpu" else ("_s", tr("tokens/s"))
    lengths = results["eval_lengths"]
    length = max(lengths) if length is None else length
    if length not in lengths:
        raise ValueError(f"length must be one of the evaluation lengths {lengths}, got {length!r}")
    i = lengths.index(length)
    mib = 2.0**20
    head = [
        tr("method"),
        tr("params"),
        tr("train {unit}", unit=unit),
        tr("train MiB"),
        tr("inference {unit}, L = {length}", unit=unit, length=length),
        tr("inference MiB, L = {length}", length=length),
    ]
    rows = []
    for name in results["method_order"]:
        m = results["methods"][name]
        agg = m["aggregate"]
        if m["trained_as"] == name:
            t = agg["train_tokens_per" + suffix]
            train = f"{t['mean']:,.0f}" + (f" ± {t['std']:,.0f}" if t.get("std") is not None else "")
            memory = f"{m['memory']['train']['total_bytes'] / mib:.1f}"
        else:
            train, memory = tr("(evaluation of {name})", name=_method(m["trained_as"])), "–"
        infer = agg["inference_tokens_per" + suffix]["mean"][i]
        peak = m["memory"]["inference_peak_bytes"][i]
        rows.append(
            [
                _method(name),
                f"{m['params']:,}",
                train,
                memory,
                tr("cannot run") if infer is None else f"{infer:,.0f}",
                "–" if peak is None else f"{peak / mib:.1f}",
            ]
        )
    return _rows(head, rows)


def _mean_ppl(run: dict, name: str, multiple: int) -> float | None:
    at = run["eval_lengths"].index(run["train_len"] * multiple)
    return run["methods"][name]["aggregate"]["perplexity"]["mean"][at]


@_table
def previous_run_table(previous: dict, results: dict) -> str:
    """Markdown table: the first published run (``previous``, :func:`posviz.lab.load_previous`)
    beside ``results``, mean perplexity over seeds at the training length and at 16× and their
    ratio, for every method both runs have."""

    def cell(value: float | None) -> str:
        return tr("cannot run") if value is None else f"{value:.2f}"

    rows = []
    for name in (n for n in results["method_order"] if n in previous["methods"]):  # rows both runs have
        old1, old16, new1, new16 = (_mean_ppl(run, name, k) for run in (previous, results) for k in (1, 16))
        old_r = "–" if old16 is None else f"{old16 / old1:.2f}"
        new_r = "–" if new16 is None else f"{new16 / new1:.2f}"
        rows.append([_method(name), cell(old1), cell(old16), old_r, cell(new1), cell(new16), new_r])
    head = [
        tr("method"),
        tr("first run, {k}×", k=1),
        tr("first run, {k}×", k=16),
        tr("ratio 16×/1×"),
        tr("this run, {k}×", k=1),
        tr("this run, {k}×", k=16),
        tr("ratio 16×/1×"),
    ]
    return _rows(head, rows)


def _comparison_label(name: str, multiple: int, other: str | None) -> str:
    if other is None:
        return tr("{name}: {k}× − 1× (its own degradation)", name=name, k=multiple)
    return f"{name} − {other}, {multiple}×"


def lr_sensitivity(results: dict, comparisons: Sequence[tuple[str, int, str | None]]) -> dict[str, list]:
    """For each comparison ``(method with position parameters, multiple of the training length,
    other method or None)``, the first seed's perplexity difference at every multiplier of the
    learning-rate grid: the method's grid run minus the other method's first seed at that length
    (``None``: minus the same grid run at the training length). Label (as the table shows it) ->
    one value per grid point (``None`` where either cannot run)."""
    validate_results(results)
    methods, lengths, train_len = results["methods"], results["eval_lengths"], results["train_len"]
    grid = results["config"]["position_lr_grid"]
    seed0 = results["config"]["seeds"][0]
    out = {}
    for name, multiple, other in comparisons:
        i = lengths.index(train_len * multiple)
        search = {p["position_lr_mult"]: p["perplexity"] for p in methods[name]["lr_search"]}
        values = []
        for g in grid:
            mine = search[g][i]
            if other is None:
                ref = search[g][0]
            else:
                ref = next(s for s in methods[other]["seeds"] if s["seed"] == seed0)["perplexity"][i]
            values.append(None if mine is None or ref is None else mine - ref)
        out[_comparison_label(name, multiple, other)] = values
    return out


def comparison_phrase(name: str, multiple: int, other: str | None = None) -> str:
    """The row label :func:`lr_sensitivity_table` shows for a comparison (``t5 − rope, 16×``; in
    Chinese the methods' labels), as a phrase that prose can quote: glued, it is translated with
    its method names (:func:`posviz.i18n.keyed`) the way the table is."""
    if other is None:
        return tr("{name}: {k}× − 1× (its own degradation)", name=_method(name), k=multiple)
    return tr("{name} − {other}, {k}×", name=_method(name), other=_method(other), k=multiple)


@_table
def lr_sensitivity_table(results: dict, comparisons: Sequence[tuple[str, int, str | None]]) -> str:
    """Markdown table of :func:`lr_sensitivity`: one row per comparison, one column per multiplier of
    the grid, the chosen multiplier's value in bold."""
    grid = results["config"]["position_lr_grid"]
    rows = []
    for (name, multiple, other), values in zip(comparisons, lr_sensitivity(results, comparisons).values()):
        # the row names its methods as the other tables do (lr_sensitivity's keys stay the keys)
        label = comparison_phrase(name, multiple, other)
        chosen = grid.index(results["methods"][name]["position_lr_mult"])
        cells = ["–" if v is None else (f"**{v:+.2f}**" if j == chosen else f"{v:+.2f}") for j, v in enumerate(values)]
        rows.append([label, *cells])
    return _rows([tr("comparison (first seed)"), *[tr("lr × {g}", g=f"{g:g}") for g in grid]], rows)


def format_tables(results: dict) -> str:
    """What the CLI prints: perplexity (mean ± std [min–max]), paired differences, the learning-rate
    search and the costs, as Markdown tables with a line of explanation each."""
    parts = [
        tr("Held-out perplexity (mean ± std over seeds [min–max]); 'cannot run' = no position past the table"),
        perplexity_table(results),
    ]
    if results.get("paired") is not None:
        parts += [
            tr(
                "Paired by seed: perplexity minus {baseline}'s, mean ± std over seeds of the per-seed differences; "
                "'(inside spread)': not all seeds agree in sign, or |mean| <= std; '(one seed: no spread)': "
                "nothing to compare with",
                baseline=results["paired"]["baseline"],
            ),
            paired_table(results),
        ]
    if any(m.get("lr_search") for m in results["methods"].values()):
        parts += [
            tr("Learning-rate search for the position parameters (first seed; chosen on validation loss, in bold)"),
            lr_search_table(results),
        ]
    for clock, what in (("cpu", tr("per CPU second (all threads)")), ("wall", tr("per wall-clock second"))):
        parts += [
            tr(
                "Costs {what}: training throughput from the median step (mean ± std over seeds), peak training "
                "memory = params + AdamW state + one step's peak (tensor bytes); inference at the longest length",
                what=what,
            ),
            cost_table(results, clock=clock),
        ]
    return "\n\n".join(parts)
