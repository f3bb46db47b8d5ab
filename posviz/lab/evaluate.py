r"""Held-out perplexity at several lengths, and inference time, in one pass per length.

For length :math:`L`, the held-out tokens are cut into non-overlapping windows
(:func:`posviz.lab.data.eval_windows`); every token of every window is scored, so the early
tokens of a window see little context (the ALiBi paper's "nonoverlapping" evaluation; its
sliding-window evaluation would instead score only the last tokens). Then

.. math::

    \bar{\ell}_L = \frac{1}{N}\sum_{w}\sum_{t=1}^{L} -\log p(x_{w,t+1}\mid x_{w,\le t}), \qquad
    \text{ppl}_L = \exp \bar{\ell}_L ,

with :math:`N` the same number of scored tokens at every length. A ``learned`` model has no
position row past its table: its forward raises :class:`posviz.lab.model.BeyondLearnedTable` and
the length is reported as "cannot run" with that message, never as a number. Only that exception
type: any other error (an ``IndexError`` from a bug, say) propagates.

Inference throughput at :math:`L` is :math:`1 / \operatorname{median}_b (t_b / n_b)`: the median
over batches of the wall time per token of the model's no-grad forward pass (the median resists
other processes that share the CPU). The same with CPU time (``time.process_time``, all threads
of the process) gives tokens per CPU second, which a busy shared machine disturbs far less (it
does not count time spent waiting for a core; on CUDA it misses the GPU's time). Batches hold
about ``tokens_per_batch`` tokens (i.e.
``tokens_per_batch // L`` windows, default 1024 tokens: small batches keep the attention maps
below glibc's mmap threshold, which made larger batches page-fault-bound on the CPU); one
untimed warm-up batch runs first.

With several processes (:class:`posviz.lab.distributed.Runtime`) rank :math:`r` of :math:`W`
scores batches :math:`r, r+W, \dots`; the float64 loss sums are added across ranks, so every rank
returns the perplexity of all the scored tokens, and the throughputs are the sums of the ranks'
(they run at the same time). One process scores every batch in order, as before.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass

import torch
from torch.nn import functional as F

from .._runtime import synchronize
from .data import eval_windows
from .distributed import Runtime
from .model import GPT, BeyondLearnedTable

__all__ = ["LengthResult", "evaluate", "evaluate_length", "mean_loss"]


@dataclass
class LengthResult:
    length: int
    loss: float | None  # mean nats/token; None when it cannot run
    perplexity: float | None
    tokens_per_s: float | None  # inference throughput (wall clock)
    cannot_run: str | None = None  # the reason, when loss is None
    tokens_per_cpu_s: float | None = None  # inference throughput per CPU second (all threads)
    scored_tokens: int = 0


@torch.no_grad()
def evaluate_length(
    model: GPT,
    tokens: torch.Tensor,
    length: int,
    max_length: int,
    tokens_per_batch: int = 1024,
    max_tokens: int | None = None,
    runtime: Runtime | None = None,
) -> LengthResult:
    """Perplexity and inference throughput of ``model`` at one evaluation ``length`` (``runtime``:
    processes and precision; default one process, float32)."""
    device = next(model.parameters()).device
    rt = runtime if runtime is not None else Runtime(device=device)
    model.eval()
    x, y = eval_windows(tokens, length, max_length, max_tokens)  # (W, L) each
    per_batch = max(1, tokens_per_batch // length)
    try:
        with rt.autocast():
            model(x[:per_batch].to(device))  # warm-up (also the "can it run?" check)
    except BeyondLearnedTable as err:  # a learned table has no row for these positions
        return LengthResult(length, None, None, None, cannot_run=str(err), scored_tokens=int(y.numel()))
    synchronize(device)
    total = torch.zeros((), dtype=torch.float64, device=device)
    seconds_per_token, cpu_seconds_per_token = [], []
    for j in rt.mine(math.ceil(len(x) / per_batch)):  # every batch with one process
        i = j * per_batch
        t0, c0 = time.perf_counter(), time.process_time()
        xb, yb = x[i : i + per_batch].to(device), y[i : i + per_batch].to(device)  # (b, L)
        with rt.autocast():
            logits = model(xb)  # (b, L, vocab)
        synchronize(device)
        seconds_per_token.append((time.perf_counter() - t0) / xb.numel())
        cpu_seconds_per_token.append((time.process_time() - c0) / xb.numel())
        total += F.cross_entropy(logits.flatten(0, 1).float(), yb.flatten(), reduction="sum").double()
    rt.all_reduce_sum(total)
    loss = float(total) / y.numel()
    speed = [
        1.0 / statistics.median(seconds_per_token) if seconds_per_token else 0.0,
        1.0 / max(statistics.median(cpu_seconds_per_token), 1e-12) if cpu_seconds_per_token else 0.0,
    ]
    if rt.distributed:  # ranks run at the same time: their throughputs add up
        speed = rt.all_reduce_sum(torch.tensor(speed, dtype=torch.float64, device=device)).tolist()
    return LengthResult(
        length=length,
        loss=loss,
        perplexity=math.exp(loss),
        tokens_per_s=speed[0],
        tokens_per_cpu_s=speed[1],
        scored_tokens=int(y.numel()),
    )


@torch.no_grad()
def mean_loss(
    model: GPT, x: torch.Tensor, y: torch.Tensor, tokens_per_batch: int = 1024, runtime: Runtime | None = None
) -> float:
    """Mean next-token cross-entropy (nats) of ``model`` over every token of windows ``x, y`` ``(W, L)``
    (the validation loss), in batches of about ``tokens_per_batch`` tokens, the last one partial;
    sharded over the processes of ``runtime`` like :func:`evaluate_length`."""
    device = next(model.parameters()).device
    rt = runtime if runtime is not None else Runtime(device=device)
    model.eval()
    per_batch = max(1, tokens_per_batch // x.shape[1])
    total = torch.zeros((), dtype=torch.float64, device=device)
    for j in rt.mine(math.ceil(len(x) / per_batch)):
        i = j * per_batch
        xb, yb = x[i : i + per_batch].to(device), y[i : i + per_batch].to(device)  # (b, L)
        with rt.autocast():
            logits = model(xb)  # (b, L, vocab)
        total += F.cross_entropy(logits.flatten(0, 1).float(), yb.flatten(), reduction="sum").double()
    rt.all_reduce_sum(total)
    return float(total) / y.numel()


def evaluate(
    model: GPT,
    tokens: torch.Tensor,
    lengths: list[int],
    tokens_per_batch: int = 1024,
    max_tokens: int | None = None,
    runtime: Runtime | None = None,
) -> list[LengthResult]:
    """:func:`evaluate_length` at every length; ``max(lengths)`` (and ``max_tokens``) fix the scored tokens."""
    max_length = max(lengths)
    return [
        evaluate_length(model, tokens, length, max_length, tokens_per_batch, max_tokens, runtime) for length in lengths
    ]
