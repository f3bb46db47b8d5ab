r"""Training: AdamW on random windows of the training split, at one length.

Loss: mean next-token cross-entropy :math:`\mathcal{L} = -\frac{1}{BT}\sum_{b,t}\log p(x_{b,t+1}\mid x_{b,\le t})`.
Learning rate: linear warm-up, then cosine decay to ``min_lr_ratio`` of the peak,

.. math::

    \eta_s = \eta\,\frac{s+1}{W} \;(s < W), \qquad
    \eta_s = \eta\Big(r + (1-r)\,\tfrac12\big(1 + \cos\tfrac{\pi (s-W)}{S-W}\big)\Big) \;(s \ge W).

Parameter groups (:func:`make_optimizer`): weight decay on the shared 2-D weights only (token
embedding and the blocks' matrices, as nanoGPT); none on biases and LayerNorms; and the position
method's own parameters (learned table, T5 buckets, Shaw vectors) in a third group with no weight
decay and the learning rate :math:`\mu\,\eta_s`, ``position_lr_mult`` :math:`\mu` times the
schedule. Why: Adam moves a parameter by about the learning rate per step whatever its gradient,
so with :math:`\mu = 1` a position parameter can travel at most :math:`\sum_s \eta_s` (about 0.44
over the full run's 400 steps), while the token embedding, multiplied by :math:`\sqrt{d}` in the
forward pass, moves :math:`\sqrt{d}` times faster at the input, and a T5 bias needs values of
several units to shape attention. :math:`\mu` is chosen per method on validation
(:mod:`posviz.lab.experiment`).

Every step records the learning rate the optimizer used (read from its first group), the
gradient norm before clipping (what ``clip_grad_norm_`` returns) and the loss.

Determinism: :func:`seed_everything` seeds torch's global generator; the model draws its weights
from its own seed-derived generators (:class:`posviz.lab.model.GPT`) and the batch sampler uses a
``torch.Generator`` seeded with ``derive_seed(seed, "data")``, the same for every method, so
every method sees the same batches in the same order; on the CPU two runs with the same seed, the
same torch build and the same number of threads give identical numbers.
``torch.use_deterministic_algorithms(True, warn_only=True)`` is switched on for the run and
restored afterwards (:func:`deterministic`; it warns, rather than fails, where an op has no
deterministic version; on CUDA set
``CUBLAS_WORKSPACE_CONFIG=:4096:8`` before starting, as the CLI does). A different thread
count may change float summation order and hence the last digits.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field

import torch
from torch.nn import functional as F

from .._runtime import synchronize
from .data import sample_batch
from .model import GPT, derive_seed

__all__ = [
    "TrainConfig",
    "TrainResult",
    "lr_at",
    "make_optimizer",
    "deterministic",
    "seed_everything",
    "set_lr",
    "train",
    "train_step",
]


@dataclass
class TrainConfig:
    """Optimisation hyperparameters. ``batch_size`` windows of the model's ``block_size`` per step."""

    steps: int = 400
    batch_size: int = 32
    lr: float = 2e-3
    min_lr_ratio: float = 0.1
    warmup_steps: int = 40
    weight_decay: float = 0.1  # on matrices only (nanoGPT)
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0
    log_every: int = 10  # training-loss curve resolution
    timing_skip: int = 5  # first steps left out of the throughput (allocator and cache warm-up)
    position_lr_mult: float = 1.0  # learning rate of the position parameters / the schedule's

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class TrainResult:
    final_loss: float  # mean training loss over the last 10% of steps (nats/token)
    seconds: float  # wall time of the whole loop
    tokens_per_s: float  # B*T / median step time, steps after `timing_skip`
    tokens_per_s_mean: float  # B*T*steps / total time of those steps
    tokens_per_cpu_s: float  # B*T / median CPU time (time.process_time, all threads) per step
    curve_steps: list[int] = field(default_factory=list)
    curve_loss: list[float] = field(default_factory=list)  # mean loss of the `log_every` steps ending there
    step_loss: list[float] = field(default_factory=list)  # every step's training loss
    step_lr: list[float] = field(default_factory=list)  # learning rate used at every step (first group)
    step_grad_norm: list[float] = field(default_factory=list)  # total gradient norm before clipping


def seed_everything(seed: int) -> None:
    """Seed torch's global generator (nothing else: see :func:`deterministic` for the algorithms)."""
    torch.manual_seed(seed)


@contextlib.contextmanager
def deterministic() -> Iterator[None]:
    """Deterministic algorithms (warn-only) inside the block; the caller's setting comes back after.

    :func:`posviz.lab.run_experiment` trains inside this block, so running the lab from a notebook
    leaves the process as it found it.
    """
    enabled = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(enabled, warn_only=warn_only)


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Warm-up then cosine learning rate at ``step`` (0-based); formula in the module docstring."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    span = max(1, cfg.steps - cfg.warmup_steps)
    progress = min(1.0, (step - cfg.warmup_steps) / span)
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def make_optimizer(model: GPT, cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW with three groups: ``"decay"`` (shared 2-D weights), ``"no_decay"`` (shared biases and
    LayerNorms) and ``"position"`` (the position module's parameters: no decay, ``lr_mult`` =
    ``cfg.position_lr_mult``; empty for methods without parameters). Each group's ``lr_mult``
    scales the schedule (:func:`set_lr`)."""
    shared = [p for _, p in model.shared_parameters()]
    decay = [p for p in shared if p.dim() >= 2]
    no_decay = [p for p in shared if p.dim() < 2]
    position = list(model.position.parameters())
    groups = [
        {"params": decay, "weight_decay": cfg.weight_decay, "lr_mult": 1.0, "name": "decay"},
        {"params": no_decay, "weight_decay": 0.0, "lr_mult": 1.0, "name": "no_decay"},
        {"params": position, "weight_decay": 0.0, "lr_mult": cfg.position_lr_mult, "name": "position"},
    ]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2))


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    """Set every group's learning rate to ``lr * group["lr_mult"]``."""
    for group in optimizer.param_groups:
        group["lr"] = lr * group.get("lr_mult", 1.0)


def train_step(
    model: GPT, optimizer: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor, grad_clip: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """One forward/backward/update on ``x, y`` ``(B, T)``; returns the detached loss and the total
    gradient norm before clipping (clipped to ``grad_clip`` when it is > 0)."""
    logits = model(x)  # (B, T, vocab)
    loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    params = [p for p in model.parameters() if p.grad is not None]
    if grad_clip > 0:
        norm = torch.nn.utils.clip_grad_norm_(params, grad_clip)
    else:
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in params]))
    optimizer.step()
    return loss.detach(), norm.detach()


def train(
    model: GPT,
    tokens: torch.Tensor,
    cfg: TrainConfig,
    seed: int,
    *,
    starts: torch.Tensor | None = None,
    on_step: Callable[[int, float], None] | None = None,
) -> TrainResult:
    """Train ``model`` in place on windows of ``model.config.block_size`` tokens from ``tokens``.

    ``starts``: the allowed window starts (:meth:`posviz.lab.data.Corpus.train_starts`; default
    all). ``on_step(step, loss)`` is called after every step (for a progress bar). The model's
    device is used for the batches; the batch sampler's generator lives on the CPU.
    """
    device = next(model.parameters()).device
    length = model.config.block_size
    generator = torch.Generator().manual_seed(derive_seed(seed, "data"))
    optimizer = make_optimizer(model, cfg)
    model.train()
    losses: list[torch.Tensor] = []
    norms: list[torch.Tensor] = []
    lrs: list[float] = []
    step_times: list[float] = []
    cpu_times: list[float] = []
    curve_steps: list[int] = []
    curve_loss: list[float] = []
    start = time.perf_counter()
    for step in range(cfg.steps):
        t0, c0 = time.perf_counter(), time.process_time()
        set_lr(optimizer, lr_at(step, cfg))
        x, y = sample_batch(tokens, cfg.batch_size, length, generator, starts)  # (B, T)
        loss, norm = train_step(model, optimizer, x.to(device), y.to(device), cfg.grad_clip)
        synchronize(device)
        step_times.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)
        losses.append(loss)
        norms.append(norm)
        lrs.append(float(optimizer.param_groups[0]["lr"]))
        if (step + 1) % cfg.log_every == 0 or step + 1 == cfg.steps:
            recent = torch.stack(losses[len(losses) - ((step % cfg.log_every) + 1) :]).mean()
            curve_steps.append(step + 1)
            curve_loss.append(float(recent))
        if on_step is not None:
            on_step(step, float(loss))
    seconds = time.perf_counter() - start
    model.eval()
    timed = step_times[cfg.timing_skip :] or step_times
    tokens_per_step = cfg.batch_size * length
    tail = max(1, cfg.steps // 10)
    return TrainResult(
        final_loss=float(torch.stack(losses[-tail:]).mean()),
        seconds=seconds,
        tokens_per_s=tokens_per_step / statistics.median(timed),
        tokens_per_s_mean=tokens_per_step * len(timed) / sum(timed),
        tokens_per_cpu_s=tokens_per_step / max(statistics.median(cpu_times[cfg.timing_skip :] or cpu_times), 1e-9),
        curve_steps=curve_steps,
        curve_loss=curve_loss,
        step_loss=torch.stack(losses).tolist(),
        step_lr=lrs,
        step_grad_norm=torch.stack(norms).tolist(),
    )
