"""``python -m posviz.lab``: run the train-short/test-long comparison and write JSON + HTML figures.

Examples::

    python -m posviz.lab --quick                  # ~6 minutes on one busy CPU core -> results/extrapolation-quick/
    python -m posviz.lab --threads 1 --publish    # the full run the book shows (30 runs; 81 min, 1 busy thread)
    python -m posviz.lab --methods rope alibi --seeds 0 1 --train-len 32 --out /tmp/lab
    python -m posviz.lab --replot --out /tmp/lab  # redraw the HTML from /tmp/lab/results.json

``--publish`` refuses anything but the full configuration (:func:`posviz.lab.experiment.check_publishable`:
only ``--device``, ``--threads``, ``--checkpoints``, ``--out`` and the display options may be
given) and writes the results JSON into the package, ``posviz/lab/published/extrapolation.json``
(:data:`posviz.lab.results.PUBLISHED`, read by :func:`posviz.lab.load_published`): the one copy
the book and the installed package use. It writes HTML figures only when ``--out`` is given.
Without ``--publish`` the JSON and the HTML figures go to ``--out`` (default
``results/extrapolation-quick`` or ``results/extrapolation-full``). The HTML files embed
plotly.js (about 4.7 MB each, they open offline); ``--plotlyjs cdn`` makes small files that load
it from a CDN instead.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ["build_parser", "main"]


def _methods(text: str) -> list[str]:
    return [m for m in text.replace(",", " ").split() if m]


def build_parser() -> argparse.ArgumentParser:
    from .model import ALL_METHODS

    p = argparse.ArgumentParser(
        prog="python -m posviz.lab",
        description="Train small byte-level language models at one length with each position method, "
        "evaluate held-out perplexity at 1x-16x that length, and measure cost.",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="small model, 250 steps, 2 seeds, no learning-rate search (~2 min on 2 CPU cores)",
    )
    p.add_argument(
        "--methods",
        nargs="+",
        type=_methods,
        default=None,
        metavar="METHOD",
        help=f"methods to run (default: all): {' '.join(ALL_METHODS)}",
    )
    p.add_argument("--seeds", nargs="+", type=int, default=None, help="seeds (default: 0 1 2; quick: 0 1)")
    p.add_argument("--train-len", type=int, default=64, help="training length in tokens (default 64)")
    p.add_argument(
        "--eval-multipliers",
        nargs="+",
        type=int,
        default=None,
        help="evaluation lengths as multiples of --train-len (default 1 2 4 8 16)",
    )
    p.add_argument("--steps", type=int, default=None, help="override the number of training steps")
    p.add_argument(
        "--device",
        default=None,
        help="torch device (default: cuda when torch.cuda.is_available(), else cpu; chosen here, not by "
        "posviz.default_device)",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch.set_num_threads (default: torch's choice). Use 1 on a shared machine: with 2 threads "
        "on 2 busy cores training slowed down ~10x; results are identical for the same thread count",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output folder for results.json and the HTML figures (default results/extrapolation-full, "
        "or results/extrapolation-quick with --quick; with --publish: no folder unless given)",
    )
    p.add_argument(
        "--publish",
        action="store_true",
        help="full runs only: write the results JSON into the package (posviz/lab/published/"
        "extrapolation.json), the copy the book shows; with --replot: redraw from that copy",
    )
    p.add_argument(
        "--plotlyjs",
        choices=("inline", "cdn"),
        default="inline",
        help="HTML figures embed plotly.js (default: ~4.7 MB each, open offline) or load it from a CDN",
    )
    p.add_argument("--checkpoints", action="store_true", help="also save every trained model under OUT/checkpoints")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--replot",
        action="store_true",
        help="run nothing: redraw the HTML figures (and print the tables) from OUT/results.json",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # before CUDA initialises: deterministic cuBLAS (harmless on the CPU)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

    import torch

    from .experiment import check_publishable, full_config, quick_config
    from .figures import write_figures
    from .results import format_tables, save_results
    from .train import TrainConfig

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    overrides: dict = {"train_len": args.train_len, "device": str(device)}
    if args.methods is not None:
        overrides["methods"] = [m for group in args.methods for m in group]
    if args.seeds is not None:
        overrides["seeds"] = args.seeds
    if args.eval_multipliers is not None:
        overrides["eval_multipliers"] = args.eval_multipliers
    make = quick_config if args.quick else full_config
    try:
        cfg = make(**overrides)
        if args.steps is not None:
            t = cfg.train.to_dict()
            t["steps"] = args.steps
            t["warmup_steps"] = min(t["warmup_steps"], max(1, args.steps // 10))
            cfg.train = TrainConfig(**t)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.publish and args.quick:
        print("error: --publish takes a full run only (the book shows it); drop --quick", file=sys.stderr)
        return 2
    if args.publish and not args.replot:
        try:
            check_publishable(cfg)
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    out = args.out
    if out is None and not args.publish:
        out = Path("results/extrapolation-quick" if args.quick else "results/extrapolation-full")
    plotlyjs: str | bool = True if args.plotlyjs == "inline" else "cdn"
    if args.replot:
        from .results import PUBLISHED, load_results

        source = PUBLISHED if args.publish else out / "results.json"
        results = load_results(source)
        html = write_figures(results, out or Path("results/extrapolation-full"), include_plotlyjs=plotlyjs)
        print(format_tables(results))
        print(f"\nread {source}; wrote {', '.join(str(p) for p in html)}", file=sys.stderr)
        return 0
    if args.checkpoints:
        cfg.checkpoint_dir = str((out or Path("results/extrapolation-full")) / "checkpoints")

    print(
        f"posviz.lab ({cfg.mode}): methods {cfg.reported_methods()}, seeds {cfg.seeds}, train length "
        f"{cfg.train_len}, eval lengths {cfg.eval_lengths}, device {cfg.device}, "
        f"{torch.get_num_threads()} threads",
        file=sys.stderr,
    )
    t0 = time.perf_counter()
    from .experiment import run_experiment

    results = run_experiment(cfg, progress=not args.no_progress)
    written = []
    if args.publish:
        from .results import PUBLISHED

        written.append(save_results(results, PUBLISHED))
    if out is not None:
        written.append(save_results(results, out / "results.json"))
        written += write_figures(results, out, include_plotlyjs=plotlyjs)
    print(format_tables(results))
    print(f"\nwrote {', '.join(str(p) for p in written)} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0
