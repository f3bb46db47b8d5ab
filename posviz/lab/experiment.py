r"""The whole comparison: for each method and seed, train at one length, evaluate at several.

:func:`run_experiment` returns the results dictionary documented in :mod:`posviz.lab`; the
configuration and its presets live in :mod:`posviz.lab.config` (re-exported here).

The protocol:

* **Same start, same batches.** With one seed every method gets the same token embedding,
  blocks and batch order (:class:`posviz.lab.model.GPT`, :func:`posviz.lab.train.train`).
* **Learning rate of the position parameters chosen on validation.** For a method with position
  parameters (``learned``, ``shaw``, ``t5``) and a grid ``position_lr_grid`` of more than one
  value, the first seed is trained once per multiplier :math:`\mu` and the multiplier with the
  lowest validation loss *at the training length* is kept for every seed (ties: the smaller;
  :func:`choose_multiplier`).
  Neither the held-out text nor the longer lengths enter the choice. The held-out numbers of
  every grid point are recorded too (``lr_search``), to show how much each conclusion depends on
  the choice. Methods without position parameters have nothing to choose.
* **Paired differences.** Per seed, each method's perplexity minus the baseline's (``none``) at
  every length (:func:`posviz.lab.results.paired_differences`), stored under ``paired``.

How the run executes (processes, bf16, SDPA, compile: :mod:`posviz.lab.distributed`) is recorded
in ``config`` (``world_size``, ``precision``, ``attention``, ``compile``) and does not change what
is computed beyond floating-point rounding. Presets (:data:`PRESETS`): ``full`` (the published
run), ``quick`` and ``gpu`` (one modern GPU, about 10 minutes: an estimate, not measured).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as _dt
import os
import sys
import time
from pathlib import Path

import torch

from .config import (
    POSITION_PARAMETERS,
    PRESETS,
    RUNTIME_FIELDS,
    LabConfig,
    check_corpus,
    check_publishable,
    full_config,
    gpu_config,
    quick_config,
)
from .data import Corpus, load_corpus, load_file_corpus, scored_tokens, training_overlap, validation_overlap
from .distributed import Runtime
from .evaluate import evaluate, mean_loss
from .memory import MEMORY_NOTE, inference_memory_many, training_memory
from .model import GPT, METHOD_KIND, METHODS, ROPE_VARIANTS
from .positions_round3 import RANDOM_RANGE_FACTOR
from .results import SCHEMA, SCHEMA_VERSION, machine_info, paired_summary, summarize, summarize_lists
from .train import TrainConfig, deterministic, seed_everything, train

__all__ = [
    "POSITION_PARAMETERS",
    "PRESETS",
    "RUNTIME_FIELDS",
    "LabConfig",
    "check_corpus",
    "check_publishable",
    "choose_multiplier",
    "full_config",
    "gpu_config",
    "quick_config",
    "run_experiment",
]


def choose_multiplier(search: list[dict]) -> float:
    """The position learning-rate multiplier of the grid point with the lowest ``validation_loss``
    (the loss on the validation text at the training length); a tie goes to the smaller multiplier.
    ``search``: one ``{"position_lr_mult", "validation_loss", ...}`` per grid point (``lr_search``)."""
    if not search:
        raise ValueError("search must hold at least one grid point")
    return min(search, key=lambda p: (p["validation_loss"], p["position_lr_mult"]))["position_lr_mult"]


def _eval_record(evals: list) -> dict:
    return {
        "loss": [e.loss for e in evals],
        "perplexity": [e.perplexity for e in evals],
        "inference_tokens_per_s": [e.tokens_per_s for e in evals],
        "inference_tokens_per_cpu_s": [e.tokens_per_cpu_s for e in evals],
        "cannot_run": [e.cannot_run for e in evals],
    }


TRAINED_KEYS = (
    "final_train_loss",
    "train_tokens_per_s",
    "train_tokens_per_s_mean",
    "train_tokens_per_cpu_s",
    "train_seconds",
    "validation_loss",
)


def _aggregate(seeds: list[dict], trained: bool) -> dict:
    per_length = ("perplexity", "loss", "inference_tokens_per_s", "inference_tokens_per_cpu_s")
    agg = {key: summarize_lists([s[key] for s in seeds]) for key in per_length}
    if trained:
        for key in TRAINED_KEYS:
            agg[key] = summarize([s[key] for s in seeds])
    return agg


def _curve(tr) -> dict:
    at = [step - 1 for step in tr.curve_steps]  # the logged steps, 0-based
    return {
        "step": tr.curve_steps,
        "loss": tr.curve_loss,
        "lr": [tr.step_lr[i] for i in at],
        "grad_norm": [tr.step_grad_norm[i] for i in at],
    }


def run_experiment(
    cfg: LabConfig, *, progress: bool = True, runtime: Runtime | None = None, resume: bool = False
) -> dict:
    """Train and evaluate every requested method for every seed; return the results dictionary.

    ``runtime``: this process's place in a process group (:func:`posviz.lab.distributed.init_distributed`;
    default: one process on ``cfg.device``); its ``world_size`` must be ``cfg.world_size``. Precision,
    attention and compile come from ``cfg``. Every rank returns the same results; only rank 0 shows
    progress. ``resume``: go on from the training states under ``cfg.checkpoint_dir``/state
    (:func:`posviz.lab.train.train`); finished runs are loaded and evaluated again, not retrained.
    Raises ``ValueError`` before training when the corpus cannot serve ``cfg`` (:func:`check_corpus`).

    Global state comes back as it was: deterministic algorithms are on only during the run, and
    torch's global random generator (CPU, and the run's GPU) is restored afterwards.
    """
    base = runtime if runtime is not None else Runtime(device=torch.device(cfg.device))
    if base.world_size != cfg.world_size:
        raise ValueError(f"cfg.world_size={cfg.world_size} but the process group has {base.world_size} processes")
    rt = dataclasses.replace(base, precision=cfg.precision, attention=cfg.attention, compile=cfg.compile)
    gpus = [rt.device.index or 0] if rt.device.type == "cuda" else []
    with deterministic(), torch.random.fork_rng(devices=gpus):
        return _Run(cfg, rt, progress=progress, resume=resume).results()


def _state_path(cfg: LabConfig, name: str, seed: int, mult: float | None) -> Path | None:
    if not cfg.checkpoint_every or cfg.checkpoint_dir is None:
        return None
    return Path(cfg.checkpoint_dir) / "state" / f"{name}-seed{seed}-lr{1.0 if mult is None else mult:g}.pt"


def load_data(cfg: LabConfig) -> Corpus:
    """The run's corpus (``cfg.corpus`` or the pydoc topics), checked against ``cfg`` (:func:`check_corpus`)."""
    corpus = load_file_corpus(cfg.corpus) if cfg.corpus is not None else load_corpus()
    check_corpus(corpus, cfg)
    return corpus


class _Run:
    """One call of :func:`run_experiment`: the data, the progress bar, and one method at a time."""

    def __init__(self, cfg: LabConfig, rt: Runtime, *, progress: bool, resume: bool) -> None:
        self.cfg, self.rt, self.resume = cfg, rt, resume
        self.started = time.perf_counter()
        self.machine = machine_info(rt.device)  # includes the load average now, at the start
        self.machine["world_size"] = rt.world_size
        self.machine["distributed_backend"] = rt.backend
        self.corpus = load_data(cfg)
        self.lengths = cfg.eval_lengths
        self.reported = cfg.reported_methods()
        self.trained = [m for m in METHODS if m in self.reported]
        self.variants = [m for m in self.reported if m in ROPE_VARIANTS]
        self.val_x, self.val_y = self.corpus.validation_windows(cfg.train_len, cfg.validation_max_tokens)
        self.starts = self.corpus.train_starts(cfg.train_len)
        self.searched = {m for m in self.trained if m in POSITION_PARAMETERS and len(cfg.position_lr_grid) > 1}
        self.bar = self._progress_bar(progress)

    def data_record(self) -> dict:
        cfg, corpus = self.cfg, self.corpus
        data = dict(corpus.info)
        data["eval_scored_tokens"] = scored_tokens(
            corpus.info["n_heldout_tokens"], max(self.lengths), cfg.eval_max_tokens
        )
        data["overlap"] = {
            **data["overlap"],
            **training_overlap(corpus, cfg.train_len),
            **validation_overlap(corpus, cfg.train_len, cfg.validation_max_tokens),
        }
        data["validation_scored_tokens"] = int(self.val_y.numel())
        return data

    def _progress_bar(self, progress: bool):
        from tqdm.auto import tqdm

        cfg = self.cfg
        n_variants = len(self.variants)

        def runs(m: str) -> int:
            return len(cfg.seeds) + (len(cfg.position_lr_grid) - 1 if m in self.searched else 0)

        per_run = {
            m: cfg.train.steps + len(self.lengths) * (1 + (n_variants if m == "rope" else 0)) for m in self.trained
        }
        interactive = sys.stderr.isatty()
        return tqdm(
            total=sum(per_run[m] * runs(m) for m in self.trained),
            disable=not (progress and self.rt.is_main),
            unit="step",
            dynamic_ncols=True,
            file=sys.stderr,
            mininterval=0.1 if interactive else 10.0,
        )

    def _on_step(self, step: int, loss: float) -> None:
        self.bar.update(1)
        if step % 10 == 0:
            self.bar.set_postfix(loss=f"{loss:.3f}")

    def _evaluate(self, model: GPT) -> dict:
        cfg = self.cfg
        evals = evaluate(
            model, self.corpus.heldout, self.lengths, cfg.eval_tokens_per_batch, cfg.eval_max_tokens, self.rt
        )
        self.bar.update(len(self.lengths))
        return _eval_record(evals)

    def train_one(self, name: str, seed: int, mult: float | None) -> tuple[GPT, dict]:
        """Train ``name`` with ``seed`` (position multiplier ``mult``), evaluate it; the model and its record."""
        cfg, rt = self.cfg, self.rt
        tcfg = TrainConfig(**{**cfg.train.to_dict(), "position_lr_mult": 1.0 if mult is None else mult})
        seed_everything(seed)
        model = GPT(cfg.gpt_config(name), seed=seed).to(rt.device)  # the same seed for every method: paired
        model.set_attention(cfg.attention)
        tr = train(
            model,
            self.corpus.train,
            tcfg,
            seed,
            starts=self.starts,
            on_step=self._on_step,
            runtime=rt,
            state_path=_state_path(cfg, name, seed, mult),
            checkpoint_every=cfg.checkpoint_every,
            resume=self.resume and cfg.checkpoint_every > 0,
        )
        self.bar.set_description(f"{name} seed {seed}: eval")
        evals = self._evaluate(model)
        record = {
            "seed": seed,
            "position_lr_mult": mult,
            "validation_loss": mean_loss(model, self.val_x, self.val_y, cfg.eval_tokens_per_batch, rt),
            "final_train_loss": tr.final_loss,
            "train_seconds": tr.seconds,
            "train_tokens_per_s": tr.tokens_per_s,
            "train_tokens_per_s_mean": tr.tokens_per_s_mean,
            "train_tokens_per_cpu_s": tr.tokens_per_cpu_s,
            "loss_curve": _curve(tr),
            **evals,
        }
        return model, record

    def memory(self, name: str) -> tuple[dict, dict]:
        """Per reported name (``name`` and, for rope, its variants): ``{"memory", "seeds": []}``; and
        the model's ``params`` and attention backend."""
        cfg, rt = self.cfg, self.rt
        self.bar.set_description(f"{name}: memory")
        seed_everything(cfg.seeds[0])
        probe = GPT(cfg.gpt_config(name), seed=cfg.seeds[0]).to(rt.device)
        facts = {"params": probe.num_params(), "attention": probe.set_attention(cfg.attention)}
        memory = {
            "what": MEMORY_NOTE,
            "train": training_memory(copy.deepcopy(probe), cfg.train, self.corpus.train, runtime=rt),
            "inference_peak_bytes": inference_memory_many(probe, self.lengths, cfg.eval_tokens_per_batch, rt),
        }
        entries = {name: {"memory": memory, "seeds": []}}
        for v in self.variants if name == "rope" else []:
            probe.set_rope_scaling(ROPE_VARIANTS[v])
            peaks = inference_memory_many(probe, self.lengths, cfg.eval_tokens_per_batch, rt)
            entries[v] = {"memory": {"what": MEMORY_NOTE, "train": None, "inference_peak_bytes": peaks}, "seeds": []}
        return entries, facts

    def search(self, name: str) -> tuple[float | None, list[dict], dict[int, tuple[GPT, dict]]]:
        """The learning-rate search of one method on the first seed: the chosen multiplier (None: no
        position parameters), every grid point's record, and the chosen run (reused as the first seed's)."""
        cfg = self.cfg
        if name not in POSITION_PARAMETERS:
            return None, [], {}
        if name not in self.searched:
            return cfg.position_lr_grid[0], [], {}
        first = cfg.seeds[0]
        candidates, search = {}, []
        for mult in cfg.position_lr_grid:
            self.bar.set_description(f"{name} seed {first} lr x{mult:g}")
            model, record = self.train_one(name, first, mult)
            candidates[mult] = (model, record)
            keys = ("validation_loss", "final_train_loss", "perplexity")
            search.append({"position_lr_mult": mult, "seed": first, **{k: record[k] for k in keys}})
        chosen = choose_multiplier(search)
        return chosen, search, {first: candidates[chosen]}

    def method(self, name: str) -> dict[str, dict]:
        """Every seed of one trained method (and of its RoPE variants): the ``methods`` entries."""
        cfg = self.cfg
        entries, facts = self.memory(name)
        chosen, search, done = self.search(name)
        for seed in cfg.seeds:
            if seed not in done:
                self.bar.set_description(f"{name} seed {seed}")
                done[seed] = self.train_one(name, seed, chosen)
            model, record = done.pop(seed)
            entries[name]["seeds"].append(record)
            for v in self.variants if name == "rope" else []:
                model.set_rope_scaling(ROPE_VARIANTS[v])
                entries[v]["seeds"].append({"seed": seed, **self._evaluate(model)})
                model.set_rope_scaling("none")
            if cfg.checkpoint_dir is not None and self.rt.is_main:
                from .checkpoint import save_checkpoint

                save_checkpoint(model, Path(cfg.checkpoint_dir) / f"{name}-seed{seed}.pt")
        return {
            key: {
                "kind": METHOD_KIND[key],
                "trained_as": name,
                "rope_scaling": ROPE_VARIANTS.get(key),
                **facts,
                "max_length": {"learned": 1, "learned-random": RANDOM_RANGE_FACTOR}.get(key, 0) * cfg.train_len or None,
                "position_lr_mult": chosen,
                "lr_search": search if key == name else [],
                **entry,
                "aggregate": _aggregate(entry["seeds"], trained=key == name),
            }
            for key, entry in entries.items()
        }

    def results(self) -> dict:
        cfg = self.cfg
        data = self.data_record()
        methods: dict[str, dict] = {}
        for name in self.trained:
            methods.update(self.method(name))
        self.bar.close()
        results = {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "command": _command(),
            "config": cfg.to_dict(),
            "data": data,
            "machine": self.machine,
            "train_len": cfg.train_len,
            "eval_lengths": self.lengths,
            "method_order": [m for m in self.reported if m in methods],
            "methods": methods,
        }
        results["paired"] = paired_summary(results, cfg.baseline) if cfg.baseline in methods else None
        results["wall_seconds"] = time.perf_counter() - self.started
        results["load_average_at_end"] = _loadavg()
        return results


def _command() -> list[str]:
    argv = list(sys.argv)
    if argv and argv[0].endswith(("posviz/lab/__main__.py", "posviz\\lab\\__main__.py")):
        argv[0:1] = ["python", "-m", "posviz.lab"]
    return argv


def _loadavg() -> list[float] | None:
    try:
        return list(os.getloadavg())
    except (AttributeError, OSError):  # pragma: no cover - not POSIX
        return None
