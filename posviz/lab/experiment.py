"""The whole comparison: for each method and seed, train at one length, evaluate at several.

:func:`run_experiment` returns the results dictionary documented in :mod:`posviz.lab`;
:func:`quick_config` and :func:`full_config` are the CLI's two presets.
"""

from __future__ import annotations

import copy
import datetime as _dt
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from .data import load_corpus, scored_tokens
from .evaluate import evaluate
from .memory import MEMORY_NOTE, inference_memory, training_memory
from .model import ALL_METHODS, GPT, METHOD_KIND, METHODS, ROPE_VARIANTS, GPTConfig
from .results import SCHEMA, SCHEMA_VERSION, machine_info, summarize, summarize_lists
from .train import TrainConfig, seed_everything, train

__all__ = ["LabConfig", "full_config", "quick_config", "run_experiment"]


@dataclass
class LabConfig:
    """Everything one run of the lab depends on (recorded in the results under ``config``)."""

    methods: list[str] = field(default_factory=lambda: list(ALL_METHODS))
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    train_len: int = 64
    eval_multipliers: list[int] = field(default_factory=lambda: [1, 2, 4, 8, 16])
    model: dict = field(default_factory=lambda: {"n_layer": 3, "n_head": 4, "n_embd": 128})  # GPTConfig fields
    train: TrainConfig = field(default_factory=TrainConfig)
    eval_tokens_per_batch: int = 1024
    eval_max_tokens: int | None = None  # cap on scored held-out tokens (None: all)
    device: str = "cpu"
    mode: str = "full"
    checkpoint_dir: str | None = None  # save each trained model's state_dict here

    def __post_init__(self) -> None:
        unknown = [m for m in self.methods if m not in ALL_METHODS]
        if unknown:
            raise ValueError(f"unknown method(s) {unknown}; choose from {list(ALL_METHODS)}")
        if not self.methods:
            raise ValueError("methods must not be empty")
        if not self.seeds:
            raise ValueError("seeds must not be empty")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be distinct, got {self.seeds}")
        if self.train_len < 2:
            raise ValueError(f"train_len must be >= 2, got {self.train_len}")
        if not self.eval_multipliers or any(k < 1 for k in self.eval_multipliers):
            raise ValueError(f"eval_multipliers must be positive integers, got {self.eval_multipliers}")
        largest = max(self.eval_multipliers)
        if any(largest % k for k in self.eval_multipliers):
            raise ValueError(f"every eval multiplier must divide the largest ({largest}), got {self.eval_multipliers}")

    @property
    def eval_lengths(self) -> list[int]:
        return [self.train_len * k for k in sorted(self.eval_multipliers)]

    def reported_methods(self) -> list[str]:
        """Requested methods in canonical order; a RoPE variant brings in ``rope`` (it is evaluated on it)."""
        wanted = set(self.methods)
        if wanted & set(ROPE_VARIANTS):
            wanted.add("rope")
        return [m for m in ALL_METHODS if m in wanted]

    def gpt_config(self, method: str) -> GPTConfig:
        return GPTConfig(method=method, block_size=self.train_len, **self.model)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["model"] = {k: v for k, v in self.gpt_config("none").to_dict().items() if k != "method"}
        d["eval_lengths"] = self.eval_lengths
        return d


def full_config(**overrides: object) -> LabConfig:
    """The default run: d=128, 3 layers, 4 heads, 400 steps of 32 x 64 tokens, 3 seeds, every method."""
    base: dict = {"train": TrainConfig(steps=400, warmup_steps=40), "mode": "full"}
    base.update(overrides)
    return LabConfig(**base)


def quick_config(**overrides: object) -> LabConfig:
    """About two minutes on two CPU cores: d=64, 2 layers, 250 steps, 2 seeds, every method, 16k held-out tokens."""
    base: dict = {
        "seeds": [0, 1],
        "model": {"n_layer": 2, "n_head": 4, "n_embd": 64},
        "train": TrainConfig(steps=250, warmup_steps=25),
        "eval_max_tokens": 16384,
        "mode": "quick",
    }
    base.update(overrides)
    return LabConfig(**base)


def _eval_record(evals: list) -> dict:
    return {
        "loss": [e.loss for e in evals],
        "perplexity": [e.perplexity for e in evals],
        "inference_tokens_per_s": [e.tokens_per_s for e in evals],
        "inference_tokens_per_cpu_s": [e.tokens_per_cpu_s for e in evals],
        "cannot_run": [e.cannot_run for e in evals],
    }


def _aggregate(seeds: list[dict], trained: bool) -> dict:
    per_length = ("perplexity", "loss", "inference_tokens_per_s", "inference_tokens_per_cpu_s")
    agg = {key: summarize_lists([s[key] for s in seeds]) for key in per_length}
    if trained:
        for key in (
            "final_train_loss",
            "train_tokens_per_s",
            "train_tokens_per_s_mean",
            "train_tokens_per_cpu_s",
            "train_seconds",
        ):
            agg[key] = summarize([s[key] for s in seeds])
    return agg


def run_experiment(cfg: LabConfig, *, progress: bool = True) -> dict:
    """Train and evaluate every requested method for every seed; return the results dictionary."""
    from tqdm.auto import tqdm

    started = time.perf_counter()
    device = torch.device(cfg.device)
    machine = machine_info(device)  # includes the load average now, at the start
    corpus = load_corpus()
    lengths = cfg.eval_lengths
    reported = cfg.reported_methods()
    trained = [m for m in METHODS if m in reported]
    variants = [m for m in reported if m in ROPE_VARIANTS]
    data = dict(corpus.info)
    data["eval_scored_tokens"] = scored_tokens(corpus.info["n_heldout_tokens"], max(lengths), cfg.eval_max_tokens)
    if data["eval_scored_tokens"] == 0:
        raise ValueError(f"the held-out split is shorter than the longest evaluation length {max(lengths)}")

    per_run = {m: cfg.train.steps + len(lengths) * (1 + (len(variants) if m == "rope" else 0)) for m in trained}
    interactive = sys.stderr.isatty()
    bar = tqdm(
        total=sum(per_run.values()) * len(cfg.seeds),
        disable=not progress,
        unit="step",
        dynamic_ncols=True,
        file=sys.stderr,
        mininterval=0.1 if interactive else 10.0,
    )
    methods: dict[str, dict] = {}
    for name in trained:
        gcfg = cfg.gpt_config(name)
        bar.set_description(f"{name}: memory")
        seed_everything(cfg.seeds[0])
        probe = GPT(gcfg).to(device)
        params = probe.num_params()
        memory = {
            "what": MEMORY_NOTE,
            "train": training_memory(copy.deepcopy(probe), cfg.train, corpus.train),
            "inference_peak_bytes": [inference_memory(probe, n, cfg.eval_tokens_per_batch) for n in lengths],
        }
        entries = {name: {"memory": memory, "seeds": []}}
        for v in variants if name == "rope" else []:
            probe.set_rope_scaling(ROPE_VARIANTS[v])
            entries[v] = {
                "memory": {
                    "what": MEMORY_NOTE,
                    "train": None,
                    "inference_peak_bytes": [inference_memory(probe, n, cfg.eval_tokens_per_batch) for n in lengths],
                },
                "seeds": [],
            }
        del probe

        for seed in cfg.seeds:
            bar.set_description(f"{name} seed {seed}")
            seed_everything(seed)
            model = GPT(gcfg).to(device)

            def on_step(step: int, loss: float) -> None:
                bar.update(1)
                if step % 10 == 0:
                    bar.set_postfix(loss=f"{loss:.3f}")

            tr = train(model, corpus.train, cfg.train, seed, on_step=on_step)
            bar.set_description(f"{name} seed {seed}: eval")
            evals = evaluate(model, corpus.heldout, lengths, cfg.eval_tokens_per_batch, cfg.eval_max_tokens)
            bar.update(len(lengths))
            entries[name]["seeds"].append(
                {
                    "seed": seed,
                    "final_train_loss": tr.final_loss,
                    "train_seconds": tr.seconds,
                    "train_tokens_per_s": tr.tokens_per_s,
                    "train_tokens_per_s_mean": tr.tokens_per_s_mean,
                    "train_tokens_per_cpu_s": tr.tokens_per_cpu_s,
                    "loss_curve": {"step": tr.curve_steps, "loss": tr.curve_loss},
                    **_eval_record(evals),
                }
            )
            for v in variants if name == "rope" else []:
                model.set_rope_scaling(ROPE_VARIANTS[v])
                evals = evaluate(model, corpus.heldout, lengths, cfg.eval_tokens_per_batch, cfg.eval_max_tokens)
                bar.update(len(lengths))
                entries[v]["seeds"].append({"seed": seed, **_eval_record(evals)})
                model.set_rope_scaling("none")
            if cfg.checkpoint_dir is not None:
                from .checkpoint import save_checkpoint

                save_checkpoint(model, Path(cfg.checkpoint_dir) / f"{name}-seed{seed}.pt")
        for key, entry in entries.items():
            methods[key] = {
                "kind": METHOD_KIND[key],
                "trained_as": name,
                "rope_scaling": ROPE_VARIANTS.get(key),
                "params": params,
                "max_length": cfg.train_len if key == "learned" else None,
                **entry,
                "aggregate": _aggregate(entry["seeds"], trained=key == name),
            }
    bar.close()
    order = [m for m in reported if m in methods]
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": _command(),
        "config": cfg.to_dict(),
        "data": data,
        "machine": machine,
        "train_len": cfg.train_len,
        "eval_lengths": lengths,
        "method_order": order,
        "methods": methods,
        "wall_seconds": time.perf_counter() - started,
        "load_average_at_end": _loadavg(),
    }


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
