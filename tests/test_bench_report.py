"""posviz.bench_report: the benchmark's Markdown and its targets, every number read from the result
(none typed), and book/performance.md, which shows them, with no measured number typed into it."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

import posviz.bench as bench
from posviz.bench_report import markdown, targets

ROOT = Path(__file__).resolve().parents[1]


def _row(op: str, size: str, ratio_reference: float | None, ratio_copy: float | None) -> dict:
    return {
        "op": op, "size": size, "reference": "ref" if ratio_reference is not None else "",
        "posviz_ms": 1.0, "reference_ms": 2.0, "copy_ms": 0.5, "ratio_reference": ratio_reference,
        "ratio_copy": ratio_copy, "posviz_peak_mib": 3.0, "reference_peak_mib": 4.0, "repeats": 3, "extra": {},
    }  # fmt: skip


RESULT = {
    "machine": {"cpu": "Test CPU", "cores": 2, "torch_threads": 2, "torch": "2.x", "python": "3.11"},
    "date": "2026-12-07",
    "benchmark_s": 240.0,
    "operations": {
        "cpu": [
            _row("apply_rope interleaved", "1x8x512x64", 0.07, 0.35),
            _row("apply_rope interleaved", "4x16x2048x64", 0.12, 1.22),
            _row("apply_rope half (q and k)", "1x8x512x64", 0.39, 3.06),
            _row("apply_rope half (q and k)", "4x16x2048x64", 0.30, 1.62),
            _row("alibi_bias", "8x512x512", 0.53, 2.02),
            _row("relative_positions", "512x512", None, 2.01),
        ]
    },
    "explorers": [
        {"explorer": "rope.rope_explorer", "median_ms": 2.9, "worst_control": "length", "worst_control_ms": 4.2},
        {"explorer": "alibi.alibi_explorer", "median_ms": 3.1, "worst_control": "heads", "worst_control_ms": 7.5},
    ],
    "book": {"jobs": 2, "clean_build_s": 207.4, "cached_rebuild_s": 41.6},
}


def _status(result: dict, start: str) -> str:
    return next(status for target, status in targets(result) if target.startswith(start))


def test_each_target_is_decided_from_the_numbers() -> None:
    assert _status(RESULT, "posviz / reference").startswith("met: largest ratio 0.53 (alibi_bias at 8x512x512)")
    assert "apply_rope 0.07–0.39; alibi_bias 0.53–0.53" in _status(RESULT, "posviz / reference")
    # large inputs: every size but an operation's smallest
    assert _status(RESULT, "`apply_rope`") == (
        "interleaved: met (1.22 at 4x16x2048x64). half (q and k): **not met** (1.62 at 4x16x2048x64)"
    )
    assert _status(RESULT, "every live explorer") == (
        "met: medians 2.9–3.1 ms, slowest control 7.5 ms (alibi.alibi_explorer, heads)"
    )
    assert _status(RESULT, "`make book`") == (
        "met: 42 s (a clean build, every chapter executed: 207 s; 2 Sphinx processes)"
    )


@pytest.mark.parametrize(
    ("where", "value", "target"),
    [
        (("operations", "cpu", 4, "ratio_reference"), 1.01, "posviz / reference"),
        (("explorers", 0, "worst_control_ms"), 50.5, "every live explorer"),
        (("book", "cached_rebuild_s"), 60.0, "`make book`"),
    ],
)
def test_a_number_past_its_target_is_not_met(where: tuple, value: float, target: str) -> None:
    result = copy.deepcopy(RESULT)
    holder = result
    for key in where[:-1]:
        holder = holder[key]
    holder[where[-1]] = value
    assert _status(result, target).startswith("**not met**"), _status(result, target)
    assert _status(RESULT, target).startswith("met")


def test_a_small_ratio_keeps_two_significant_digits() -> None:
    """A ratio far below 1 (sinusoidal_encoding against DistilBERT's numpy table: 0.0045) showed
    as 0.00, in the table and in the targets: a number nobody could read."""
    result = copy.deepcopy(RESULT)
    result["operations"]["cpu"][0].update(ratio_reference=0.0045, ratio_copy=0.033)
    text = markdown(result)
    assert "| apply_rope interleaved | 1x8x512x64 | 1.00 | 2.00 | 0.0045 | 0.033 |" in text
    assert "apply_rope 0.0045–0.39" in _status(result, "posviz / reference")
    assert "0.00 " not in text and "0.00–" not in text
    assert "| 0.30 | 1.62 |" in text  # two decimals from 0.1 up


def test_what_was_not_measured_says_so() -> None:
    result = {**RESULT, "explorers": [], "book": None}
    assert _status(result, "every live explorer") == "not measured"
    assert _status(result, "`make book`") == "not measured (`python -m posviz.bench --book`)"
    assert "**Book build**" not in markdown(result)


def test_the_report_has_every_table_and_the_targets() -> None:
    text = markdown(RESULT)
    assert text.startswith("Measured on Test CPU (2 cores, 2 torch threads), torch 2.x, Python 3.11; 2026-12-07.")
    assert "The run took 4 minutes." in text
    assert "| apply_rope half (q and k) | 4x16x2048x64 | 1.00 | 2.00 | 0.30 | 1.62 |" in text
    assert "| alibi.alibi_explorer | 3.1 | heads | 7.5 |" in text
    assert "clean, every chapter executed, 207 s; again with nothing changed 42 s." in text
    table = text[text.index("**Targets**") :].splitlines()[4:]
    assert [line.split(" | ")[0] for line in table if line] == [f"| {t}" for t, _ in targets(RESULT)]
    assert bench.markdown is markdown


def test_the_committed_report_is_the_committed_results() -> None:
    """benchmarks/results.md is what posviz.bench_report makes of benchmarks/results.json: nobody
    edited a number in it by hand, and a change of the report's code comes with the report rerun."""
    import json

    result = json.loads((ROOT / "benchmarks" / "results.json").read_text())
    assert (ROOT / "benchmarks" / "results.md").read_text() == markdown(result) + "\n"


_MEASURED = re.compile(r"\b\d+(?:[.,]\d+)?\s*(?:s|ms|seconds?|minutes?|MiB|MB|copies)\b|\b\d+\.\d+\b")


def test_the_performance_page_types_no_measured_number() -> None:
    """What the benchmark measured reaches the page through its include, never typed: typed, it
    went stale (the book build's 44 s and 9 s stayed after the build took minutes)."""
    text = (ROOT / "book" / "performance.md").read_text()
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # the include and code blocks
    text = re.sub(r"\$[^$]+\$|`[^`]+`", "", text)  # math and code
    assert "{include} ../benchmarks/results.md" in (ROOT / "book" / "performance.md").read_text()
    assert _MEASURED.findall(text) == []


def test_the_pattern_finds_a_typed_measurement() -> None:
    assert _MEASURED.findall("a clean build took 44 s; Measured: 1.6–1.9 copies") == ["44 s", "1.6", "1.9 copies"]
