r"""Benchmark: posviz against widely used implementations, the memory-bound floor and the sliders.

Run ``python -m posviz.bench`` (about 3 minutes on 2 cores; ``--quick`` for a smoke run,
``--book`` to also time a clean and a cached book build). In one process it measures, for each
operation at realistic sizes:

* the median time of posviz and of the reference implementation, from **interleaved** repeats
  (posviz, reference, copy, posviz, reference, copy, ...), and their ratio
  :math:`t_\text{posviz} / t_\text{ref}` (≤ 1 means posviz is at least as fast); on the CPU,
  glibc keeps freed memory for reuse (:func:`keep_freed_memory`), so that a timing is the
  computation's, not the kernel's page faults for a fresh block;
* for elementwise operations, the ratio to the memory-bound floor: a plain ``clone()`` of a tensor
  of the output's size, :math:`t_\text{posviz} / t_\text{copy}`;
* the peak extra memory of each call: on CUDA ``torch.cuda.max_memory_allocated`` minus the
  memory held before the call; on the CPU, in a fresh child process that builds the inputs and
  warms up, the peak resident set size (``VmHWM``, reset through ``/proc/self/clear_refs``)
  during one call minus the resident size before it, with glibc told to return large blocks
  to the system (``MALLOC_MMAP_THRESHOLD_``) so that freed memory is not counted as held;
* the time from a control change to updated figure data for every live explorer in
  ``posviz.widgets`` (the control's value is set programmatically; the callback runs
  synchronously), median over the control's values.

Results are printed as a table and written as JSON and Markdown (``--out``, default
``benchmarks/``); ``book/performance.md`` shows the committed Markdown.

References (test-only dependencies): Hugging Face ``transformers`` (LLaMA's RoPE, T5's
bucketing, the eager attention of its models, DistilBERT's sinusoids), ``rotary-embedding-torch``
(interleaved RoPE) and ``x-transformers`` (ALiBi bias; its cache is cleared before each call so
that the computation, not a cache hit, is timed).
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import inspect
import json
import os
import pkgutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from . import bench_report
from ._runtime import machine_info, synchronize
from .bench_cases import Case, Fn, all_cases


@dataclass
class Row:
    op: str
    size: str
    reference: str
    posviz_ms: float
    reference_ms: float | None
    copy_ms: float | None
    ratio_reference: float | None
    ratio_copy: float | None
    posviz_peak_mib: float | None = None
    reference_peak_mib: float | None = None
    repeats: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# Measuring


def _time(fn: Fn, device: torch.device) -> float:
    synchronize(device)
    start = time.perf_counter()
    out = fn()
    synchronize(device)
    elapsed = time.perf_counter() - start
    del out
    return elapsed


def _repeats_for(seconds_per_call: float, budget_s: float, lo: int = 3, hi: int = 25) -> int:
    return max(lo, min(hi, int(budget_s / max(seconds_per_call, 1e-6))))


def keep_freed_memory() -> bool:
    """Tell glibc to serve every block from its heap and keep freed memory there (``mallopt``:
    no ``mmap`` threshold and no trimming below 1 GiB), so that a tensor allocated by a timed
    call reuses memory already mapped. By default, a block over 32 MiB is mapped afresh at each
    allocation and the first write to each page faults: between two runs of this benchmark, the
    same copy of a 32 MiB tensor took 2.9 ms and 29 ms, as earlier cases had left the heap.
    ``False`` (nothing changed) where the C library has no ``mallopt``."""
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # glibc's malloc.h
    return bool(mallopt(m_mmap_threshold, 1 << 30)) and bool(mallopt(m_trim_threshold, 1 << 30))


def measure(case: Case, device: torch.device, budget_s: float) -> Row:
    """Interleaved repeats of posviz, reference and copy; medians and ratios."""
    ours, ref, numel = case.setup(device)
    floor_src = torch.empty(numel, device=device).normal_() if case.elementwise else None
    copy = (lambda: floor_src.clone()) if floor_src is not None else None
    fns = {"posviz": ours, "reference": ref, "copy": copy}
    fns = {k: f for k, f in fns.items() if f is not None}
    first = {k: _time(f, device) for k, f in fns.items()}  # warm-up (caches, allocator)
    repeats = _repeats_for(sum(first.values()), budget_s)
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            times[k].append(_time(f, device))
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    return Row(
        op=case.op,
        size=case.size,
        reference=case.reference,
        posviz_ms=med["posviz"],
        reference_ms=med.get("reference"),
        copy_ms=med.get("copy"),
        ratio_reference=med["posviz"] / med["reference"] if "reference" in med else None,
        ratio_copy=med["posviz"] / med["copy"] if "copy" in med else None,
        repeats=repeats,
    )


def _peak_in_child(index: int, which: str, quick: bool, device: str) -> float | None:
    """Peak extra memory (MiB) of one call, measured in a fresh process."""
    code = (
        "import sys, warnings; warnings.filterwarnings('ignore'); import posviz.bench as b; "
        f"print(b._child_peak({index}, {which!r}, {quick!r}, {device!r}))"
    )
    env = dict(os.environ, OMP_NUM_THREADS=str(torch.get_num_threads()), MALLOC_MMAP_THRESHOLD_="65536")
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
        return float(out.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError):
        return None


def _status_kib(field_name: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field_name} not in /proc/self/status")


def _child_peak(index: int, which: str, quick: bool, device: str) -> float:
    import gc

    dev = torch.device(device)
    ours, ref, _ = all_cases(quick)[index].setup(dev)
    fn = ours if which == "posviz" else ref
    fn()  # warm-up: caches filled, as in the timed runs (the result is dropped at once)
    gc.collect()
    if dev.type == "cuda":
        synchronize(dev)
        torch.cuda.reset_peak_memory_stats(dev)
        before = torch.cuda.memory_allocated(dev)
        out = fn()
        synchronize(dev)
        return (torch.cuda.max_memory_allocated(dev) - before) / 2**20
    before = _status_kib("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak (VmHWM) to the current size
    out = fn()
    peak = _status_kib("VmHWM")
    del out
    return max(peak - before, 0) / 1024


# ---------------------------------------------------------------------------------------------
# Explorers


def explorer_builders() -> dict[str, Callable[[], Any]]:
    """Every ``*_explorer`` function in the ``posviz.widgets`` submodules."""
    import posviz.widgets as widgets_pkg

    found: dict[str, Callable[[], Any]] = {}
    for info in pkgutil.iter_modules(widgets_pkg.__path__):
        module = importlib.import_module(f"posviz.widgets.{info.name}")
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if name.endswith("_explorer") and fn.__module__ == module.__name__:
                found[f"{info.name}.{name}"] = fn
    return found


def _control_values(control: Any) -> list[Any]:
    """A handful of values across a control's range (its own options for dropdowns)."""
    if hasattr(control, "options") and control.options:
        opts = list(control.options)
        return [o[1] if isinstance(o, tuple) else o for o in opts][:6]
    if isinstance(control.value, bool):
        return [not control.value, control.value]
    lo, hi = getattr(control, "min", None), getattr(control, "max", None)
    if lo is None or hi is None:
        return []
    step = getattr(control, "step", None) or 1
    values = [lo + (hi - lo) * f for f in (0.0, 0.25, 0.5, 0.75, 1.0)] + [control.value]
    if isinstance(control.value, int):
        values = [int(round((v - lo) / step) * step + lo) for v in values]
    return values


def measure_explorers() -> list[dict[str, Any]]:
    rows = []
    for name, build in explorer_builders().items():
        ex = build()
        per_control = {}
        for key, control in ex.controls.items():
            default = control.value
            samples = []
            for value in _control_values(control):
                if value == control.value:
                    continue
                start = time.perf_counter()
                control.value = value
                samples.append((time.perf_counter() - start) * 1e3)
            control.value = default
            if samples:
                per_control[key] = statistics.median(samples)
        all_ms = list(per_control.values())
        rows.append(
            {
                "explorer": name,
                "median_ms": statistics.median(all_ms) if all_ms else None,
                "worst_control": max(per_control, key=per_control.get) if per_control else None,
                "worst_control_ms": max(all_ms) if all_ms else None,
                "per_control_ms": per_control,
            }
        )
    return rows


# ---------------------------------------------------------------------------------------------
# Book build


def time_book_build(root: Path, jobs: int | None = None) -> dict[str, float]:
    """``make book``'s build (``tools/build_book.py``: both editions, ``jobs`` Sphinx processes,
    default one per core, at most 4, as the Makefile's ``JOBS``) into a temporary build folder:
    clean (every chapter executed), then again with nothing changed (the execution cache serves
    every chapter). The checkout's ``_build`` is left alone."""
    script = root / "tools" / "build_book.py"
    if not script.exists():
        raise RuntimeError(f"--book times the book build of a checkout of the book: {script} is missing")
    jobs = min(os.cpu_count() or 1, 4) if jobs is None else jobs
    out: dict[str, float] = {"jobs": jobs}
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "POSVIZ_BUILD": tmp}
        for label in ("clean_build_s", "cached_rebuild_s"):
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, str(script), "--jobs", str(jobs)], cwd=root, env=env, capture_output=True, text=True
            )
            if done.returncode:
                raise RuntimeError(f"the book build failed ({label}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
            out[label] = time.perf_counter() - start
    return out


# ---------------------------------------------------------------------------------------------
# Report


def machine() -> dict[str, Any]:
    """What the numbers were measured on (:func:`posviz._runtime.machine_info`)."""
    return machine_info()


markdown = bench_report.markdown  # the report (posviz/bench_report.py)


def run(
    quick: bool = False,
    devices: list[str] | None = None,
    memory: bool = True,
    book: bool = False,
    explorers: bool = True,
    budget_s: float = 1.5,
    progress: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the whole benchmark and return the result dictionary (see the module docstring)."""
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    if devices is None:
        devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    result: dict[str, Any] = {
        "machine": {**machine(), "freed_memory_kept": "cpu" in devices and keep_freed_memory()},
        "date": time.strftime("%Y-%m-%d"),
        "quick": quick,
        "operations": {},
    }
    cases = all_cases(quick)
    for device in devices:
        dev = torch.device(device)
        rows = []
        for i, case in enumerate(cases):
            progress(f"[{device}] {case.op} {case.size}")
            row = measure(case, dev, budget_s)
            if memory:
                row.posviz_peak_mib = _peak_in_child(i, "posviz", quick, device)
                if case.reference:
                    row.reference_peak_mib = _peak_in_child(i, "reference", quick, device)
            rows.append(asdict(row))
        result["operations"][device] = rows
    if explorers:
        progress("explorers")
        result["explorers"] = measure_explorers()
    if book:
        progress("book build (clean, then cached)")
        result["book"] = time_book_build(Path(__file__).resolve().parents[1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m posviz.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one small size per operation (a smoke run)")
    parser.add_argument("--device", action="append", choices=["cpu", "cuda"], help="default: cpu, and cuda if present")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory child processes")
    parser.add_argument("--no-explorers", action="store_true", help="skip the live-explorer latencies")
    parser.add_argument("--book", action="store_true", help="also time a clean and a cached book build")
    parser.add_argument("--out", default="benchmarks", help="folder for results.json and results.md")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    result = run(
        quick=args.quick,
        devices=args.device,
        memory=not args.no_memory,
        book=args.book,
        explorers=not args.no_explorers,
        progress=lambda s: print(s, file=sys.stderr, flush=True),
    )
    result["benchmark_s"] = time.perf_counter() - start
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    table = markdown(result)
    (out / "results.md").write_text(table + "\n")
    print(table)
    print(f"benchmark took {result['benchmark_s']:.0f} s; wrote {out / 'results.json'} and {out / 'results.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
