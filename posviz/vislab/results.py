"""The results file: aggregation over seeds, paired differences, schema check, I/O, glue values.

Aggregation, the paired differences and the inside-the-spread rule are the lab's
(:func:`posviz.lab.results.summarize_lists`, :func:`posviz.lab.results.paired_differences`,
:func:`posviz.lab.inside_spread`), applied to accuracy instead of perplexity. The schema is in
:mod:`posviz.vislab`'s docstring; :func:`validate_results` checks it.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import torch

from ..lab.results import (
    check_paired,
    inside_spread,
    machine_info,
    paired_differences,
    summarize,
    summarize_lists,
    write_json,
)
from .task import make_examples, stream

__all__ = [
    "PAPER_COMPARISONS",
    "PUBLISHED",
    "SCHEMA",
    "SCHEMA_VERSION",
    "aggregate",
    "glue_values",
    "load_published",
    "load_results",
    "machine_info",
    "paired_between",
    "paired_summary",
    "save_results",
    "validate_results",
]

SCHEMA = "posviz.vislab/resolution"
SCHEMA_VERSION = 1
PUBLISHED = Path(__file__).resolve().parent / "published" / "resolution.json"
"""The committed full run (``python -m posviz.vislab --publish`` rewrites it)."""


def aggregate(seeds: list[dict]) -> dict:
    """Over seeds: per grid ``accuracy`` and ``loss`` (:func:`posviz.lab.results.summarize_lists`), and
    ``validation_accuracy``, ``validation_loss``, ``final_train_loss``, ``train_seconds``
    (:func:`posviz.lab.results.summarize`)."""
    out: dict = {key: summarize_lists([s[key] for s in seeds]) for key in ("accuracy", "loss")}
    for key in ("validation_accuracy", "validation_loss", "final_train_loss", "train_seconds"):
        out[key] = summarize([s[key] for s in seeds])
    return out


def paired_summary(results: dict, baseline: str) -> dict:
    """Accuracy minus ``baseline``'s, per seed and grid: ``{"baseline", "key": "accuracy", "methods":
    {NAME: {"diff": [[per seed] per grid], "mean", "std", "min", "max": [per grid],
    "inside_spread": [bool | None per grid]}}}`` (the baseline's own row: zeros, ``None`` verdicts)."""
    view = {"eval_lengths": results["eval_grids"], "methods": results["methods"]}  # the lab's per-column layout
    out: dict = {"baseline": baseline, "key": "accuracy", "methods": {}}
    for name in results["method_order"]:
        diffs = paired_differences(view, name, baseline, key="accuracy")  # per grid: [per seed]
        stats = summarize_lists(list(zip(*diffs)))  # type: ignore[arg-type]
        out["methods"][name] = {
            "diff": diffs,
            **{k: stats[k] for k in ("mean", "std", "min", "max")},
            "inside_spread": [None if name == baseline else inside_spread(d) for d in diffs],  # type: ignore[arg-type]
        }
    return out


def paired_between(results: dict, method: str, other: str) -> dict:
    """``method``'s accuracy minus ``other``'s, same seed: ``{"diff": [[per seed] per grid], "mean",
    "std": [per grid], "inside_spread": [bool | None per grid]}`` (:func:`posviz.lab.inside_spread`).
    E.g. ``paired_between(results, "rope-mixed", "rope-axial")``, the RoPE-Mixed paper's comparison."""
    for name in (method, other):
        if name not in results["methods"]:
            raise ValueError(f"{name!r} is not in these results; they have {results['method_order']}")
    view = {"eval_lengths": results["eval_grids"], "methods": results["methods"]}
    diffs = paired_differences(view, method, other, key="accuracy")
    stats = summarize_lists(list(zip(*diffs)))  # type: ignore[arg-type]
    return {"diff": diffs, "mean": stats["mean"], "std": stats["std"],
            "inside_spread": [inside_spread(d) for d in diffs]}  # type: ignore[arg-type]


PAPER_COMPARISONS = (("rope-mixed", "rope-axial"), ("rope-mixed", "learned"), ("rope-axial", "learned"))
"""Heo et al. (2024)'s resolution claims as pairs (better, worse): RoPE-Mixed over RoPE-Axial and over
the learned absolute table (APE), RoPE-Axial over APE, at resolutions above the training one."""


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise ValueError(f"results do not match the posviz.vislab schema: {msg}")


def _fraction(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0


def validate_results(results: dict) -> None:
    """Raise ``ValueError`` naming the first thing that does not match the schema."""
    _check(isinstance(results, dict), "not a JSON object")
    _check(results.get("schema") == SCHEMA, f"schema must be {SCHEMA!r}, got {results.get('schema')!r}")
    _check(results.get("schema_version") == SCHEMA_VERSION, f"schema_version must be {SCHEMA_VERSION}")
    for key in ("config", "machine", "code", "command", "train_grid", "eval_grids", "method_order", "methods",
                "wall_seconds"):
        _check(key in results, f"missing top-level key {key!r}")
    grids = results["eval_grids"]
    n = len(grids)
    _check(n > 0 and grids == sorted(grids), "eval_grids must be a non-empty ascending list")
    _check(results["train_grid"] in grids, "eval_grids must include train_grid")
    _check(list(results["methods"]) == list(results["method_order"]), "method_order and methods disagree")
    seeds = results["config"]["seeds"]
    for name, m in results["methods"].items():
        where = f"methods.{name}"
        for key in ("kind", "params", "position_lr_mult", "lr_search", "seeds", "aggregate"):
            _check(key in m, f"{where} lacks {key!r}")
        _check([s["seed"] for s in m["seeds"]] == seeds, f"{where}.seeds must be config.seeds, in order")
        for s in m["seeds"]:
            _check(isinstance(s.get("accuracy"), list) and len(s["accuracy"]) == n, f"{where}: accuracy per grid")
            _check(all(_fraction(a) for a in s["accuracy"]), f"{where}: accuracies must lie in [0, 1]")
            _check(len(s.get("loss", [])) == n, f"{where}: loss per grid")
            for key in ("validation_loss", "final_train_loss", "train_seconds"):
                v = s.get(key)
                _check(isinstance(v, (int, float)) and math.isfinite(v), f"{where}.seeds[].{key} = {v!r}")
            _check(s.get("position_lr_mult") == m["position_lr_mult"], f"{where}: a seed ran another multiplier")
        for stat in ("mean", "std", "min", "max", "n"):
            _check(len(m["aggregate"]["accuracy"][stat]) == n, f"{where}.aggregate.accuracy.{stat} needs {n}")
        for point in m["lr_search"]:
            _check(len(point["accuracy"]) == n, f"{where}.lr_search[].accuracy needs {n}")
    check_paired(results, n, _check)


def save_results(results: dict, path: str | os.PathLike) -> Path:
    """Validate, then write ``results`` as indented JSON (no NaN)."""
    validate_results(results)
    return write_json(results, path)


def load_results(path: str | os.PathLike) -> dict:
    """Read and validate a results JSON file."""
    results = json.loads(Path(path).read_text())
    validate_results(results)
    return results


def load_published() -> dict:
    """The committed full run (:data:`PUBLISHED`), read and validated: what the chapter draws."""
    return load_results(PUBLISHED)


def glue_values(results: dict) -> dict:
    """What a chapter glues, computed from ``results``:

    * ``"train_grid"``, ``"eval_grids"``, ``"largest_grid"``, ``"seeds"`` (the count), ``"methods"``;
    * ``"accuracy"``: method -> grid -> ``{"mean", "std", "min", "max"}`` over seeds (fractions);
    * ``"best_past_training"``: the method with the highest mean accuracy at the largest grid
      (ties: the earlier in ``method_order``), ``"best_accuracy"`` its mean there, and
      ``"runner_up"`` / ``"runner_up_accuracy"`` the next one;
    * ``"drop"``: method -> mean accuracy at the training grid minus at the largest grid;
    * ``"inside_spread"``: method -> grid -> whether its paired difference to the baseline is
      inside the seed spread (:func:`posviz.lab.inside_spread`; the baseline left out);
    * ``"paper"``: for each pair of :data:`PAPER_COMPARISONS` present, ``"A > B"`` -> grid ->
      ``{"diff": mean paired difference A - B, "std", "inside_spread", "agrees": diff > 0 and not inside the spread}``;
    * ``"majority_class"``: grid -> the share of the held-out images' most frequent label (what a
      constant answer scores; 0.25 up to sampling: 512 images give a standard error of about 0.02);
    * ``"wall_minutes"``: the run's wall time, ``"workers"``: its processes.
    """
    validate_results(results)
    grids = results["eval_grids"]
    order = results["method_order"]
    at_train, at_last = grids.index(results["train_grid"]), len(grids) - 1
    acc = {
        m: {
            g: {k: results["methods"][m]["aggregate"]["accuracy"][k][i] for k in ("mean", "std", "min", "max")}
            for i, g in enumerate(grids)
        }
        for m in order
    }
    ranked = sorted(order, key=lambda m: (-acc[m][grids[-1]]["mean"], order.index(m)))
    paired = results.get("paired") or {"methods": {}, "baseline": None}
    inside = {
        m: dict(zip(grids, p["inside_spread"])) for m, p in paired["methods"].items() if m != paired["baseline"]
    }
    mean = results["methods"]
    paper = {}
    for a, b in PAPER_COMPARISONS:
        if a in mean and b in mean:
            p = paired_between(results, a, b)
            paper[f"{a} > {b}"] = {
                g: {"diff": p["mean"][i], "std": p["std"][i], "inside_spread": p["inside_spread"][i],
                    "agrees": p["mean"][i] > 0 and p["inside_spread"][i] is False}
                for i, g in enumerate(grids)
            }
    return {
        "train_grid": results["train_grid"],
        "eval_grids": grids,
        "largest_grid": grids[-1],
        "seeds": len(results["config"]["seeds"]),
        "methods": list(order),
        "accuracy": acc,
        "best_past_training": ranked[0],
        "best_accuracy": acc[ranked[0]][grids[-1]]["mean"],
        "runner_up": ranked[1] if len(ranked) > 1 else None,
        "runner_up_accuracy": acc[ranked[1]][grids[-1]]["mean"] if len(ranked) > 1 else None,
        "drop": {
            m: mean[m]["aggregate"]["accuracy"]["mean"][at_train] - mean[m]["aggregate"]["accuracy"]["mean"][at_last]
            for m in order
        },
        "inside_spread": inside,
        "paper": paper,
        "majority_class": {
            g: float(torch.bincount(make_examples(n, g, stream("heldout", g))[1], minlength=4).max()) / n
            for g, n in ((g, results["config"]["n_heldout"]) for g in grids)
        },
        "wall_minutes": results["wall_seconds"] / 60.0,
        "workers": results["machine"].get("workers", 1),
    }
