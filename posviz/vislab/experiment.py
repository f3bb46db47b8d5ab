r"""The protocol of the miniature: train at one grid, evaluate at several, the lab's rules.

* **Same start, same data.** With one seed every method starts from the same shared weights
  (:class:`posviz.vislab.model.TinyViT`) and sees the same training images in the same order (stream
  ``"train"`` of :func:`posviz.vislab.task.stream`, keyed by the seed).
* **Held-out and validation images** come from their own streams, the same for every method and
  seed: one validation set at the training grid, one held-out set per evaluation grid.
* **Learning rate of the position parameters chosen on validation** (``learned``, ``rope-mixed``,
  ``swin-bias``; the lab's :func:`posviz.lab.experiment.choose_multiplier`): with a grid of more than
  one multiplier, the first seed is trained once per multiplier and the one with the lowest
  validation loss at the training grid is kept for every seed (ties: the smaller). The larger grids
  never enter the choice; every grid point's held-out accuracies are recorded (``lr_search``).
* **Paired differences** of accuracy against the baseline (``none``), per seed
  (:func:`posviz.vislab.results.paired_summary`).

Optimisation is the lab's (:mod:`posviz.lab.train`): AdamW with the shared 2-D weights decayed and
the position parameters in their own group at :math:`\mu` times the warm-up + cosine schedule
(:func:`posviz.lab.train.make_optimizer`, :func:`~posviz.lab.train.lr_at`); the loss is the
cross-entropy of the four labels. Every training run is a job ``(method, seed, multiplier)`` whose
numbers depend on nothing else (single process, ``threads`` torch threads, deterministic
algorithms), so ``workers`` processes can run the jobs in any order and give the same numbers.
"""

from __future__ import annotations

import datetime as _dt
import os
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch
from torch.nn import functional as F

from ..lab.experiment import choose_multiplier
from ..lab.train import TrainConfig, deterministic, lr_at, make_optimizer, seed_everything, set_lr
from .config import VisConfig
from .model import TinyViT
from .positions import METHOD_KIND, POSITION_PARAMETERS
from .results import SCHEMA, SCHEMA_VERSION, aggregate, machine_info, paired_summary
from .task import make_examples, stream

__all__ = ["evaluate", "run_experiment", "train_one"]


@torch.no_grad()
def evaluate(model: TinyViT, tokens: torch.Tensor, labels: torch.Tensor, batch_size: int) -> tuple[float, float]:
    """``(accuracy, mean cross-entropy in nats)`` of ``model`` on ``tokens`` ``(n, H, W)``, ``labels`` ``(n,)``."""
    model.eval()
    correct, loss = 0, 0.0
    for i in range(0, len(labels), batch_size):
        logits = model(tokens[i : i + batch_size])
        y = labels[i : i + batch_size]
        correct += int((logits.argmax(-1) == y).sum())
        loss += float(F.cross_entropy(logits, y, reduction="sum"))
    return correct / len(labels), loss / len(labels)


def heldout_sets(cfg: VisConfig) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One held-out set per evaluation grid (ascending), each from its own stream."""
    return [make_examples(cfg.n_heldout, g, stream("heldout", g))[:2] for g in cfg.grids]


def validation_set(cfg: VisConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """The validation images, at the training grid."""
    return make_examples(cfg.n_validation, cfg.train_grid, stream("validation", cfg.train_grid))[:2]


def train_one(cfg: VisConfig, method: str, seed: int, mult: float | None) -> dict:
    """Train ``method`` with ``seed`` (position multiplier ``mult``; None: no position parameters),
    evaluate it at every grid; the per-seed record."""
    tcfg = TrainConfig(**{**cfg.train.to_dict(), "position_lr_mult": 1.0 if mult is None else mult})
    seed_everything(seed)
    model = TinyViT(cfg.vit_config(method), seed=seed)  # the same seed for every method: paired
    optimizer = make_optimizer(model, tcfg)  # type: ignore[arg-type]  # duck-typed: shared_parameters, position
    data = stream("train", seed)  # the same images for every method of this seed
    model.train()
    losses: list[float] = []
    start = time.perf_counter()
    for step in range(tcfg.steps):
        set_lr(optimizer, lr_at(step, tcfg))
        x, y, _, _ = make_examples(tcfg.batch_size, cfg.train_grid, data)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), tcfg.grad_clip)
        optimizer.step()
        losses.append(float(loss.detach()))
    seconds = time.perf_counter() - start
    val_acc, val_loss = evaluate(model, *validation_set(cfg), cfg.eval_batch_size)
    evals = [evaluate(model, x, y, cfg.eval_batch_size) for x, y in heldout_sets(cfg)]
    tail = max(1, tcfg.steps // 10)
    every = max(1, tcfg.steps // 50)
    return {
        "seed": seed,
        "position_lr_mult": mult,
        "accuracy": [a for a, _ in evals],
        "loss": [lo for _, lo in evals],
        "validation_accuracy": val_acc,
        "validation_loss": val_loss,
        "final_train_loss": sum(losses[-tail:]) / tail,
        "train_seconds": seconds,
        "params": model.num_params(),
        "loss_curve": {"step": list(range(every, tcfg.steps + 1, every)), "loss": losses[every - 1 :: every]},
    }


def _job(cfg: VisConfig, method: str, seed: int, mult: float | None) -> dict:
    """One training run with ``cfg.threads`` torch threads, deterministic algorithms and torch's global
    generator forked; the caller's thread count, switch and generator come back afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)
    try:
        with deterministic(), torch.random.fork_rng(devices=[]):
            return train_one(cfg, method, seed, mult)
    finally:
        torch.set_num_threads(threads)


class _Jobs:
    """Runs jobs in this process (``workers == 1``) or in a pool of spawned processes."""

    def __init__(self, cfg: VisConfig, progress: bool, total: int) -> None:
        from tqdm.auto import tqdm

        self.cfg = cfg
        self.pool = None
        if cfg.workers > 1:
            import multiprocessing

            self.pool = ProcessPoolExecutor(cfg.workers, mp_context=multiprocessing.get_context("spawn"))
        self.bar = tqdm(total=total, disable=not progress, unit="run", file=sys.stderr, mininterval=1.0)

    def run(self, jobs: list[tuple[str, int, float | None]]) -> list[dict]:
        if self.pool is None:
            out = []
            for job in jobs:
                self.bar.set_description(f"{job[0]} seed {job[1]}")
                out.append(_job(self.cfg, *job))
                self.bar.update(1)
            return out
        futures = [self.pool.submit(_job, self.cfg, *job) for job in jobs]
        out = []
        for f in futures:
            out.append(f.result())
            self.bar.update(1)
        return out

    def close(self) -> None:
        self.bar.close()
        if self.pool is not None:
            self.pool.shutdown()


def run_experiment(cfg: VisConfig, *, progress: bool = True) -> dict:
    """Train and evaluate every method for every seed; the results dictionary (:mod:`posviz.vislab`)."""
    started = time.perf_counter()
    machine = machine_info(torch.device("cpu"))
    machine["torch_threads"] = cfg.threads
    machine["workers"] = cfg.workers
    methods = cfg.reported_methods()
    searched = [m for m in methods if m in POSITION_PARAMETERS and len(cfg.position_lr_grid) > 1]
    first = cfg.seeds[0]
    # phase 1: the learning-rate search (first seed, every multiplier) beside every run that needs no choice
    phase1: list[tuple[str, int, float | None]] = [(m, first, g) for m in searched for g in cfg.position_lr_grid]
    fixed = {m: (cfg.position_lr_grid[0] if m in POSITION_PARAMETERS else None) for m in methods if m not in searched}
    phase1 += [(m, s, fixed[m]) for m in fixed for s in cfg.seeds]
    total = len(phase1) + len(searched) * (len(cfg.seeds) - 1)
    jobs = _Jobs(cfg, progress, total)
    try:
        records = dict(zip(phase1, jobs.run(phase1)))
        chosen: dict[str, float | None] = dict(fixed)
        search: dict[str, list[dict]] = {}
        for m in searched:
            points = [records[(m, first, g)] for g in cfg.position_lr_grid]
            search[m] = [
                {k: p[k] for k in ("position_lr_mult", "seed", "validation_loss", "validation_accuracy", "accuracy")}
                for p in points
            ]
            chosen[m] = choose_multiplier(search[m])
        phase2 = [(m, s, chosen[m]) for m in searched for s in cfg.seeds[1:]]
        records.update(zip(phase2, jobs.run(phase2)))
    finally:
        jobs.close()
    out_methods = {}
    for m in methods:
        seeds = [records[(m, s, chosen[m])] for s in cfg.seeds]
        out_methods[m] = {
            "kind": METHOD_KIND[m],
            "params": seeds[0]["params"],
            "position_lr_mult": chosen[m],
            "lr_search": search.get(m, []),
            "seeds": seeds,
            "aggregate": aggregate(seeds),
        }
    results = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": _command(),
        "code": _code(),
        "config": cfg.to_dict(),
        "machine": machine,
        "train_grid": cfg.train_grid,
        "eval_grids": cfg.grids,
        "method_order": methods,
        "methods": out_methods,
    }
    results["paired"] = paired_summary(results, cfg.baseline) if cfg.baseline in out_methods else None
    results["wall_seconds"] = time.perf_counter() - started
    try:
        results["load_average_at_end"] = list(os.getloadavg())
    except OSError:  # pragma: no cover - not POSIX
        results["load_average_at_end"] = None
    return results


def _command() -> list[str]:
    argv = list(sys.argv)
    if argv and argv[0].endswith(("posviz/vislab/__main__.py", "posviz\\vislab\\__main__.py")):
        argv[0:1] = ["python", "-m", "posviz.vislab"]
    return argv


def _code() -> dict:
    """The git commit the run's code came from and the paths that differed from it (None outside a checkout)."""
    root = Path(__file__).resolve().parents[2]

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--", "posviz") or ""
    dirty = sorted(line[3:] for line in status.splitlines() if line.strip())
    return {"git_commit": commit.strip() if commit else None, "dirty_paths": dirty}
