"""Timing and machine facts shared by the benchmark, the cost table and the lab.

One place for three things every measurement needs: waiting for the device
(:func:`synchronize`), a robust median of repeated wall-clock runs (:func:`median_seconds`) and
what the numbers were measured on (:func:`machine_info`).
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["cpu_name", "machine_info", "median_seconds", "synchronize"]


def synchronize(device: torch.device | str) -> None:
    """Wait until the work queued on ``device`` has finished (CUDA); a no-op on the CPU."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_seconds(fn: Callable[[], object], repeats: int, device: torch.device | str) -> float:
    """Median wall-clock seconds of ``fn()`` after one warm-up call, device synchronised.

    At least ``repeats`` runs, and more (up to 50) until they add up to 0.1 s, so that short calls
    get enough samples for a stable median.
    """
    fn()  # warm-up: allocator, kernels, caches
    synchronize(device)
    times: list[float] = []
    while len(times) < repeats or (sum(times) < 0.1 and len(times) < 50):
        start = time.perf_counter()
        fn()
        synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info(device: torch.device | str | None = None) -> dict[str, Any]:
    """Platform, CPU, cores (all and usable), torch version and threads, device and GPU name."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        usable = os.cpu_count()
    dev = None if device is None else torch.device(device)
    gpu = None
    if dev is not None and dev.type == "cuda":
        gpu = torch.cuda.get_device_name(dev)
    elif dev is None and torch.cuda.is_available():
        gpu = torch.cuda.get_device_name()
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": cpu_name(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "device": None if dev is None else str(dev),
        "gpu": gpu,
    }
