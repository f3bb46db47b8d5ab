r"""Add evaluation-time RoPE rows to a results file without rerunning everything.

The RoPE variants (:data:`posviz.lab.model.ROPE_VARIANTS`) evaluate the trained ``rope`` models
unchanged, so a new variant needs only the ``rope`` models: ``python -m posviz.lab --methods rope
rope-yarn ... --merge-into FILE`` retrains ``rope`` alone (every seed of ``FILE``'s configuration),
evaluates the requested variants, and :func:`merge_rerun` adds them to ``FILE``. The run is
deterministic (same torch build and thread count), so the rows ``FILE`` already has must come out
*identical*, every seed and every length; otherwise nothing is merged (:class:`RerunMismatch`).

What the merged file records under ``"reruns"`` (one entry per merge, oldest first)::

    {"rows": [str],                 # methods taken from the rerun (new rows)
     "verified_identical": [str],   # rows the file had, recomputed with identical perplexities
     "command": [str], "code": {"git_commit": str | null, "dirty_paths": [str]},
     "created_utc": str, "wall_seconds": float, "load_average_at_end": [float] | null,
     "machine": {...}}              # the rerun's machine record

Paired differences are recomputed for every row against the file's baseline (the rows the file
had keep theirs exactly: checked), ``method_order`` follows :data:`posviz.lab.model.ALL_METHODS`,
and ``config.methods`` lists every row.
"""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path

from .config import RUNTIME_FIELDS
from .model import ALL_METHODS, ROPE_VARIANTS
from .results import paired_summary, validate_results

__all__ = [
    "MERGEABLE",
    "SAME_ARITHMETIC",
    "RerunMismatch",
    "check_mergeable_config",
    "check_same_arithmetic",
    "code_version",
    "merge_rerun",
]

MERGEABLE = ("rope", *ROPE_VARIANTS)
"""The methods a merge may run: ``rope`` and its evaluation-time variants."""

_CONFIG_DEFAULTS = {  # keys absent from runs before issue #14 (see posviz.lab's schema)
    "corpus": None,
    "world_size": 1,
    "precision": "fp32",
    "attention": "posviz",
    "compile": False,
    "checkpoint_every": 0,
}
_IGNORED = {"methods", *RUNTIME_FIELDS}


class RerunMismatch(ValueError):
    """The rerun does not reproduce a row the file already has (or runs another configuration)."""


def _comparable(config: dict) -> dict:
    full = {**_CONFIG_DEFAULTS, **config}
    return {k: v for k, v in full.items() if k not in _IGNORED}


def check_mergeable_config(config: dict, target: dict) -> None:
    """Raise :class:`RerunMismatch` naming every setting (but the methods and where it runs:
    :data:`posviz.lab.config.RUNTIME_FIELDS`) in which ``config`` (a ``LabConfig.to_dict()``)
    differs from ``target``'s ``config``, or when it runs a method outside :data:`MERGEABLE`."""
    outside = [m for m in config["methods"] if m not in MERGEABLE]
    if outside:
        raise RerunMismatch(
            f"--merge-into runs rope and its variants only ({', '.join(MERGEABLE)}); --methods has {outside}"
        )
    mine, theirs = _comparable(config), _comparable(target["config"])
    differ = sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))
    if differ:
        raise RerunMismatch(
            "--merge-into needs the file's configuration; this run differs in "
            + ", ".join(f"{k} ({mine.get(k)!r} instead of {theirs.get(k)!r})" for k in differ)
        )


SAME_ARITHMETIC = ("torch", "torch_threads", "cpu")
"""The machine fields identical numbers need: the torch build, its thread count and the CPU model
(its BLAS kernels: a float32 rounding difference in one step grows over 400 training steps; a
rerun on an Intel Xeon of a run made on an AMD EPYC matched it for ten steps, then drifted, and
ended up to 9% away in perplexity)."""


def check_same_arithmetic(machine: dict, target: dict) -> None:
    """Raise :class:`RerunMismatch` unless ``machine`` (a results file's ``machine`` record, or
    :func:`posviz.lab.results.machine_info`'s) has ``target``'s :data:`SAME_ARITHMETIC` fields."""
    for key in SAME_ARITHMETIC:
        mine, theirs = machine.get(key), target["machine"].get(key)
        if mine != theirs:
            raise RerunMismatch(
                f"this machine's {key} is {mine!r}, the file's {theirs!r}: identical numbers need the same torch "
                "build, thread count and CPU model (a rerun elsewhere diverges from the file in the last bits "
                "first, then in the perplexities)"
            )


def code_version(root: str | Path | None = None) -> dict:
    """``{"git_commit": HEAD or None, "dirty_paths": [uncommitted changes under posviz/]}`` of the
    repository holding this package (None and [] outside a git checkout)."""
    root = Path(root) if root is not None else Path(__file__).resolve().parents[2]

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout if out.returncode == 0 else None

    head = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--", "posviz") if head else None
    dirty = [line[3:] for line in (status or "").splitlines() if line.strip()]
    return {"git_commit": head.strip() if head else None, "dirty_paths": dirty}


def _first_difference(old: dict, new: dict, name: str, lengths: list[int]) -> str | None:
    a = {s["seed"]: s["perplexity"] for s in old["seeds"]}
    b = {s["seed"]: s["perplexity"] for s in new["seeds"]}
    if sorted(a) != sorted(b):
        return f"{name}: seeds {sorted(b)} instead of {sorted(a)}"
    for seed in sorted(a):
        for length, x, y in zip(lengths, a[seed], b[seed]):
            if x != y:  # exact: the run is deterministic
                return f"{name}, seed {seed}, length {length}: perplexity {y!r} instead of the file's {x!r}"
    return None


def merge_rerun(target: dict, rerun: dict, *, code: dict | None = None) -> dict:
    """``target`` with the rows of ``rerun`` it lacks added (a new dictionary; see the module).

    Raises :class:`RerunMismatch` when ``rerun`` ran another configuration, another corpus,
    torch build, thread count or CPU model (:func:`check_same_arithmetic`), a method outside
    :data:`MERGEABLE`, or when a row both hold differs in any perplexity; ``ValueError`` when
    either fails :func:`posviz.lab.results.validate_results`.
    """
    validate_results(target)
    validate_results(rerun)
    check_mergeable_config(rerun["config"], target)
    if rerun["data"]["sha256"] != target["data"]["sha256"]:
        raise RerunMismatch("the rerun's data differ from the file's (data.sha256)")
    check_same_arithmetic(rerun["machine"], target)
    lengths = target["eval_lengths"]
    shared = [m for m in rerun["method_order"] if m in target["methods"]]
    if "rope" not in shared:
        raise RerunMismatch("the file has no rope row to check the rerun against")
    for name in shared:
        problem = _first_difference(target["methods"][name], rerun["methods"][name], name, lengths)
        if problem is not None:
            raise RerunMismatch(f"the rerun does not reproduce the file: {problem}; nothing merged")
    new = [m for m in rerun["method_order"] if m not in target["methods"]]
    merged = copy.deepcopy(target)
    for name in new:
        merged["methods"][name] = copy.deepcopy(rerun["methods"][name])
    order = [m for m in ALL_METHODS if m in merged["methods"]]
    merged["method_order"] = order + [m for m in target["method_order"] if m not in order]
    merged["config"]["methods"] = [m for m in merged["method_order"] if m in merged["config"]["methods"] or m in new]
    if target.get("paired") is not None:
        merged["paired"] = paired_summary(merged, target["paired"]["baseline"])
        for name, entry in target["paired"]["methods"].items():
            if merged["paired"]["methods"][name] != entry:  # pragma: no cover - paired_summary is deterministic
                raise RerunMismatch(f"recomputed paired differences of {name} differ from the file's")
    record = {
        "rows": new,
        "verified_identical": shared,
        "command": rerun.get("command"),
        "code": code if code is not None else code_version(),
        "created_utc": rerun.get("created_utc"),
        "wall_seconds": rerun.get("wall_seconds"),
        "load_average_at_end": rerun.get("load_average_at_end"),
        "machine": rerun["machine"],
    }
    merged["reruns"] = [*target.get("reruns", []), record]
    validate_results(merged)
    return merged
