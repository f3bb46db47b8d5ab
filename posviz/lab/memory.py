"""Peak tensor memory of a piece of work, on the CPU or on CUDA.

What is measured: the largest amount of **tensor memory allocated by PyTorch** during the work,
above what was already allocated when it started; not the process's resident set size (which
also holds the Python interpreter, libraries and allocator caches).

* CUDA: ``torch.cuda.max_memory_allocated() - torch.cuda.memory_allocated()`` around the work
  (after ``reset_peak_memory_stats``).
* CPU: the public ``torch.profiler`` API with ``profile_memory=True``: every event of
  ``prof.events()`` (operators and the ``[memory]`` events of allocations made outside any
  operator) carries the bytes it allocated minus those it freed, itself, without its children
  (``self_cpu_memory_usage``). Summed in order of start time they give the allocated level; its
  peak above the level at the start is the value returned. The granularity is one operator: a
  buffer an operator allocates and frees before it returns is not seen (checked against the
  profiler's raw allocation events: identical for the no-grad forward passes, about 2% lower for a
  training step). Nothing is silenced: the profiler prints two lines (``profiler_start``,
  ``profiler_stop``) to stderr each time it runs, so :func:`peak_bytes_many` measures several
  pieces of work in one profiler session, each one starting at an empty
  ``torch.profiler.record_function`` marker (the work itself runs outside it: frees made inside a
  ``record_function`` lose their time stamp).
  (``tracemalloc`` cannot see torch's allocator, and the process's peak RSS cannot be reset.)

:func:`training_memory` and :func:`inference_memory` use it on one training step and one
no-grad forward pass.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .data import sample_batch
from .distributed import Runtime
from .model import GPT
from .train import TrainConfig, make_optimizer, train_step

__all__ = [
    "MEMORY_NOTE",
    "inference_memory",
    "inference_memory_many",
    "peak_bytes",
    "peak_bytes_many",
    "training_memory",
]

MEMORY_NOTE = (
    "tensor bytes allocated by PyTorch (CPU: public torch.profiler events, per-operator allocation changes; "
    "CUDA: max_memory_allocated), "
    "not process RSS. train: param_bytes + optimizer_state_bytes (AdamW moments) + step_peak_bytes (peak extra "
    "allocation during one training step at train_len, batch_size windows). inference_peak_bytes: peak extra "
    "allocation of one no-grad forward over eval_tokens_per_batch tokens at each eval length (null: cannot run)."
)


def _level_trace(prof: torch.profiler.profile) -> list[tuple[float, int]]:
    """``(start_us, bytes)`` of every event's own allocation change, in time order."""
    changes = [
        (e.time_range.start, int(e.self_cpu_memory_usage))
        for e in prof.events()
        if e.self_cpu_memory_usage and not e.name.startswith(_LABEL)
    ]
    changes.sort(key=lambda c: c[0])  # stable: events at the same instant keep their order
    return changes


_LABEL = "posviz.lab.memory:"


def peak_bytes_many(work: dict[str, Callable[[], object]], device: torch.device) -> dict[str, int]:
    """Peak bytes of tensor memory allocated while each ``work[name]()`` runs, above the level at its start.

    On the CPU all of them run in one profiler session (see the module docstring); on CUDA each is
    measured with ``max_memory_allocated``.
    """
    device = torch.device(device)
    if device.type == "cuda":
        return {name: peak_bytes(fn, device) for name, fn in work.items()}
    from torch.profiler import ProfilerActivity, profile, record_function

    prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
    prof.start()
    try:
        for name, fn in work.items():
            with record_function(_LABEL + name):  # a marker: the start of this piece of work
                pass
            fn()
        with record_function(_LABEL + "(end)"):
            pass
    finally:
        prof.stop()
    marks = sorted((e.time_range.start, e.name[len(_LABEL) :]) for e in prof.events() if e.name.startswith(_LABEL))
    starts = {name: t for t, name in marks}
    ends = {name: marks[i + 1][0] for i, (_, name) in enumerate(marks[:-1])}
    changes = _level_trace(prof)
    out = {}
    for name in work:
        level = peak = 0
        for t, nbytes in changes:
            if t < starts[name]:
                continue
            if t >= ends[name]:
                break
            level += nbytes
            peak = max(peak, level)
        out[name] = int(peak)
    return out


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
    return peak_bytes_many({"work": fn}, device)["work"]


def training_memory(
    model: GPT, cfg: TrainConfig, tokens: torch.Tensor, seed: int = 0, runtime: Runtime | None = None
) -> dict[str, int]:
    """Memory of one training step (forward, backward, clipping, AdamW update) at the training length.

    With a ``runtime`` of several processes the step is one rank's (``batch_size / world_size``
    windows, no gradient all-reduce), under its precision.

    Returns ``param_bytes``, ``optimizer_state_bytes`` (AdamW's two moments, created by one
    untimed warm-up step), ``step_peak_bytes`` (peak extra allocation during the measured step:
    activations, gradients, temporaries) and ``total_bytes`` (the sum of the three). ``model``
    is updated by the two steps: pass a throw-away copy.
    """
    device = next(model.parameters()).device
    rt = runtime if runtime is not None else Runtime(device=device)
    generator = torch.Generator().manual_seed(seed)
    optimizer = make_optimizer(model, cfg)
    model.train()
    batch = len(range(cfg.batch_size)[rt.shard(cfg.batch_size)])  # one rank's windows
    x, y = sample_batch(tokens, batch, model.config.block_size, generator)
    x, y = x.to(device), y.to(device)
    train_step(model, optimizer, x, y, cfg.grad_clip, rt.autocast())  # creates the optimizer state
    optimizer.zero_grad(set_to_none=True)
    step = peak_bytes(lambda: train_step(model, optimizer, x, y, cfg.grad_clip, rt.autocast()), device)
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


def _forward(model: GPT, x: torch.Tensor, rt: Runtime) -> torch.Tensor:
    with rt.autocast():
        return model(x)  # (b, L, vocab)


@torch.no_grad()
def inference_memory(model: GPT, length: int, tokens_per_batch: int) -> int | None:
    """Peak extra bytes of a no-grad forward of ``tokens_per_batch // length`` windows of ``length``.

    ``None`` when the model cannot run at that length (a learned table too short).
    """
    return inference_memory_many(model, [length], tokens_per_batch)[0]


@torch.no_grad()
def inference_memory_many(
    model: GPT, lengths: list[int], tokens_per_batch: int, runtime: Runtime | None = None
) -> list[int | None]:
    """:func:`inference_memory` at every length, in one profiler session on the CPU (under the
    precision of ``runtime``, default float32)."""
    device = next(model.parameters()).device
    rt = runtime if runtime is not None else Runtime(device=device)
    model.eval()
    runnable = [n for n in lengths if model.config.method != "learned" or n <= model.config.block_size]
    work = {}
    for n in runnable:
        x = torch.zeros(max(1, tokens_per_batch // n), n, dtype=torch.long, device=device)  # (b, L)
        work[str(n)] = lambda x=x: _forward(model, x, rt)
    peaks = peak_bytes_many(work, device) if work else {}
    return [peaks.get(str(n)) for n in lengths]
