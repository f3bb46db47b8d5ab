"""The benchmark's report (``python -m posviz.bench``): its Markdown tables and the targets it is
held to, every number in them read from the result, none typed (``book/performance.md`` includes
the committed ``benchmarks/results.md``)."""

from __future__ import annotations

from typing import Any

# The targets: what a reader of the book needs (a slider that answers, a book that rebuilds while
# an author waits) and what a widely used implementation already does.
MAX_RATIO_REFERENCE = 1.0  # posviz at least as fast as the reference, every operation
MAX_ROPE_COPIES = 1.5  # apply_rope on large inputs, in copies of the output (the memory-bound floor)
MAX_EXPLORER_MS = 50.0  # one control change of a live explorer
MAX_CACHED_BUILD_S = 60.0  # `make book` with nothing changed (the execution cache serves every chapter)


def _fmt(x: float | None, spec: str = ".2f") -> str:
    return "–" if x is None else format(x, spec)


def _ratio(x: float | None) -> str:
    """A ratio with two decimals, or two significant digits below 0.1 (0.0045, not 0.00)."""
    if x is None:
        return "–"
    return format(x, ".2f") if abs(x) >= 0.1 or x == 0 else format(x, ".2g")


def _met(ok: bool) -> str:
    return "met" if ok else "**not met**"


def _large(rows: list[dict[str, Any]], op: str) -> list[dict[str, Any]]:
    """An operation's rows but its smallest size: the large inputs (all of them when it has one)."""
    mine = [r for r in rows if r["op"] == op]
    return mine[1:] if len(mine) > 1 else mine


def _reference_target(rows: list[dict[str, Any]]) -> str:
    timed = [r for r in rows if r["ratio_reference"] is not None]
    if not timed:
        return "not measured"
    worst = max(timed, key=lambda r: r["ratio_reference"])
    families: dict[str, list[float]] = {}
    for r in timed:
        families.setdefault(r["op"].split()[0], []).append(r["ratio_reference"])
    ranges = "; ".join(f"{name} {_ratio(min(v))}–{_ratio(max(v))}" for name, v in families.items())
    ok = worst["ratio_reference"] <= MAX_RATIO_REFERENCE
    return f"{_met(ok)}: largest ratio {_ratio(worst['ratio_reference'])} ({worst['op']} at {worst['size']}); {ranges}"


def _rope_target(rows: list[dict[str, Any]]) -> str:
    parts = []
    for op in dict.fromkeys(r["op"] for r in rows if r["op"].startswith("apply_rope")):
        large = [r for r in _large(rows, op) if r["ratio_copy"] is not None]
        if not large:
            continue
        ok = all(r["ratio_copy"] <= MAX_ROPE_COPIES for r in large)
        values = ", ".join(f"{_ratio(r['ratio_copy'])} at {r['size']}" for r in large)
        parts.append(f"{op.removeprefix('apply_rope ')}: {_met(ok)} ({values})")
    return ". ".join(parts) if parts else "not measured"


def _explorer_target(explorers: list[dict[str, Any]]) -> str:
    timed = [e for e in explorers if e["worst_control_ms"] is not None]
    if not timed:
        return "not measured"
    medians = [e["median_ms"] for e in timed]
    worst = max(timed, key=lambda e: e["worst_control_ms"])
    ok = worst["worst_control_ms"] <= MAX_EXPLORER_MS
    return (
        f"{_met(ok)}: medians {min(medians):.1f}–{max(medians):.1f} ms, slowest control "
        f"{worst['worst_control_ms']:.1f} ms ({worst['explorer']}, {worst['worst_control']})"
    )


def _book_target(book: dict[str, float] | None) -> str:
    if not book:
        return "not measured (`python -m posviz.bench --book`)"
    ok = book["cached_rebuild_s"] < MAX_CACHED_BUILD_S
    return (
        f"{_met(ok)}: {book['cached_rebuild_s']:.0f} s (a clean build, every chapter executed: "
        f"{book['clean_build_s']:.0f} s; {book['jobs']:.0f} Sphinx processes)"
    )


def targets(result: dict[str, Any]) -> list[tuple[str, str]]:
    """``(target, status)`` for each target, the status computed from ``result`` (its CPU rows,
    or its first device's)."""
    operations = result["operations"]
    rows = operations.get("cpu") or next(iter(operations.values()), [])
    explorers = result.get("explorers") or []
    return [
        (
            f"posviz / reference ≤ {MAX_RATIO_REFERENCE:.1f} for every operation with a reference",
            _reference_target(rows),
        ),
        (f"`apply_rope` ≤ {MAX_ROPE_COPIES} × a copy on large inputs", _rope_target(rows)),
        (f"every live explorer ≤ {MAX_EXPLORER_MS:.0f} ms per control change", _explorer_target(explorers)),
        (f"`make book` with nothing changed < {MAX_CACHED_BUILD_S:.0f} s", _book_target(result.get("book"))),
        ("no correctness loss", "the test suite checks every function against its formula and the references above"),
    ]


def markdown(result: dict[str, Any]) -> str:
    """The report: where it was measured, the time and memory tables, the explorers, the targets."""
    m = result["machine"]
    kept = "; on the CPU, freed memory kept for reuse" if m.get("freed_memory_kept") else ""
    took = f" The run took {result['benchmark_s'] / 60:.0f} minutes." if result.get("benchmark_s") else ""
    lines = [
        f"Measured on {m['cpu']} ({m.get('cpu_count', m.get('cores'))} cores, {m['torch_threads']} torch threads), "
        f"torch {m['torch']}, Python {m['python']}{', ' + m['gpu'] if m.get('gpu') else ''}; "
        f"{result['date']}. Median of interleaved repeats{kept}.{took}",
        "",
    ]
    for device, rows in result["operations"].items():
        lines += [
            f"**Time on {device}** (ms; ratios below 1 mean posviz is faster)",
            "",
            "| operation | size | posviz | reference | posviz / ref | posviz / copy |",
            "| --- | --- | ---: | ---: | ---: | ---: |",
        ]
        for r in rows:
            lines.append(
                f"| {r['op']} | {r['size']} | {_fmt(r['posviz_ms'])} | {_fmt(r['reference_ms'])} | "
                f"{_ratio(r['ratio_reference'])} | {_ratio(r['ratio_copy'])} |"
            )
        lines += [
            "",
            f"**Peak extra memory on {device}** (MiB, one call)",
            "",
            "| operation | size | reference implementation | posviz | reference |",
            "| --- | --- | --- | ---: | ---: |",
        ]
        for r in rows:
            lines.append(
                f"| {r['op']} | {r['size']} | {r['reference'] or '–'} | {_fmt(r['posviz_peak_mib'], '.0f')} | "
                f"{_fmt(r['reference_peak_mib'], '.0f')} |"
            )
        lines.append("")
    if result.get("explorers"):
        lines += [
            "**Live explorers** (control change → updated figure data)",
            "",
            "| explorer | median ms | slowest control | its median ms |",
            "| --- | ---: | --- | ---: |",
        ]
        for e in result["explorers"]:
            lines.append(
                f"| {e['explorer']} | {_fmt(e['median_ms'], '.1f')} | {e['worst_control'] or '–'} | "
                f"{_fmt(e['worst_control_ms'], '.1f')} |"
            )
        lines.append("")
    if result.get("book"):
        b = result["book"]
        lines += [
            f"**Book build** (`make book`, both editions, {b['jobs']:.0f} Sphinx processes): clean, every "
            f"chapter executed, {b['clean_build_s']:.0f} s; again with nothing changed {b['cached_rebuild_s']:.0f} s.",
            "",
        ]
    lines += ["**Targets**", "", "| target | status |", "| --- | --- |"]
    lines += [f"| {target} | {status} |" for target, status in targets(result)]
    lines.append("")
    return "\n".join(lines)
