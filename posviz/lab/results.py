"""The results file: aggregation across seeds, paired differences, machine description, schema
check and I/O (its tables: :mod:`posviz.lab.tables`).

The schema is documented in :mod:`posviz.lab` (the package docstring); :func:`validate_results`
checks it and is what the tests, :mod:`posviz.lab.tables` and :mod:`posviz.lab.figures` rely on.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from .._runtime import machine_info as _machine_info

__all__ = [
    "PUBLISHED",
    "check_paired",
    "write_json",
    "SCHEMA",
    "SCHEMA_VERSION",
    "load_previous",
    "load_published",
    "load_results",
    "inside_spread",
    "machine_info",
    "paired_differences",
    "paired_summary",
    "perplexity_ratio",
    "save_results",
    "select_methods",
    "summarize",
    "summarize_lists",
    "validate_results",
]

SCHEMA = "posviz.lab/extrapolation"
SCHEMA_VERSION = 2
PUBLISHED = Path(__file__).resolve().parent / "published" / "extrapolation.json"
"""The committed full run, shipped inside the package (so an installed ``posviz``, on Colab say,
has it); ``python -m posviz.lab --threads 1 --publish`` rewrites it."""
PREVIOUS = Path(__file__).resolve().parent / "published" / "extrapolation-v1.json"
"""The first published run (schema version 1: one learning rate for every parameter, a contiguous
90/10 split, unpaired seeds), kept unchanged so the book can say what the fairer protocol changed."""


def summarize(values: Sequence[float]) -> dict[str, float | int | None]:
    """``{"mean", "std", "min", "max", "n"}`` of ``values``; ``std`` is the sample std (n-1), None for n < 2."""
    vals = [float(v) for v in values]
    if not vals:
        return {"mean": None, "std": None, "min": None, "max": None, "n": 0}
    return {
        "mean": statistics.fmean(vals),
        "std": statistics.stdev(vals) if len(vals) > 1 else None,
        "min": min(vals),
        "max": max(vals),
        "n": len(vals),
    }


def summarize_lists(rows: Sequence[Sequence[float | None]]) -> dict[str, list]:
    """Per-position :func:`summarize` of equally long lists (one per seed); a None anywhere gives None."""
    out: dict[str, list] = {"mean": [], "std": [], "min": [], "max": [], "n": []}
    for column in zip(*rows):
        if any(v is None for v in column):
            for key in out:
                out[key].append(None if key != "n" else 0)
            continue
        s = summarize(column)  # type: ignore[arg-type]
        for key in out:
            out[key].append(s[key])
    return out


def inside_spread(diffs: Sequence[float]) -> bool | None:
    """Whether a paired difference is *inside the seed spread*: the per-seed differences do not all
    have the same sign, or their mean is no larger than their sample standard deviation. ``None``
    with fewer than two seeds (no spread to compare with)."""
    vals = [float(v) for v in diffs]
    if len(vals) < 2:
        return None
    same_sign = all(v > 0 for v in vals) or all(v < 0 for v in vals)
    return not (same_sign and abs(statistics.fmean(vals)) > statistics.stdev(vals))


def paired_differences(results: dict, method: str, baseline: str, key: str = "perplexity") -> list[list[float] | None]:
    """Per length, ``method`` minus ``baseline`` for each seed both ran (matched by seed), e.g. the
    perplexity difference; ``None`` at a length where either cannot run."""
    a = {s["seed"]: s[key] for s in results["methods"][method]["seeds"]}
    b = {s["seed"]: s[key] for s in results["methods"][baseline]["seeds"]}
    seeds = [seed for seed in a if seed in b]
    out: list[list[float] | None] = []
    for i in range(len(results["eval_lengths"])):
        pairs = [(a[seed][i], b[seed][i]) for seed in seeds]
        out.append(None if not pairs or any(x is None or y is None for x, y in pairs) else [x - y for x, y in pairs])
    return out


def paired_summary(results: dict, baseline: str) -> dict:
    """``{"baseline", "key": "perplexity", "methods": {NAME: {"diff": [[per seed] | None per length],
    "mean", "std", "min", "max": [per length], "inside_spread": [bool | None per length]}}}``."""
    out: dict = {"baseline": baseline, "key": "perplexity", "methods": {}}
    for name in results["method_order"]:
        diffs = paired_differences(results, name, baseline)
        stats = summarize_lists([[None if d is None else d[j] for d in diffs] for j in range(_n_pairs(diffs))])
        entry = {"diff": diffs, **{k: stats[k] for k in ("mean", "std", "min", "max")}}
        if not stats["mean"]:  # no seeds in common
            entry.update({k: [None] * len(diffs) for k in ("mean", "std", "min", "max")})
        entry["inside_spread"] = [None if d is None or name == baseline else inside_spread(d) for d in diffs]
        out["methods"][name] = entry
    return out


def _n_pairs(diffs: list) -> int:
    return next((len(d) for d in diffs if d is not None), 0)


def machine_info(device: torch.device) -> dict:
    """What a run was measured on (:func:`posviz._runtime.machine_info`) and the load at its start."""
    info = _machine_info(device)
    info["python"] = sys.version
    try:
        info["load_average_at_start"] = list(os.getloadavg())
    except OSError:  # pragma: no cover
        pass
    return info


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise ValueError(f"results do not match the posviz.lab schema: {msg}")


def _finite_or_none(values: list, where: str) -> None:
    for v in values:
        _check(v is None or (isinstance(v, (int, float)) and math.isfinite(v)), f"{where} holds {v!r}")


def validate_results(results: dict) -> None:
    """Raise ``ValueError`` naming the first thing that does not match the schema (version
    :data:`SCHEMA_VERSION`, documented in :mod:`posviz.lab`).

    Also checks the "cannot run" rule: a length has a perplexity or a reason string, never both.
    """
    _check(isinstance(results, dict), "not a JSON object")
    _check(results.get("schema") == SCHEMA, f"schema must be {SCHEMA!r}, got {results.get('schema')!r}")
    _check(results.get("schema_version") == SCHEMA_VERSION, f"schema_version must be {SCHEMA_VERSION}")
    for key in ("config", "data", "machine", "train_len", "eval_lengths", "method_order", "methods"):
        _check(key in results, f"missing top-level key {key!r}")
    for key in ("text", "train", "validation", "heldout"):
        sha = results["data"].get("sha256", {}).get(key)
        _check(isinstance(sha, str) and len(sha) == 64, f"data.sha256.{key} must be a hex SHA-256")
    lengths = results["eval_lengths"]
    n = len(lengths)
    _check(n > 0 and all(isinstance(x, int) for x in lengths), "eval_lengths must be a non-empty list of ints")
    _check(set(results["method_order"]) == set(results["methods"]), "method_order and methods disagree")
    overlap = results["data"].get("overlap")
    _check(isinstance(overlap, dict), "data.overlap is missing")
    for key in ("training_windows_with_heldout_ngram", "validation_ngrams_in_heldout"):
        _check(overlap.get(key) == 0, f"data.overlap.{key} must be 0, got {overlap.get(key)!r}")
    for name, m in results["methods"].items():
        where = f"methods.{name}"
        for key in ("kind", "trained_as", "params", "memory", "seeds", "aggregate"):
            _check(key in m, f"{where} lacks {key!r}")
        _check(len(m["seeds"]) > 0, f"{where}.seeds is empty")
        for s in m["seeds"]:
            for key in ("perplexity", "loss", "inference_tokens_per_s", "inference_tokens_per_cpu_s", "cannot_run"):
                ok = isinstance(s.get(key), list) and len(s[key]) == n
                _check(ok, f"{where}.seeds[].{key} must have {n} entries")
                if key != "cannot_run":
                    _finite_or_none(s[key], f"{where}.seeds[{s.get('seed')}].{key}")
            for ppl, reason in zip(s["perplexity"], s["cannot_run"]):
                _check((ppl is None) == isinstance(reason, str), f"{where}: each length needs a number xor a reason")
            if m["trained_as"] == name:
                keys = ("final_train_loss", "train_tokens_per_s", "train_tokens_per_cpu_s", "train_seconds")
                keys += ("validation_loss",)
                for key in keys:
                    v = s.get(key)
                    _check(isinstance(v, (int, float)) and math.isfinite(v), f"{where}.seeds[].{key} = {v!r}")
        agg = m["aggregate"]
        for key in ("perplexity", "loss", "inference_tokens_per_s", "inference_tokens_per_cpu_s"):
            for stat in ("mean", "std", "min", "max", "n"):
                _check(len(agg[key][stat]) == n, f"{where}.aggregate.{key}.{stat} must have {n} entries")
                _finite_or_none(agg[key][stat], f"{where}.aggregate.{key}.{stat}")
        _check(len(m["memory"]["inference_peak_bytes"]) == n, f"{where}.memory.inference_peak_bytes needs {n}")
        for point in m.get("lr_search", []):
            _check(len(point["perplexity"]) == n, f"{where}.lr_search[].perplexity needs {n}")
    for i, rerun in enumerate(results.get("reruns", [])):
        _check(isinstance(rerun, dict) and isinstance(rerun.get("rows"), list), f"reruns[{i}] needs a list 'rows'")
        for name in rerun["rows"] + rerun.get("verified_identical", []):
            _check(name in results["methods"], f"reruns[{i}] names {name!r}, which is not a method")
    check_paired(results, n, _check)


def check_paired(results: dict, n: int, check: Callable[[bool, str], None]) -> None:
    """The ``paired`` block of a results file (:func:`paired_summary`'s shape), if it has one: its
    baseline is a method, it covers every method, and each list has ``n`` entries (one per evaluated
    length or grid). ``check(cond, msg)`` raises the caller's schema error. Shared with
    :mod:`posviz.vislab`."""
    paired = results.get("paired")
    if paired is not None:
        check(paired["baseline"] in results["methods"], "paired.baseline is not a method")
        check(set(paired["methods"]) == set(results["methods"]), "paired.methods and methods disagree")
        for name, p in paired["methods"].items():
            for key in ("diff", "mean", "std", "min", "max", "inside_spread"):
                check(len(p[key]) == n, f"paired.methods.{name}.{key} needs {n} entries")


def write_json(results: dict, path: str | os.PathLike) -> Path:
    """Write ``results`` as indented JSON (``allow_nan=False``: no NaN sneaks in), making its folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1, allow_nan=False) + "\n")
    return path


def save_results(results: dict, path: str | os.PathLike) -> Path:
    """Validate, then write ``results`` (:func:`write_json`)."""
    validate_results(results)
    return write_json(results, path)


def load_results(path: str | os.PathLike) -> dict:
    """Read and validate a results JSON file."""
    results = json.loads(Path(path).read_text())
    validate_results(results)
    return results


def load_previous() -> dict:
    """The first published run (``PREVIOUS``, schema version 1), read as plain JSON (not validated
    against the current schema)."""
    results = json.loads(PREVIOUS.read_text())
    _check(results.get("schema") == SCHEMA and results.get("schema_version") == 1, "PREVIOUS is not a v1 file")
    return results


def load_published() -> dict:
    """The committed full run (``PUBLISHED``), read and validated: what the book's chapter draws."""
    return load_results(PUBLISHED)


def select_methods(results: dict, methods: Sequence[str]) -> dict:
    """A view of ``results`` with only ``methods`` (in the file's own ``method_order``): what a
    chapter that discusses some of the rows passes to the figures and tables. Everything else is
    shared with ``results`` (not copied); the paired summary keeps its baseline, which must be kept.

    Raises ``ValueError`` naming a method the results lack, or the paired baseline left out.
    """
    validate_results(results)
    wanted = list(methods)
    unknown = [m for m in wanted if m not in results["methods"]]
    if unknown:
        raise ValueError(f"methods {unknown} are not in these results; they have {results['method_order']}")
    paired = results.get("paired")
    if paired is not None and paired["baseline"] not in wanted:
        raise ValueError(f"methods must keep the paired baseline {paired['baseline']!r}, got {wanted}")
    view = dict(results)
    view["method_order"] = [m for m in results["method_order"] if m in wanted]
    view["methods"] = {m: results["methods"][m] for m in view["method_order"]}
    if paired is not None:
        view["paired"] = dict(paired, methods={m: e for m, e in paired["methods"].items() if m in wanted})
    return view


def perplexity_ratio(results: dict) -> dict[str, list[float | None]]:
    r"""Per method, the mean perplexity at each length relative to the training length,

    .. math::

        \rho_L = \frac{\overline{\text{ppl}}_L}{\overline{\text{ppl}}_{L_{\text{train}}}},

    means over seeds; ``None`` where the method cannot run (or has no value at the training length).
    :math:`\rho_L > 1`: worse with the longer input; :math:`\rho_L < 1`: the extra context helps.
    """
    validate_results(results)
    lengths = results["eval_lengths"]
    if results["train_len"] not in lengths:
        raise ValueError(f"results have no evaluation at the training length {results['train_len']}: {lengths}")
    at = lengths.index(results["train_len"])
    out: dict[str, list[float | None]] = {}
    for name in results["method_order"]:
        mean = results["methods"][name]["aggregate"]["perplexity"]["mean"]
        base = mean[at]
        out[name] = [None if v is None or base is None else v / base for v in mean]
    return out
