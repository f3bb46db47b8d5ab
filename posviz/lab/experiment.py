r"""The whole comparison: for each method and seed, train at one length, evaluate at several.

:func:`run_experiment` returns the results dictionary documented in :mod:`posviz.lab`;
:func:`quick_config` and :func:`full_config` are the CLI's two presets.

The protocol:

* **Same start, same batches.** With one seed every method gets the same token embedding,
  blocks and batch order (:class:`posviz.lab.model.GPT`, :func:`posviz.lab.train.train`).
* **Learning rate of the position parameters chosen on validation.** For a method with position
  parameters (``learned``, ``shaw``, ``t5``) and a grid ``position_lr_grid`` of more than one
  value, the first seed is trained once per multiplier :math:`\mu` and the multiplier with the
  lowest validation loss *at the training length* is kept for every seed (ties: the smaller).
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
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from .data import load_corpus, load_file_corpus, scored_tokens, validation_overlap
from .distributed import ATTENTIONS, PRECISIONS, Runtime
from .evaluate import evaluate, mean_loss
from .memory import MEMORY_NOTE, inference_memory_many, training_memory
from .model import ALL_METHODS, GPT, METHOD_KIND, METHODS, ROPE_VARIANTS, GPTConfig
from .results import SCHEMA, SCHEMA_VERSION, machine_info, paired_summary, summarize, summarize_lists
from .train import TrainConfig, deterministic, seed_everything, train

__all__ = ["PRESETS", "LabConfig", "check_publishable", "full_config", "gpu_config", "quick_config", "run_experiment"]

POSITION_PARAMETERS = ("learned", "shaw", "t5")
"""Methods whose position module has trainable parameters (their learning rate is chosen on validation)."""


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
    validation_max_tokens: int | None = None  # cap on scored validation tokens (None: all)
    position_lr_grid: list[float] = field(default_factory=lambda: [1.0, 10.0, 30.0, 100.0])
    baseline: str = "none"  # paired differences are taken against this method
    device: str = "cpu"
    mode: str = "full"  # the preset: "full", "quick", "gpu" (or anything for a hand-made config)
    checkpoint_dir: str | None = None  # save each trained model's state_dict here
    corpus: str | None = None  # a UTF-8 text file (None: the pydoc topics)
    world_size: int = 1  # processes (torchrun); each trains on batch_size / world_size windows
    precision: str = "fp32"  # "fp32" or "bf16" (autocast)
    attention: str = "posviz"  # "posviz" (posviz.attention) or "sdpa" (where the method allows)
    compile: bool = False  # torch.compile the training forward
    checkpoint_every: int = 0  # save the training state every N steps under checkpoint_dir/state (0: never)

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
        if not self.position_lr_grid or any(not (v > 0) for v in self.position_lr_grid):
            raise ValueError(f"position_lr_grid must hold positive numbers, got {self.position_lr_grid}")
        if 1 not in self.eval_multipliers:
            raise ValueError(f"eval_multipliers must include 1 (the training length), got {self.eval_multipliers}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"--precision must be one of {PRECISIONS}, got {self.precision!r}")
        if self.attention not in ATTENTIONS:
            raise ValueError(f"--attention must be one of {ATTENTIONS}, got {self.attention!r}")
        if self.world_size < 1 or self.train.batch_size % self.world_size:
            raise ValueError(
                f"--batch-size {self.train.batch_size} must be divisible by the number of processes "
                f"(torchrun --nproc_per_node x --nnodes = {self.world_size})"
            )
        if self.checkpoint_every < 0:
            raise ValueError(f"--checkpoint-every must be >= 0 (0: never), got {self.checkpoint_every}")
        if self.checkpoint_every and self.checkpoint_dir is None:
            raise ValueError("checkpoint_every needs a checkpoint_dir")
        self.gpt_config("none")  # model sizes: ValueError naming --heads / --d-model

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
    """The default run: d=128, 3 layers, 4 heads, 400 steps of 32 x 64 tokens, 3 seeds, every method,
    position learning-rate multiplier chosen from 1, 10, 30, 100 on validation."""
    base: dict = {"train": TrainConfig(steps=400, warmup_steps=40), "mode": "full"}
    base.update(overrides)
    return LabConfig(**base)


def quick_config(**overrides: object) -> LabConfig:
    """94 s of CPU time on one thread (measured; see ``posviz.lab.cli``): trained at 32 bytes and
    evaluated at 32-512 (16x), d=64, 2 layers, 170 steps of 16 windows at a higher learning rate (6e-3),
    2 seeds, every method, 4k held-out tokens, and no learning-rate search (position multiplier fixed
    at 10). The orderings the chapter discusses (learned cannot run, sinusoidal and RoPE degrade with
    length, ALiBi and Shaw stay flat, NTK-aware scaling beats PI) come out as in the full run; the perplexities are
    higher (a far smaller model and shorter training)."""
    base: dict = {
        "seeds": [0, 1],
        "train_len": 32,
        "model": {"n_layer": 2, "n_head": 4, "n_embd": 64},
        "train": TrainConfig(steps=170, warmup_steps=17, batch_size=16, lr=6e-3),
        "eval_max_tokens": 4096,
        "validation_max_tokens": 2048,
        "position_lr_grid": [10.0],
        "mode": "quick",
    }
    base.update(overrides)
    return LabConfig(**base)


def gpu_config(**overrides: object) -> LabConfig:
    """Sized for one modern GPU in about 10 minutes (an estimate: no GPU was at hand to measure it):
    trained at 256 bytes, evaluated at 256-4096, d=384, 6 layers, 6 heads (10.7M parameters), 2000 steps
    of 64 windows, one seed, every method, all held-out text, bf16 and SDPA on CUDA (set by the CLI)."""
    base: dict = {
        "seeds": [0],
        "train_len": 256,
        "model": {"n_layer": 6, "n_head": 6, "n_embd": 384},
        "train": TrainConfig(steps=2000, warmup_steps=200, batch_size=64, lr=1e-3),
        "eval_tokens_per_batch": 16384,
        "eval_max_tokens": None,
        "validation_max_tokens": 65536,
        "position_lr_grid": [10.0],
        "mode": "gpu",
    }
    base.update(overrides)
    return LabConfig(**base)


PRESETS: dict[str, Callable[..., LabConfig]] = {"full": full_config, "quick": quick_config, "gpu": gpu_config}
"""``--preset NAME``: the configuration functions by name (``--quick`` is ``--preset quick``)."""

RUNTIME_FIELDS = ("device", "checkpoint_dir", "world_size", "precision", "attention", "compile", "checkpoint_every")
"""How a run executes, not what it computes: free to differ from the full configuration when publishing."""


def check_publishable(cfg: LabConfig) -> None:
    """Raise ``ValueError`` naming every setting in which ``cfg`` differs from :func:`full_config`
    (only how it runs, :data:`RUNTIME_FIELDS`, may differ): only the full run is published."""
    mine = cfg.to_dict()
    full = full_config(**{k: getattr(cfg, k) for k in RUNTIME_FIELDS}).to_dict()
    differ = sorted(k for k in full.keys() | mine.keys() if mine.get(k) != full.get(k))
    if differ:
        raise ValueError(
            "--publish takes the full configuration only; this run differs in "
            + ", ".join(f"{k} ({mine.get(k)!r} instead of {full.get(k)!r})" for k in differ)
        )


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
            "validation_loss",
        ):
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

    Global state comes back as it was: deterministic algorithms are on only during the run, and
    torch's global random generator (CPU, and the run's GPU) is restored afterwards.
    """
    base = runtime if runtime is not None else Runtime(device=torch.device(cfg.device))
    if base.world_size != cfg.world_size:
        raise ValueError(f"cfg.world_size={cfg.world_size} but the process group has {base.world_size} processes")
    rt = dataclasses.replace(base, precision=cfg.precision, attention=cfg.attention, compile=cfg.compile)
    gpus = [rt.device.index or 0] if rt.device.type == "cuda" else []
    with deterministic(), torch.random.fork_rng(devices=gpus):
        return _run_experiment(cfg, progress=progress, rt=rt, resume=resume)


def _state_path(cfg: LabConfig, name: str, seed: int, mult: float | None) -> Path | None:
    if not cfg.checkpoint_every or cfg.checkpoint_dir is None:
        return None
    return Path(cfg.checkpoint_dir) / "state" / f"{name}-seed{seed}-lr{1.0 if mult is None else mult:g}.pt"


def _run_experiment(cfg: LabConfig, *, progress: bool, rt: Runtime, resume: bool) -> dict:
    from tqdm.auto import tqdm

    started = time.perf_counter()
    device = rt.device
    machine = machine_info(device)  # includes the load average now, at the start
    machine["world_size"] = rt.world_size
    machine["distributed_backend"] = rt.backend
    corpus = load_file_corpus(cfg.corpus) if cfg.corpus is not None else load_corpus()
    lengths = cfg.eval_lengths
    reported = cfg.reported_methods()
    trained = [m for m in METHODS if m in reported]
    variants = [m for m in reported if m in ROPE_VARIANTS]
    data = dict(corpus.info)
    data["eval_scored_tokens"] = scored_tokens(corpus.info["n_heldout_tokens"], max(lengths), cfg.eval_max_tokens)
    if data["eval_scored_tokens"] == 0:
        raise ValueError(
            f"the held-out split ({corpus.info['n_heldout_tokens']} bytes) is shorter than the longest evaluation "
            f"length {max(lengths)} (--train-len x the largest --eval-multipliers): use a larger --corpus or "
            "shorter lengths"
        )
    data["overlap"] = {**data["overlap"], **validation_overlap(corpus, cfg.train_len, cfg.validation_max_tokens)}
    val_x, val_y = corpus.validation_windows(cfg.train_len, cfg.validation_max_tokens)  # (W, L_train)
    data["validation_scored_tokens"] = int(val_y.numel())
    starts = corpus.train_starts(cfg.train_len)
    searched = {m for m in trained if m in POSITION_PARAMETERS and len(cfg.position_lr_grid) > 1}

    def runs(m: str) -> int:
        return len(cfg.seeds) + (len(cfg.position_lr_grid) - 1 if m in searched else 0)

    per_run = {m: cfg.train.steps + len(lengths) * (1 + (len(variants) if m == "rope" else 0)) for m in trained}
    interactive = sys.stderr.isatty()
    bar = tqdm(
        total=sum(per_run[m] * runs(m) for m in trained),
        disable=not (progress and rt.is_main),
        unit="step",
        dynamic_ncols=True,
        file=sys.stderr,
        mininterval=0.1 if interactive else 10.0,
    )

    def on_step(step: int, loss: float) -> None:
        bar.update(1)
        if step % 10 == 0:
            bar.set_postfix(loss=f"{loss:.3f}")

    def run_one(name: str, seed: int, mult: float | None) -> tuple[GPT, dict]:
        tcfg = TrainConfig(**{**cfg.train.to_dict(), "position_lr_mult": 1.0 if mult is None else mult})
        seed_everything(seed)
        model = GPT(cfg.gpt_config(name), seed=seed).to(device)
        model.set_attention(cfg.attention)
        tr = train(
            model,
            corpus.train,
            tcfg,
            seed,
            starts=starts,
            on_step=on_step,
            runtime=rt,
            state_path=_state_path(cfg, name, seed, mult),
            checkpoint_every=cfg.checkpoint_every,
            resume=resume and cfg.checkpoint_every > 0,
        )
        bar.set_description(f"{name} seed {seed}: eval")
        evals = evaluate(model, corpus.heldout, lengths, cfg.eval_tokens_per_batch, cfg.eval_max_tokens, rt)
        bar.update(len(lengths))
        record = {
            "seed": seed,
            "position_lr_mult": mult,
            "validation_loss": mean_loss(model, val_x, val_y, cfg.eval_tokens_per_batch, rt),
            "final_train_loss": tr.final_loss,
            "train_seconds": tr.seconds,
            "train_tokens_per_s": tr.tokens_per_s,
            "train_tokens_per_s_mean": tr.tokens_per_s_mean,
            "train_tokens_per_cpu_s": tr.tokens_per_cpu_s,
            "loss_curve": _curve(tr),
            **_eval_record(evals),
        }
        return model, record

    methods: dict[str, dict] = {}
    for name in trained:
        gcfg = cfg.gpt_config(name)
        bar.set_description(f"{name}: memory")
        seed_everything(cfg.seeds[0])
        probe = GPT(gcfg, seed=cfg.seeds[0]).to(device)
        attention_used = probe.set_attention(cfg.attention)
        params = probe.num_params()
        memory = {
            "what": MEMORY_NOTE,
            "train": training_memory(copy.deepcopy(probe), cfg.train, corpus.train, runtime=rt),
            "inference_peak_bytes": inference_memory_many(probe, lengths, cfg.eval_tokens_per_batch, rt),
        }
        entries = {name: {"memory": memory, "seeds": []}}
        for v in variants if name == "rope" else []:
            probe.set_rope_scaling(ROPE_VARIANTS[v])
            entries[v] = {
                "memory": {
                    "what": MEMORY_NOTE,
                    "train": None,
                    "inference_peak_bytes": inference_memory_many(probe, lengths, cfg.eval_tokens_per_batch, rt),
                },
                "seeds": [],
            }
        del probe

        has_position = name in POSITION_PARAMETERS
        first = cfg.seeds[0]
        search: list[dict] = []
        chosen: float | None = cfg.position_lr_grid[0] if has_position else None
        done: dict[int, tuple[GPT, dict]] = {}
        if name in searched:
            candidates = {}
            for mult in cfg.position_lr_grid:
                bar.set_description(f"{name} seed {first} lr x{mult:g}")
                model, record = run_one(name, first, mult)
                candidates[mult] = (model, record)
                search.append(
                    {
                        "position_lr_mult": mult,
                        "seed": first,
                        "validation_loss": record["validation_loss"],
                        "final_train_loss": record["final_train_loss"],
                        "perplexity": record["perplexity"],
                    }
                )
            chosen = min(cfg.position_lr_grid, key=lambda m: (candidates[m][1]["validation_loss"], m))
            done[first] = candidates[chosen]
            del candidates
        for seed in cfg.seeds:
            if seed not in done:
                bar.set_description(f"{name} seed {seed}")
                done[seed] = run_one(name, seed, chosen)
            model, record = done.pop(seed)
            entries[name]["seeds"].append(record)
            for v in variants if name == "rope" else []:
                model.set_rope_scaling(ROPE_VARIANTS[v])
                evals = evaluate(model, corpus.heldout, lengths, cfg.eval_tokens_per_batch, cfg.eval_max_tokens, rt)
                bar.update(len(lengths))
                entries[v]["seeds"].append({"seed": seed, **_eval_record(evals)})
                model.set_rope_scaling("none")
            if cfg.checkpoint_dir is not None and rt.is_main:
                from .checkpoint import save_checkpoint

                save_checkpoint(model, Path(cfg.checkpoint_dir) / f"{name}-seed{seed}.pt")
        for key, entry in entries.items():
            methods[key] = {
                "kind": METHOD_KIND[key],
                "trained_as": name,
                "rope_scaling": ROPE_VARIANTS.get(key),
                "params": params,
                "attention": attention_used,
                "max_length": cfg.train_len if key == "learned" else None,
                "position_lr_mult": chosen,
                "lr_search": search if key == name else [],
                **entry,
                "aggregate": _aggregate(entry["seeds"], trained=key == name),
            }
    bar.close()
    order = [m for m in reported if m in methods]
    results = {
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
    }
    results["paired"] = paired_summary(results, cfg.baseline) if cfg.baseline in methods else None
    results["wall_seconds"] = time.perf_counter() - started
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
