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

**Several processes, bf16, compile** (:class:`posviz.lab.distributed.Runtime`): with
``world_size`` :math:`W > 1` the model is wrapped in DistributedDataParallel, each rank trains on
its contiguous :math:`B/W` windows of the same global batch, and the recorded loss is the mean
over ranks, so the numbers are those of one process up to summation order. ``precision="bf16"``
runs the forward pass and the loss under autocast; ``compile=True`` compiles the forward.

**Checkpoints and resuming.** With ``state_path`` and ``checkpoint_every`` :math:`N > 0`, the
whole training state (weights, AdamW state, the batch generator's state, the step, and the logs
so far) is written there every :math:`N` steps and after the last (by rank 0; atomically, through
a temporary file). ``resume=True`` loads it back (``torch.load(..., weights_only=True)``: tensors
and plain types only, no pickled code) and goes on from that step: the final weights are those of
an uninterrupted run (:func:`load_train_state`).
"""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from torch.nn import functional as F

from .._runtime import synchronize
from .data import sample_batch
from .distributed import Runtime
from .model import GPT, derive_seed

__all__ = [
    "TrainConfig",
    "TrainResult",
    "lr_at",
    "make_optimizer",
    "deterministic",
    "load_train_state",
    "save_train_state",
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

    def __post_init__(self) -> None:
        # the one place these are checked (the CLI's flags in brackets)
        for name, flag in (("steps", "--steps"), ("batch_size", "--batch-size"), ("log_every", None)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name}{f' ({flag})' if flag else ''} must be a positive int, got {value!r}")
        for name, flag in (("lr", "--lr"), ("position_lr_mult", None)):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name}{f' ({flag})' if flag else ''} must be a finite number > 0, got {value!r}")
        if not isinstance(self.warmup_steps, int) or self.warmup_steps < 0:
            raise ValueError(f"warmup_steps (--warmup) must be an int >= 0, got {self.warmup_steps!r}")
        if not 0 <= self.min_lr_ratio <= 1:
            raise ValueError(f"min_lr_ratio must be in [0, 1], got {self.min_lr_ratio!r}")

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
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    x: torch.Tensor,
    y: torch.Tensor,
    grad_clip: float,
    autocast: contextlib.AbstractContextManager | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One forward/backward/update on ``x, y`` ``(B, T)``; returns the detached loss and the total
    gradient norm before clipping (clipped to ``grad_clip`` when it is > 0). ``model`` may be a
    DDP or compiled wrapper of a :class:`GPT`; ``autocast``: a context for the forward pass and the
    loss (:meth:`posviz.lab.distributed.Runtime.autocast`), none by default."""
    with autocast if autocast is not None else contextlib.nullcontext():
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


_LOGS = ("losses", "norms", "lrs", "step_times", "cpu_times", "curve_steps", "curve_loss")


def save_train_state(
    path: str | os.PathLike,
    model: GPT,
    optimizer: torch.optim.Optimizer,
    generator: torch.Generator,
    step: int,
    logs: dict,
    identity: dict,
) -> Path:
    """Write the training state after ``step`` steps (atomically: a temporary file, then a rename).

    ``logs``: the per-step lists (:data:`_LOGS`); ``identity``: what must match on resume (the
    :class:`TrainConfig`, the seed, the model config)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    blob = {
        "step": int(step),
        "identity": identity,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "generator": generator.get_state(),
        "logs": {k: [float(v) for v in logs[k]] if k != "curve_steps" else list(logs[k]) for k in _LOGS},
        "seconds": float(logs["seconds"]),
    }
    tmp = path.with_name(path.name + ".tmp")
    torch.save(blob, tmp)
    os.replace(tmp, path)
    return path


def load_train_state(
    path: str | os.PathLike,
    model: GPT,
    optimizer: torch.optim.Optimizer,
    generator: torch.Generator,
    identity: dict,
) -> tuple[int, dict]:
    """Load a state written by :func:`save_train_state` into ``model``, ``optimizer`` and
    ``generator``; returns ``(steps done, logs)``. ``torch.load(..., weights_only=True)``. Raises
    ``ValueError`` when the state belongs to another configuration or seed."""
    device = next(model.parameters()).device
    blob = torch.load(path, map_location=device, weights_only=True)
    if blob.get("identity") != identity:
        raise ValueError(
            f"--resume: {path} was written by another configuration or seed "
            f"({blob.get('identity')!r}, this run: {identity!r}); remove it or drop --resume"
        )
    model.load_state_dict(blob["model"])
    optimizer.load_state_dict(blob["optimizer"])
    generator.set_state(blob["generator"].cpu())
    logs = dict(blob["logs"])
    logs["seconds"] = blob["seconds"]
    return int(blob["step"]), logs


def train(
    model: GPT,
    tokens: torch.Tensor,
    cfg: TrainConfig,
    seed: int,
    *,
    starts: torch.Tensor | None = None,
    on_step: Callable[[int, float], None] | None = None,
    runtime: Runtime | None = None,
    state_path: str | os.PathLike | None = None,
    checkpoint_every: int = 0,
    resume: bool = False,
) -> TrainResult:
    """Train ``model`` in place on windows of ``model.config.block_size`` tokens from ``tokens``.

    ``starts``: the allowed window starts (:meth:`posviz.lab.data.Corpus.train_starts`; default
    all). ``on_step(step, loss)`` is called after every step (for a progress bar; on resume, for
    the steps already done too). The model's device is used for the batches; the batch sampler's
    generator lives on the CPU. ``runtime``: processes, precision, compile (default: one process,
    float32). ``state_path``, ``checkpoint_every``, ``resume``: see the module docstring.
    """
    device = next(model.parameters()).device
    rt = runtime if runtime is not None else Runtime(device=device)
    if checkpoint_every < 0:
        raise ValueError(f"--checkpoint-every must be >= 0 (0: never), got {checkpoint_every}")
    if (checkpoint_every or resume) and state_path is None:
        raise ValueError("checkpoint_every and resume need a state_path")
    length = model.config.block_size
    shard = rt.shard(cfg.batch_size)  # this rank's windows of every global batch
    generator = torch.Generator().manual_seed(derive_seed(seed, "data"))
    optimizer = make_optimizer(model, cfg)
    identity = {"train": cfg.to_dict(), "seed": int(seed), "model": model.config.to_dict()}
    logs: dict = {k: [] for k in _LOGS}
    logs["seconds"] = 0.0
    first = 0
    if resume and Path(state_path).exists():  # type: ignore[arg-type]
        first, logs = load_train_state(state_path, model, optimizer, generator, identity)  # type: ignore[arg-type]
    forward: torch.nn.Module = model
    if rt.distributed:
        from torch.nn.parallel import DistributedDataParallel

        ids = [device.index] if device.type == "cuda" else None
        forward = DistributedDataParallel(model, device_ids=ids, broadcast_buffers=False)
    if rt.compile:
        forward = torch.compile(forward)  # type: ignore[assignment]
    model.train()
    losses: list[torch.Tensor] = [torch.tensor(v, device=device) for v in logs["losses"]]
    norms: list[torch.Tensor] = [torch.tensor(v, device=device) for v in logs["norms"]]
    lrs: list[float] = logs["lrs"]
    step_times: list[float] = logs["step_times"]
    cpu_times: list[float] = logs["cpu_times"]
    curve_steps: list[int] = logs["curve_steps"]
    curve_loss: list[float] = logs["curve_loss"]
    if on_step is not None:
        for step in range(first):
            on_step(step, float(losses[step]))
    start = time.perf_counter() - logs["seconds"]
    for step in range(first, cfg.steps):
        t0, c0 = time.perf_counter(), time.process_time()
        set_lr(optimizer, lr_at(step, cfg))
        x, y = sample_batch(tokens, cfg.batch_size, length, generator, starts)  # (B, T), the global batch
        x, y = x[shard], y[shard]  # (B/W, T): this rank's shard (all of it with one process)
        autocast = rt.autocast() if rt.precision != "fp32" else None
        loss, norm = train_step(forward, optimizer, x.to(device), y.to(device), cfg.grad_clip, autocast)
        if rt.distributed:
            loss = rt.all_reduce_sum(loss.clone()) / rt.world_size  # mean over ranks = global batch mean
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
        if checkpoint_every and rt.is_main and ((step + 1) % checkpoint_every == 0 or step + 1 == cfg.steps):
            logs = {
                "losses": losses,
                "norms": norms,
                "lrs": lrs,
                "step_times": step_times,
                "cpu_times": cpu_times,
                "curve_steps": curve_steps,
                "curve_loss": curve_loss,
                "seconds": time.perf_counter() - start,
            }
            save_train_state(state_path, model, optimizer, generator, step + 1, logs, identity)  # type: ignore[arg-type]
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
