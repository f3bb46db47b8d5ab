r"""How a lab run executes: device, processes, precision, attention kernel (not *what* it computes).

A :class:`Runtime` is handed to :func:`posviz.lab.train.train`, :func:`posviz.lab.evaluate.evaluate`
and :func:`posviz.lab.evaluate.mean_loss`; the default (``Runtime()``: one process on the CPU,
float32, :func:`posviz.attention`) is the path that produced the published results, and with it
those functions compute exactly what they computed before this module existed.

**Several processes** (``torchrun --nproc_per_node=N -m posviz.lab ...``, or several machines with
torchrun's ``--nnodes``/``--rdzv-*`` flags): :func:`init_distributed` reads torchrun's
``RANK``/``WORLD_SIZE``/``LOCAL_RANK`` and starts a process group, gloo on the CPU and nccl on
CUDA (one GPU per process, ``cuda:LOCAL_RANK``). Then

* **training** is data-parallel with :class:`~torch.nn.parallel.DistributedDataParallel`: every
  rank draws the *same* global batch of ``batch_size`` windows from the same seeded generator and
  keeps its own contiguous shard of ``batch_size / world_size`` windows (:meth:`Runtime.shard`);
  DDP averages the gradients, so with equal shards the update is the one-process update (mean
  loss over the global batch) up to floating-point summation order. The schedule, the global
  batch and the recorded loss (averaged over ranks) stay those of one process;
* **evaluation** is sharded by batches of windows: rank :math:`r` scores batches
  :math:`r, r + W, r + 2W, \dots`; the summed losses (float64) are added across ranks, so every
  rank gets the perplexity of all scored tokens. Throughput is the sum of the ranks' throughputs
  (they run at the same time);
* only rank 0 draws the progress bar, prints and writes files (:mod:`posviz.lab.cli`).

**CUDA**: ``precision="bf16"`` runs forward passes under ``torch.autocast(dtype=torch.bfloat16)``
(weights, optimizer state and the loss stay float32); ``attention="sdpa"`` uses
:func:`torch.nn.functional.scaled_dot_product_attention`, with the method's score bias plus the
causal mask as the float ``attn_mask`` (ALiBi, T5) or the fused ``is_causal=True`` path when the
method has no bias (NoPE, sinusoidal, learned, RoPE); Shaw, whose bias depends on the query and
which also adds to the values, keeps :func:`posviz.attention`. ``compile=True`` wraps the
training forward in :func:`torch.compile`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch

__all__ = ["PRECISIONS", "ATTENTIONS", "Runtime", "env_world", "init_distributed", "shutdown_distributed"]

PRECISIONS = ("fp32", "bf16")
ATTENTIONS = ("posviz", "sdpa")


@dataclass(frozen=True)
class Runtime:
    """Where and how a run executes. ``world_size``/``rank``: the process group (1/0: none)."""

    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    world_size: int = 1
    rank: int = 0
    precision: str = "fp32"  # "fp32" | "bf16" (autocast)
    attention: str = "posviz"  # "posviz" | "sdpa"
    compile: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "device", torch.device(self.device))
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        if self.attention not in ATTENTIONS:
            raise ValueError(f"attention must be one of {ATTENTIONS}, got {self.attention!r}")
        if not (0 <= self.rank < self.world_size):
            raise ValueError(f"rank must be in 0..world_size-1 = 0..{self.world_size - 1}, got {self.rank}")

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        """Rank 0: the process that reports and writes."""
        return self.rank == 0

    @property
    def backend(self) -> str | None:
        """``"gloo"`` (CPU) or ``"nccl"`` (CUDA) when distributed, else None."""
        if not self.distributed:
            return None
        return "nccl" if self.device.type == "cuda" else "gloo"

    def autocast(self) -> contextlib.AbstractContextManager:
        """``torch.autocast(device, bfloat16)`` for ``precision="bf16"``, else a no-op context."""
        if self.precision == "bf16":
            return torch.autocast(self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def shard(self, batch_size: int) -> slice:
        """This rank's contiguous share of a global batch of ``batch_size`` windows."""
        if batch_size % self.world_size:
            raise ValueError(
                f"--batch-size {batch_size} must be divisible by the number of processes "
                f"(--nproc_per_node x --nnodes = {self.world_size})"
            )
        per = batch_size // self.world_size
        return slice(self.rank * per, (self.rank + 1) * per)

    def all_reduce_sum(self, t: torch.Tensor) -> torch.Tensor:
        """``t`` summed over ranks, in place (unchanged with one process)."""
        if self.distributed:
            import torch.distributed as dist

            dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return t

    def mine(self, n_items: int) -> Iterator[int]:
        """Indices ``rank, rank + W, ...`` below ``n_items``: this rank's items (all of them with one process)."""
        return iter(range(self.rank, n_items, self.world_size))


def env_world() -> tuple[int, int, int]:
    """``(world_size, rank, local_rank)`` from torchrun's environment (``(1, 0, 0)`` outside torchrun)."""
    return (
        int(os.environ.get("WORLD_SIZE", "1")),
        int(os.environ.get("RANK", "0")),
        int(os.environ.get("LOCAL_RANK", "0")),
    )


def init_distributed(device: str | None = None, **runtime: object) -> Runtime:
    """The :class:`Runtime` of this process; under torchrun, start the process group first.

    ``device``: ``"cpu"``, ``"cuda"`` (under torchrun: ``cuda:LOCAL_RANK``) or None (CUDA when
    available). The backend is gloo on the CPU and nccl on CUDA. ``runtime``: the other
    :class:`Runtime` fields.
    """
    world_size, rank, local_rank = env_world()
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(device)
    if dev.type == "cuda" and world_size > 1:
        dev = torch.device("cuda", local_rank)  # one GPU per process
        torch.cuda.set_device(dev)
    if world_size > 1:
        import torch.distributed as dist

        if not dist.is_initialized():
            backend = "nccl" if dev.type == "cuda" else "gloo"
            dist.init_process_group(backend=backend, **({"device_id": dev} if dev.type == "cuda" else {}))
        world_size, rank = dist.get_world_size(), dist.get_rank()
    return Runtime(device=dev, world_size=world_size, rank=rank, **runtime)  # type: ignore[arg-type]


def shutdown_distributed() -> None:
    """Destroy the process group if one was started (no-op otherwise)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
