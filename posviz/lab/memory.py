"""Peak tensor memory of a piece of work, on the CPU or on CUDA.

What is measured: the largest amount of **tensor memory allocated by PyTorch** during the work,
above what was already allocated when it started; not the process's resident set size (which
also holds the Python interpreter, libraries and allocator caches).

* CUDA: ``torch.cuda.max_memory_allocated() - torch.cuda.memory_allocated()`` around the work
  (after ``reset_peak_memory_stats``).
* CPU: ``torch.profiler`` with ``profile_memory=True`` records every allocation and free of the
  CPU allocator; the running sum of those sizes, in time order, peaks at the value returned.
  (It is the CPU analogue of ``max_memory_allocated``; ``tracemalloc`` cannot see torch's
  allocator.) The profiler prints two lines to stderr when it starts and stops; they are silenced.

:func:`training_memory` and :func:`inference_memory` use it on one training step and one
no-grad forward pass.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator

import torch

from .data import sample_batch
from .model import GPT
from .train import TrainConfig, make_optimizer, train_step

__all__ = ["MEMORY_NOTE", "inference_memory", "peak_bytes", "training_memory"]

MEMORY_NOTE = (
    "tensor bytes allocated by PyTorch (CPU: torch.profiler memory events; CUDA: max_memory_allocated), "
    "not process RSS. train: param_bytes + optimizer_state_bytes (AdamW moments) + step_peak_bytes (peak extra "
    "allocation during one training step at train_len, batch_size windows). inference_peak_bytes: peak extra "
    "allocation of one no-grad forward over eval_tokens_per_batch tokens at each eval length (null: cannot run)."
)


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Send file descriptor 2 to /dev/null (the profiler's C++ start/stop lines)."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, ValueError, OSError):  # e.g. pytest's capture
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), fd)
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


def peak_bytes(fn: Callable[[], object], device: torch.device) -> int:
    """Peak bytes of tensor memory allocated while ``fn()`` runs, above the level at its start."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        start = torch.cuda.memory_allocated(device)
        fn()
        torch.cuda.synchronize(device)
        return int(torch.cuda.max_memory_allocated(device) - start)
    from torch.profiler import ProfilerActivity, profile

    prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
    with _quiet_stderr():
        prof.start()
    try:
        fn()
    finally:
        with _quiet_stderr():
            prof.stop()
    try:  # the raw allocation events, in time order
        raw = prof.profiler.kineto_results.events()  # type: ignore[union-attr]
        changes = [
            (e.start_ns(), e.nbytes())
            for e in raw
            if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU
        ]
    except AttributeError:  # pragma: no cover - other torch versions: the public FunctionEvent list
        changes = [(e.time_range.start, e.cpu_memory_usage) for e in prof.events() if e.name == "[memory]"]
    changes.sort(key=lambda c: c[0])  # stable: events recorded at the same instant keep their order
    level = peak = 0
    for _, nbytes in changes:
        level += nbytes
        peak = max(peak, level)
    return int(peak)


def training_memory(model: GPT, cfg: TrainConfig, tokens: torch.Tensor, seed: int = 0) -> dict[str, int]:
    """Memory of one training step (forward, backward, clipping, AdamW update) at the training length.

    Returns ``param_bytes``, ``optimizer_state_bytes`` (AdamW's two moments, created by one
    untimed warm-up step), ``step_peak_bytes`` (peak extra allocation during the measured step:
    activations, gradients, temporaries) and ``total_bytes`` (the sum of the three). ``model``
    is updated by the two steps: pass a throw-away copy.
    """
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)
    optimizer = make_optimizer(model, cfg)
    model.train()
    x, y = sample_batch(tokens, cfg.batch_size, model.config.block_size, generator)
    x, y = x.to(device), y.to(device)
    train_step(model, optimizer, x, y, cfg.grad_clip)  # creates the optimizer state
    optimizer.zero_grad(set_to_none=True)
    step = peak_bytes(lambda: train_step(model, optimizer, x, y, cfg.grad_clip), device)
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    state = sum(
        t.numel() * t.element_size()
        for s in optimizer.state.values()
        for t in s.values()
        if isinstance(t, torch.Tensor) and t.dim() > 0  # exp_avg, exp_avg_sq (not the scalar step)
    )
    model.eval()
    return {
        "param_bytes": params,
        "optimizer_state_bytes": state,
        "step_peak_bytes": step,
        "total_bytes": params + state + step,
    }


@torch.no_grad()
def inference_memory(model: GPT, length: int, tokens_per_batch: int) -> int | None:
    """Peak extra bytes of a no-grad forward of ``tokens_per_batch // length`` windows of ``length``.

    ``None`` when the model cannot run at that length (a learned table too short).
    """
    device = next(model.parameters()).device
    model.eval()
    x = torch.zeros(max(1, tokens_per_batch // length), length, dtype=torch.long, device=device)  # (b, L)
    try:
        return peak_bytes(lambda: model(x), device)
    except IndexError:
        return None
