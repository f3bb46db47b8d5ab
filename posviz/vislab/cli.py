"""``python -m posviz.vislab``: train the tiny ViTs at one grid, evaluate at larger ones, write JSON + HTML.

Examples::

    python -m posviz.vislab --quick --threads 1     # smoke run (114 s CPU, measured) -> results/resolution-quick/
    python -m posviz.vislab --workers 2 --publish   # the full run the book shows (854 s wall, measured)
    python -m posviz.vislab --methods none rope-axial --seeds 0 --eval-grids 8 16 --out /tmp/vislab

``--workers N`` runs the training runs in N processes of ``--threads`` torch threads each (default
1); each run's numbers do not depend on N. ``--publish`` refuses anything but the full configuration
(:func:`posviz.vislab.config.check_publishable`) and writes the results into the package,
``posviz/vislab/published/resolution.json`` (:func:`posviz.vislab.load_published` reads it).
Bad values exit with status 2 and a message naming the flag.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    from .positions import METHODS

    p = argparse.ArgumentParser(
        prog="python -m posviz.vislab",
        description="Resolution extrapolation in miniature: tiny ViTs trained on an 8x8 patch grid, evaluated on "
        "larger grids, one per 2-D position method (issue 23).",
    )
    p.add_argument("--quick", action="store_true", help="a smoke run (2 seeds, 120 steps, no lr search)")
    p.add_argument("--methods", nargs="+", metavar="NAME", help=f"methods to train (default: all of {list(METHODS)})")
    p.add_argument("--seeds", nargs="+", type=int, metavar="S", help="seeds (default: 0 1 2; quick: 0 1)")
    p.add_argument("--train-grid", type=int, metavar="G", help="training grid, G x G patches (default 8)")
    p.add_argument("--eval-grids", nargs="+", type=int, metavar="G", help="evaluation grids (default 8 12 16)")
    p.add_argument("--d-model", type=int, help="model width (default 64)")
    p.add_argument("--heads", type=int, help="attention heads (default 4)")
    p.add_argument("--layers", type=int, help="blocks (default 2)")
    p.add_argument("--steps", type=int, help="training steps")
    p.add_argument("--batch-size", type=int, help="images per step")
    p.add_argument("--lr", type=float, help="peak learning rate")
    p.add_argument("--n-heldout", type=int, help="held-out images per grid")
    p.add_argument("--n-validation", type=int, help="validation images (training grid)")
    p.add_argument("--workers", type=int, default=1, help="processes running training runs in parallel (default 1)")
    p.add_argument("--threads", type=int, default=1, help="torch threads per process (default 1)")
    p.add_argument("--out", type=Path, help="output folder (default results/resolution-quick or -full)")
    p.add_argument(
        "--publish", action="store_true", help="write posviz/vislab/published/resolution.json (full run only)"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def _config(args: argparse.Namespace):
    from ..lab.train import TrainConfig
    from .config import full_config, quick_config

    preset = quick_config if args.quick else full_config
    base = preset()
    overrides: dict = {"workers": args.workers, "threads": args.threads}
    for flag, key in (("methods", "methods"), ("seeds", "seeds"), ("train_grid", "train_grid"),
                      ("eval_grids", "eval_grids"), ("n_heldout", "n_heldout"), ("n_validation", "n_validation")):
        if getattr(args, flag) is not None:
            overrides[key] = getattr(args, flag)
    if args.train_grid is not None and args.eval_grids is None:
        overrides["eval_grids"] = sorted({args.train_grid, *base.eval_grids})
    model = dict(base.model)
    for flag, key in (("d_model", "n_embd"), ("heads", "n_head"), ("layers", "n_layer")):
        if getattr(args, flag) is not None:
            model[key] = getattr(args, flag)
    overrides["model"] = model
    train = base.train.to_dict()
    for flag, key in (("steps", "steps"), ("batch_size", "batch_size"), ("lr", "lr")):
        if getattr(args, flag) is not None:
            train[key] = getattr(args, flag)
    if args.steps is not None:
        train["warmup_steps"] = min(train["warmup_steps"], max(0, args.steps // 10))
    overrides["train"] = TrainConfig(**train)
    return preset(**overrides)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)

    def fail(message: str) -> int:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: {message}", file=sys.stderr)
        return 2

    try:
        cfg = _config(args)
    except (TypeError, ValueError) as err:
        return fail(str(err))
    if args.publish:
        if args.quick:
            return fail("--publish takes the full run only; drop --quick")
        from .config import check_publishable

        try:
            check_publishable(cfg)
        except ValueError as err:
            return fail(str(err))
    import torch

    from .experiment import run_experiment
    from .figures import accuracy_figure, format_tables
    from .results import PUBLISHED, save_results

    torch.set_num_threads(cfg.threads)
    results = run_experiment(cfg, progress=not args.no_progress)
    out = args.out if args.out is not None else Path("results") / f"resolution-{cfg.mode}"
    written = [save_results(results, out / "results.json")]
    if args.publish:
        written.append(save_results(results, PUBLISHED))
    html = out / "accuracy.html"
    accuracy_figure(results).write_html(html, include_plotlyjs="cdn")
    written.append(html)
    print(format_tables(results))
    print(f"\nwall time {results['wall_seconds']:.0f} s ({cfg.workers} worker(s) x {cfg.threads} thread(s))")
    for path in written:
        print(f"wrote {path}")
    return 0
