r"""Training the learned-table chapter's model: a seeded, single-threaded, deterministic loop.

:func:`train_window_max` trains a :class:`~posviz.learned.OneLayerModel` on
:func:`~posviz.learned.sliding_window_max` and keeps a :class:`Snapshot` of the table at a dozen
chosen steps; :class:`WindowMaxConfig` holds everything that defines a run (not to be confused
with the extrapolation lab's ``posviz.lab.train.TrainConfig``).

Book chapter: *Learned position tables*.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import torch
from torch.nn import functional as F

from .._validate import check_int, check_positive
from ..absolute import LearnedPositionalEmbedding
from .model import OneLayerModel, positional_attention, sliding_window_max

__all__ = ["DEFAULT_CHECKPOINTS", "Snapshot", "TrainingRun", "WindowMaxConfig", "train_grid", "train_window_max"]

DEFAULT_CHECKPOINTS: tuple[int, ...] = (0, 5, 10, 15, 20, 30, 40, 50, 75, 100, 125, 150)
"""Training steps at which :func:`train_window_max` keeps a snapshot by default (a dozen,
denser early, where the table changes fastest)."""


@dataclass(frozen=True)
class WindowMaxConfig:
    r"""Everything that defines a training run of :func:`train_window_max` (it is seeded).

    Attributes:
        max_len: rows of the learned table, :math:`L_{\max}`.
        dim: model width :math:`d` (token and position vectors, queries, keys, values).
        vocab: number of token ids; tokens are drawn uniformly from ``0 .. vocab-1``.
        window: the task's :math:`w`: target = max of the last ``window + 1`` tokens.
        seq_len: training sequence length, ``<= max_len`` (``None``: ``max_len``). Rows
            ``seq_len ..`` then never receive a gradient.
        steps: optimiser steps (Adam, no weight decay).
        batch: sequences per step.
        lr: Adam's learning rate.
        seed: seeds the initial weights and every batch.
        checkpoints: steps at which a :class:`Snapshot` is kept (those ``<= steps``).
        probe: size of the fixed batch on which snapshots measure loss, accuracy, attention.
    """

    max_len: int = 48
    dim: int = 32
    vocab: int = 16
    window: int = 3
    seq_len: int | None = None
    steps: int = 150
    batch: int = 32
    lr: float = 1e-2
    seed: int = 0
    checkpoints: tuple[int, ...] = DEFAULT_CHECKPOINTS
    probe: int = 128

    def __post_init__(self) -> None:
        check_int("max_len", self.max_len, minimum=1)
        check_int("dim", self.dim, minimum=1)
        check_int("vocab", self.vocab, minimum=2)
        check_int("window", self.window, minimum=0)
        if self.seq_len is not None:
            check_int("seq_len", self.seq_len, minimum=1, maximum=self.max_len)
        check_int("steps", self.steps, minimum=0)
        check_int("batch", self.batch, minimum=1)
        check_positive("lr", self.lr)
        check_int("seed", self.seed, minimum=0)
        check_int("probe", self.probe, minimum=1)
        if not isinstance(self.checkpoints, tuple) or not all(isinstance(c, int) for c in self.checkpoints):
            raise TypeError(f"checkpoints must be a tuple of ints, got {self.checkpoints!r}")
        if any(c < 0 for c in self.checkpoints):
            raise ValueError(f"checkpoints must be steps >= 0, got {self.checkpoints}")

    @property
    def length(self) -> int:
        """The training sequence length: ``seq_len``, or ``max_len`` when that is ``None``."""
        return self.max_len if self.seq_len is None else self.seq_len


@dataclass(frozen=True)
class Snapshot:
    """The state of a run at one training step.

    Attributes:
        step: optimiser steps taken so far.
        table: a copy of the position table ``P`` (``[max_len, dim]``, CPU, float32).
        positional_attention: :func:`positional_attention` over the training length.
        attention: the model's causal attention weights averaged over the probe batch,
            ``[length, length]``.
        loss: cross-entropy on the probe batch (nats per position).
        accuracy: fraction of probe positions whose most likely token is the target.
    """

    step: int
    table: torch.Tensor
    positional_attention: torch.Tensor
    attention: torch.Tensor
    loss: float
    accuracy: float


@dataclass(frozen=True)
class TrainingRun:
    """What :func:`train_window_max` returns: its config, the trained model and the snapshots."""

    config: WindowMaxConfig
    model: OneLayerModel
    snapshots: tuple[Snapshot, ...] = field(default_factory=tuple)

    def embedding(self, index: int = -1) -> LearnedPositionalEmbedding:
        """A :class:`posviz.LearnedPositionalEmbedding` holding snapshot ``index``'s table."""
        snap = self.snapshots[index]
        with torch.random.fork_rng(devices=[]):  # its random init is overwritten: leave the RNG alone
            emb = LearnedPositionalEmbedding(self.config.max_len, self.config.dim)
        with torch.no_grad():
            emb.table.weight.copy_(snap.table)
        return emb


def _snapshot(model: OneLayerModel, step: int, probe: torch.Tensor, target: torch.Tensor) -> Snapshot:
    with torch.no_grad():
        logits, weights = model(probe)  # [N, L, V], [N, L, L]
        loss = F.cross_entropy(logits.flatten(0, 1), target.flatten()).item()
        accuracy = (logits.argmax(-1) == target).double().mean().item()
        return Snapshot(
            step=step,
            table=model.position.table.weight.detach().clone().cpu(),
            positional_attention=positional_attention(model, probe.shape[-1]).cpu(),
            attention=weights.mean(0).cpu(),
            loss=loss,
            accuracy=accuracy,
        )


def train_window_max(config: WindowMaxConfig | None = None) -> TrainingRun:
    r"""Train a :class:`OneLayerModel` on :func:`sliding_window_max`; keep a snapshot at each checkpoint.

    Minimises the cross-entropy :math:`-\frac{1}{BL}\sum_{b,m} \log p(y_{bm} \mid x_{b,\le m})`
    with Adam (no weight decay) on fresh uniform random tokens at every step. Deterministic:
    the weights come from ``torch.manual_seed(config.seed)`` (the caller's global RNG state is
    left as it was), the batches from a generator seeded with ``config.seed``, and the loop runs
    on the CPU with one thread (faster for tensors this small, and independent of the
    machine's core count).

    A row of the table that no training sequence reaches (``m >= seq_len``) gets a zero
    gradient at every step, and Adam then leaves it exactly at its initial value.
    """
    config = WindowMaxConfig() if config is None else config
    if not isinstance(config, WindowMaxConfig):
        raise TypeError(f"config must be a WindowMaxConfig, got {type(config).__name__}")
    length, threads = config.length, torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            model = OneLayerModel(config.vocab, config.max_len, config.dim)
        data = torch.Generator().manual_seed(config.seed)
        probe = torch.randint(config.vocab, (config.probe, length), generator=data)  # [N, L]
        probe_target = sliding_window_max(probe, config.window)  # [N, L]
        optimiser = torch.optim.Adam(model.parameters(), lr=config.lr)
        keep = set(config.checkpoints)
        snapshots = []
        for step in range(config.steps + 1):
            if step in keep:
                snapshots.append(_snapshot(model, step, probe, probe_target))
            if step == config.steps:
                break
            tokens = torch.randint(config.vocab, (config.batch, length), generator=data)  # [B, L]
            logits, _ = model(tokens)  # [B, L, V]
            loss = F.cross_entropy(logits.flatten(0, 1), sliding_window_max(tokens, config.window).flatten())
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            optimiser.step()
    finally:
        torch.set_num_threads(threads)
    model.eval()
    return TrainingRun(config=config, model=model, snapshots=tuple(snapshots))


def train_grid(
    max_lens: Iterable[int],
    dims: Iterable[int],
    seeds: Iterable[int] = (0,),
    *,
    base: WindowMaxConfig | None = None,
    runs: Mapping[tuple[int, int, int], TrainingRun] | None = None,
) -> dict[tuple[int, int, int], TrainingRun]:
    """One :func:`train_window_max` run per ``(max_len, dim, seed)``, keyed by that triple.

    Every run uses ``base`` (default :class:`WindowMaxConfig`) with only those three fields
    replaced, so all runs share the same checkpoints. A run in ``runs`` whose config is exactly
    the one wanted is reused instead of trained again.
    """
    base = WindowMaxConfig() if base is None else base
    if not isinstance(base, WindowMaxConfig):
        raise TypeError(f"base must be a WindowMaxConfig, got {type(base).__name__}")
    given = dict(runs or {})
    grid = {}
    for max_len in max_lens:
        for dim in dims:
            for seed in seeds:
                config = replace(base, max_len=max_len, dim=dim, seed=seed)
                key = (config.max_len, config.dim, config.seed)
                old = given.get(key)
                grid[key] = old if old is not None and old.config == config else train_window_max(config)
    return grid
