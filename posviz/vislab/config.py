"""What one run of the miniature depends on: :class:`VisConfig`, the presets, the publish check.

Every check of a setting lives here (or in :class:`posviz.vislab.model.ViTConfig` and the lab's
:class:`posviz.lab.train.TrainConfig`) and names the command-line flag that sets it, so the CLI
only catches the ``ValueError``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..lab.train import TrainConfig
from .model import ViTConfig
from .positions import METHODS
from .task import check_grid

__all__ = ["RUNTIME_FIELDS", "VisConfig", "check_publishable", "full_config", "quick_config"]


@dataclass
class VisConfig:
    """Everything a run depends on (recorded in the results under ``config``)."""

    methods: list[str] = field(default_factory=lambda: list(METHODS))
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    train_grid: int = 8
    eval_grids: list[int] = field(default_factory=lambda: [8, 12, 16])
    model: dict = field(default_factory=lambda: {"n_layer": 2, "n_head": 4, "n_embd": 64})  # ViTConfig fields
    train: TrainConfig = field(default_factory=lambda: TrainConfig(steps=500, batch_size=32, lr=5e-3, warmup_steps=50))
    n_validation: int = 256  # validation examples at the training grid (choose the position lr)
    n_heldout: int = 512  # held-out examples per evaluation grid
    eval_batch_size: int = 256
    position_lr_grid: list[float] = field(default_factory=lambda: [1.0, 10.0])
    baseline: str = "none"
    mode: str = "full"
    workers: int = 1  # processes training runs in parallel (each one thread): runtime only
    threads: int = 1  # torch threads per process: runtime only

    def __post_init__(self) -> None:
        unknown = [m for m in self.methods if m not in METHODS]
        if unknown or not self.methods:
            raise ValueError(f"--methods must name one or more of {list(METHODS)}, got {self.methods}")
        if self.baseline not in METHODS:
            raise ValueError(f"baseline must be one of {list(METHODS)}, got {self.baseline!r}")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds) or any(s < 0 for s in self.seeds):
            raise ValueError(f"--seeds must be distinct ints >= 0, got {self.seeds}")
        check_grid(self.train_grid, "--train-grid")
        if not self.eval_grids:
            raise ValueError("--eval-grids must name at least one grid")
        for g in self.eval_grids:
            check_grid(g, "--eval-grids")
        if self.train_grid not in self.eval_grids:
            raise ValueError(
                f"--eval-grids must include the training grid {self.train_grid} (the learning rate and the "
                f"reference accuracy are measured there), got {self.eval_grids}"
            )
        if len(set(self.eval_grids)) != len(self.eval_grids):
            raise ValueError(f"--eval-grids must be distinct, got {self.eval_grids}")
        for name, flag in (("n_validation", "--n-validation"), ("n_heldout", "--n-heldout"),
                           ("eval_batch_size", None), ("workers", "--workers"), ("threads", "--threads")):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}{f' ({flag})' if flag else ''} must be a positive int, got {value!r}")
        if not self.position_lr_grid or any(not (v > 0) for v in self.position_lr_grid):
            raise ValueError(f"position_lr_grid must hold positive numbers, got {self.position_lr_grid}")
        self.vit_config("none")  # the model's shape: ValueError naming --heads / --d-model / --layers

    @property
    def grids(self) -> list[int]:
        """The evaluation grids, ascending."""
        return sorted(self.eval_grids)

    def vit_config(self, method: str) -> ViTConfig:
        return ViTConfig(method=method, grid=self.train_grid, **self.model)

    def reported_methods(self) -> list[str]:
        """Requested methods in canonical order (:data:`posviz.vislab.positions.METHODS`)."""
        return [m for m in METHODS if m in self.methods]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["model"] = {k: v for k, v in self.vit_config("none").to_dict().items() if k != "method"}
        d["eval_grids"] = self.grids
        return d


def full_config(**overrides: object) -> VisConfig:
    """The published run: d=64, 2 layers, 4 heads, 500 steps of 32 images at 8 x 8 (peak learning
    rate 5e-3), 3 seeds, every method, the position learning-rate multiplier chosen from 1 and 10 on
    256 validation images; evaluated on 512 held-out images at 8 x 8, 12 x 12 and 16 x 16 (21
    training runs; sized for a shared, loaded 2-core machine)."""
    base: dict = {"mode": "full"}
    base.update(overrides)
    return VisConfig(**base)


def quick_config(**overrides: object) -> VisConfig:
    """A smoke run: 2 seeds, 120 steps of 32 images, 128 validation and 256 held-out images per grid,
    no learning-rate search (multiplier fixed at 10). Measured with ``--threads 1``: 114 s of CPU time,
    1 min 58 s of wall time on the shared 2-core machine. Too short for most methods to learn the
    task (only ``rope-mixed`` left chance in the measured run): it checks the pipeline, not the claims."""
    base: dict = {
        "seeds": [0, 1],
        "train": TrainConfig(steps=120, batch_size=32, lr=4e-3, warmup_steps=12),
        "n_validation": 128,
        "n_heldout": 256,
        "position_lr_grid": [10.0],
        "mode": "quick",
    }
    base.update(overrides)
    return VisConfig(**base)


RUNTIME_FIELDS = ("workers", "threads")
"""How a run executes: free to differ from the full configuration when publishing (each training
run is one process with a fixed thread count, so the worker count changes no number)."""


def check_publishable(cfg: VisConfig) -> None:
    """Raise ``ValueError`` naming every setting in which ``cfg`` differs from :func:`full_config`
    (only :data:`RUNTIME_FIELDS` may differ): only the full run is published."""
    mine = cfg.to_dict()
    full = full_config(**{k: getattr(cfg, k) for k in RUNTIME_FIELDS}).to_dict()
    differ = sorted(k for k in full.keys() | mine.keys() if mine.get(k) != full.get(k))
    if differ:
        raise ValueError(
            "--publish takes the full configuration only; this run differs in "
            + ", ".join(f"{k} ({mine.get(k)!r} instead of {full.get(k)!r})" for k in differ)
        )
