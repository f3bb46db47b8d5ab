r"""What one run of the lab depends on: :class:`LabConfig`, the presets, and the checks made before
anything runs (:func:`check_publishable`, :func:`check_corpus`).

Every check of a setting lives in one place and names the command-line flag that sets it, so the
CLI (:mod:`posviz.lab.cli`) only catches the ``ValueError``: the model's shape in
:class:`posviz.lab.model.GPTConfig`, the optimiser's in :class:`posviz.lab.train.TrainConfig`,
the run's in :class:`LabConfig`, and what the data must hold for it in :func:`check_corpus`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from .data import Corpus, scored_tokens
from .distributed import ATTENTIONS, PRECISIONS
from .model import ALL_METHODS, CLASSIC_METHODS, ROPE_VARIANTS, GPTConfig, check_ntk_head_size
from .train import TrainConfig

__all__ = [
    "POSITION_PARAMETERS",
    "PRESETS",
    "QUICK_METHODS",
    "QUICK_ROUND3",
    "PUBLISHED_PATH",
    "RUNTIME_FIELDS",
    "LabConfig",
    "check_corpus",
    "check_publishable",
    "full_config",
    "gpu_config",
    "quick_config",
]

POSITION_PARAMETERS = ("learned", "shaw", "t5", "learned-random", "fire", "kerple-log", "cope")
"""Methods whose position module has trainable parameters (their learning rate is chosen on validation)."""
QUICK_ROUND3: tuple[str, ...] = ("rope-random", "fire", "cope", "xpos")
"""The round-three methods ``--quick`` runs: one per family (randomized positions, learned
functions of distance, contextual positions, xPos); ``learned-random`` and ``kerple-log`` are left
out to keep the quick run within 2 minutes of CPU time (``--methods`` runs them)."""
QUICK_METHODS: tuple[str, ...] = tuple(
    m for m in ALL_METHODS if m in CLASSIC_METHODS or m in ROPE_VARIANTS or m in QUICK_ROUND3
)
"""``--quick``'s methods: the seven classic trained ones, the six rope-* rows, :data:`QUICK_ROUND3`."""


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
        if self.baseline not in ALL_METHODS:
            raise ValueError(f"baseline must be one of {list(ALL_METHODS)}, got {self.baseline!r}")
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
        for name in ("eval_tokens_per_batch", "eval_max_tokens", "validation_max_tokens"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be a positive int or None, got {value!r}")
        gpt = self.gpt_config("none")  # model sizes: ValueError naming --heads / --d-model
        if "rope-ntk" in self.methods:
            check_ntk_head_size(gpt.head_dim)

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
    """About 1.5 min of CPU time on one thread (an estimate from measurements on a loaded machine:
    see ``posviz.lab.cli``): trained at 32 bytes and evaluated at 32-512 (16x), d=64, 2 layers, 170
    steps of 16 windows at a higher learning rate (6e-3), 2 seeds, :data:`QUICK_METHODS` (the seven
    classic trained methods, the six rope-* evaluation rows and one round-three method per family),
    4k held-out tokens, and no learning-rate search (position multiplier fixed at 10). The orderings
    the chapter discusses (learned cannot run, sinusoidal and RoPE degrade with length, ALiBi and
    Shaw stay flat, NTK-aware scaling beats PI) come out as in the full run; the perplexities are
    higher (a far smaller model and shorter training)."""
    base: dict = {
        "methods": list(QUICK_METHODS),
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

RUNTIME_FIELDS = ("device", "checkpoint_dir", "world_size", "checkpoint_every")
"""Where and in how many processes a run executes: free to differ from the full configuration when
publishing. Precision, attention kernel and compilation are not: see :func:`check_publishable`."""

PUBLISHED_PATH = {"precision": "fp32", "attention": "posviz", "compile": False}
"""The arithmetic path of the published numbers (the chapter describes it): float32 through
:func:`posviz.attention`, not compiled. A bf16 / SDPA / compiled run computes the same function
only up to its rounding, so it is not published."""

_FLAGS = {"precision": "--precision fp32", "attention": "--attention posviz", "compile": "no --compile"}


def check_publishable(cfg: LabConfig) -> None:
    """Raise ``ValueError`` naming every setting in which ``cfg`` differs from :func:`full_config`:
    only the full run, computed on the float32 :func:`posviz.attention` path (:data:`PUBLISHED_PATH`),
    is published. Only where it runs (:data:`RUNTIME_FIELDS`: device, processes, checkpoints) may differ."""
    path = [k for k, v in PUBLISHED_PATH.items() if getattr(cfg, k) != v]
    if path:
        raise ValueError(
            "--publish takes the float32 posviz.attention path only (the published numbers' arithmetic); this run "
            "has " + ", ".join(f"{k} {getattr(cfg, k)!r}" for k in path) + ": add " + ", ".join(_FLAGS[k] for k in path)
        )
    mine = cfg.to_dict()
    full = full_config(**{k: getattr(cfg, k) for k in RUNTIME_FIELDS}).to_dict()
    differ = sorted(k for k in full.keys() | mine.keys() if mine.get(k) != full.get(k))
    if differ:
        raise ValueError(
            "--publish takes the full configuration only; this run differs in "
            + ", ".join(f"{k} ({mine.get(k)!r} instead of {full.get(k)!r})" for k in differ)
        )


def check_corpus(corpus: Corpus, cfg: LabConfig) -> None:
    """Raise ``ValueError`` unless every split holds what the run needs: a training window of
    ``train_len + 1`` bytes free of held-out strings, at least one such validation window (the
    learning-rate choice and ``validation_loss`` average over them), and a held-out text longer
    than the longest evaluation length. The message names ``--corpus`` (with the smallest file
    size that can work) or the length flags. Called by the CLI before any process starts and by
    :func:`posviz.lab.run_experiment`."""
    info = corpus.info
    longest = max(cfg.eval_lengths)
    if cfg.corpus is not None:
        need = max(
            int((cfg.train_len + 2) / info["validation_fraction"]) + 1,
            int((longest + 2) / info["heldout_fraction"]) + 1,
        )
        fix = (
            f"--corpus {cfg.corpus} holds {info['n_tokens']} bytes; it needs at least {need} bytes (of text whose "
            "last tenth does not repeat the rest)"
        )
    else:
        fix = "use a larger --corpus or shorter lengths"
    fix += f" for --train-len {cfg.train_len} and --eval-multipliers {' '.join(map(str, cfg.eval_multipliers))}"
    if scored_tokens(info["n_heldout_tokens"], longest, cfg.eval_max_tokens) == 0:
        raise ValueError(
            f"the held-out split ({info['n_heldout_tokens']} bytes) is shorter than the longest evaluation length "
            f"{longest} (--train-len x the largest --eval-multipliers): {fix}"
        )
    x, _ = corpus.validation_windows(cfg.train_len, cfg.validation_max_tokens)
    if len(x) == 0:
        raise ValueError(
            f"the validation split ({info['n_validation_tokens']} bytes) holds no window of {cfg.train_len + 1} bytes "
            f"free of 64-byte strings of the held-out text, so no validation loss can be measured: {fix}"
        )
    if len(corpus.train_starts(cfg.train_len)) == 0:
        raise ValueError(
            f"the training split ({info['n_train_tokens']} bytes) holds no window of {cfg.train_len + 1} bytes "
            f"free of 64-byte strings of the held-out text: {fix}"
        )
