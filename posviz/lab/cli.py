"""``python -m posviz.lab``: run the train-short/test-long comparison and write JSON + HTML figures.

Examples::

    python -m posviz.lab --quick --threads 1      # ~1.5 min of CPU time (estimate) -> results/extrapolation-quick/
    python -m posviz.lab --threads 1 --publish    # the full run the book shows: every method (60 runs; the 30
                                                  # of rounds one and two took 81 min on 1 busy thread)
    python -m posviz.lab --methods rope alibi --seeds 0 1 --train-len 32 --out /tmp/lab
    python -m posviz.lab --replot --out /tmp/lab  # redraw the HTML from /tmp/lab/results.json
    python -m posviz.lab --threads 1 --methods rope rope-yarn --merge-into posviz/lab/published/extrapolation.json
                                                  # add a RoPE variant to the published run (rope retrained only)

``--quick`` runs ``posviz.lab.config.QUICK_METHODS``: the classic rows and one round-three method
per family (``rope-random``, ``fire``, ``cope``, ``xpos``), to stay within about 2 minutes of CPU
time; ``--methods`` runs any other (``learned-random``, ``kerple-log``).

Bigger runs, no code to edit::

    python -m posviz.lab --preset gpu --out runs/gpu                       # one GPU, ~10 min (estimate)
    torchrun --standalone --nproc_per_node=8 -m posviz.lab --preset gpu --out runs/gpu8
    torchrun --nnodes=2 --nproc_per_node=8 --rdzv-backend=c10d --rdzv-endpoint=HOST:29500 \\
        --rdzv-id=lab -m posviz.lab --preset gpu --out runs/gpu16             # on each machine
    python -m posviz.lab --preset gpu --corpus book.txt --d-model 512 --layers 8 --heads 8 \\
        --checkpoint-every 200 --out runs/big        # later, after an interruption: the same line + --resume

Under torchrun every process trains on its shard of each global batch (DistributedDataParallel:
gloo on the CPU, nccl on CUDA, one GPU per process) and evaluates its share of the held-out
windows; only rank 0 shows progress and writes files. ``--batch-size`` must be divisible by the
number of processes. On CUDA the forward passes run under bf16 autocast with PyTorch's fused
attention where a method allows (``--precision``, ``--attention``); on the CPU the defaults are
float32 and :func:`posviz.attention`, the path of the published numbers.

``--publish`` refuses anything but the full configuration computed the way the chapter describes,
in float32 through :func:`posviz.attention` without compilation
(:func:`posviz.lab.config.check_publishable`: only ``--device``, ``--threads``, ``--checkpoints``,
``--checkpoint-every``, ``--out``, the number of processes and the display options may be given;
on CUDA add ``--precision fp32 --attention posviz``, since bf16 autocast and SDPA are its defaults there) and
writes the results JSON into the package, ``posviz/lab/published/extrapolation.json``
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


def _positive(kind: type):
    def parse(text: str):
        value = kind(text)
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value

    return parse


def _device(text: str) -> str:
    """``--device``: a torch device string (``cpu``, ``cuda``, ``cuda:1``), checked by torch's own parser."""
    import torch

    try:
        device = torch.device(text)
    except (RuntimeError, ValueError) as err:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a torch device (e.g. cpu, cuda, cuda:1): {str(err).splitlines()[0]}"
        ) from None
    if device.type not in ("cpu", "cuda"):
        raise argparse.ArgumentTypeError(f"the lab runs on cpu or cuda, got {text!r}")
    return text


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from .experiment import PRESETS
    from .model import ALL_METHODS

    p = argparse.ArgumentParser(
        prog="python -m posviz.lab",
        description="Train small byte-level language models at one length with each position method, "
        "evaluate held-out perplexity at 1x-16x that length, and measure cost. Under torchrun "
        "(torchrun --standalone --nproc_per_node=N -m posviz.lab ...) each process trains on its shard of "
        "every batch (DistributedDataParallel: gloo on CPU, nccl on CUDA); only rank 0 writes.",
    )
    run = p.add_argument_group("what to run")
    run.add_argument(
        "--quick",
        action="store_true",
        help="the same as --preset quick: trained at 32 bytes, evaluated at 32-512, d=64, 2 layers, 170 steps "
        "of 16 windows, 2 seeds, no learning-rate search; methods: the 7 classic trained ones, the 6 rope-* "
        "evaluation rows and one round-three method per family (rope-random, fire, cope, xpos; learned-random "
        "and kerple-log only with --methods). Measured with --threads 1 on a busy shared 2-core machine: 143 s "
        "of CPU time at load 8-9 (10 min of wall time); the 13 rows of rounds one and two alone took 112 s there "
        "at load 13-21 and 71 s on a free core, so about 90-105 s of CPU time on a free core (an estimate)",
    )
    run.add_argument(
        "--preset",
        choices=tuple(PRESETS),
        default=None,
        help="full (default: the published run, d=128, 3 layers, 400 steps, 3 seeds, lr search, every method; "
        "its 30 runs of rounds one and two took 81 min of one busy CPU thread, round three adds 30); "
        "quick (see --quick); gpu (one modern GPU in about 10 min, an estimate: trained at "
        "256 bytes, evaluated to 4096, d=384, 6 layers, 10.7M parameters, 2000 steps of 64 windows, 1 seed)",
    )
    run.add_argument(
        "--methods",
        nargs="+",
        type=_methods,
        default=None,
        metavar="METHOD",
        help=f"methods to run (default: all): {' '.join(ALL_METHODS)}",
    )
    run.add_argument("--seeds", nargs="+", type=int, default=None, help="seeds (default: 0 1 2; quick: 0 1; gpu: 0)")
    run.add_argument(
        "--train-len", type=int, default=None, help="training length in bytes (default 64; quick 32; gpu 256)"
    )
    run.add_argument(
        "--eval-multipliers",
        nargs="+",
        type=int,
        default=None,
        help="evaluation lengths as multiples of --train-len (default 1 2 4 8 16)",
    )
    run.add_argument(
        "--eval-max-tokens",
        type=_positive(int),
        default=None,
        help="cap on the held-out tokens scored at every length (default: all; quick 4096)",
    )
    run.add_argument(
        "--corpus",
        type=Path,
        default=None,
        metavar="FILE",
        help="train and evaluate on this UTF-8 text file instead of the Python documentation (bytes, vocabulary "
        "256). The pydoc topics are split by topic; a file is split into contiguous blocks: first 85%% train, "
        "next 5%% validation, last 10%% held-out, with repeated 64-byte strings kept out of training. Its "
        "SHA-256 goes into the results",
    )
    model = p.add_argument_group("model and optimisation (override the preset)")
    model.add_argument("--d-model", type=_positive(int), default=None, help="model width (default 128; quick 64)")
    model.add_argument("--layers", type=_positive(int), default=None, help="Transformer blocks (default 3; quick 2)")
    model.add_argument(
        "--heads", type=_positive(int), default=None, help="attention heads; must divide --d-model into an even size"
    )
    model.add_argument("--steps", type=_positive(int), default=None, help="training steps")
    model.add_argument(
        "--batch-size",
        type=_positive(int),
        default=None,
        help="windows per step, all processes together (default 32); divisible by the number of processes",
    )
    model.add_argument("--lr", type=_positive(float), default=None, help="peak learning rate (default 2e-3)")
    model.add_argument("--warmup", type=_non_negative, default=None, help="warm-up steps (default: a tenth of --steps)")
    hw = p.add_argument_group("how to run")
    hw.add_argument(
        "--device",
        type=_device,
        default=None,
        help="torch device (default: cuda when torch.cuda.is_available(), else cpu; chosen here, not by "
        "posviz.default_device; under torchrun on CUDA each process takes cuda:LOCAL_RANK)",
    )
    hw.add_argument(
        "--threads",
        type=_positive(int),
        default=None,
        help="torch.set_num_threads (default: torch's choice). Use 1 on a shared machine: with 2 threads "
        "on 2 busy cores training slowed down ~10x; results are identical for the same thread count",
    )
    hw.add_argument(
        "--precision",
        choices=("auto", "fp32", "bf16"),
        default="auto",
        help="auto (default): bf16 autocast on CUDA, fp32 on the CPU",
    )
    hw.add_argument(
        "--attention",
        choices=("auto", "posviz", "sdpa"),
        default="auto",
        help="auto (default): torch's scaled_dot_product_attention on CUDA (bias as float mask; Shaw keeps "
        "posviz.attention), posviz.attention on the CPU (the published path)",
    )
    hw.add_argument("--compile", action="store_true", help="torch.compile the training forward (CUDA)")
    hw.add_argument(
        "--checkpoint-every",
        type=_non_negative,
        default=0,
        metavar="N",
        help="save every training run's full state every N steps under OUT/checkpoints/state (0: never)",
    )
    hw.add_argument(
        "--resume",
        action="store_true",
        help="go on from the states under OUT/checkpoints/state (same flags as the interrupted run, "
        "with --checkpoint-every); finished runs are evaluated again, not retrained",
    )
    out = p.add_argument_group("output")
    out.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output folder for results.json and the HTML figures (default results/extrapolation-full, "
        "or results/extrapolation-quick with --quick, results/extrapolation-gpu with --preset gpu; "
        "with --publish: no folder unless given)",
    )
    out.add_argument(
        "--publish",
        action="store_true",
        help="full runs on the float32 posviz.attention path only (on CUDA: --precision fp32 --attention posviz): "
        "write the results JSON into the package (posviz/lab/published/extrapolation.json), the copy the book "
        "shows; with --replot: redraw from that copy",
    )
    out.add_argument(
        "--merge-into",
        type=Path,
        default=None,
        metavar="FILE",
        help="add RoPE variants to an existing results file (e.g. posviz/lab/published/extrapolation.json) "
        "without rerunning the rest: give --methods rope and variants only, with FILE's configuration; rope is "
        "retrained, the rows FILE already has must come out identical (else nothing is merged), the new rows "
        "are added with their paired differences and the run is recorded under 'reruns' (posviz.lab.merge)",
    )
    out.add_argument(
        "--plotlyjs",
        choices=("inline", "cdn"),
        default="inline",
        help="HTML figures embed plotly.js (default: ~4.7 MB each, open offline) or load it from a CDN",
    )
    out.add_argument("--checkpoints", action="store_true", help="also save every trained model under OUT/checkpoints")
    out.add_argument("--no-progress", action="store_true", help="no progress bar")
    out.add_argument(
        "--replot",
        action="store_true",
        help="run nothing: redraw the HTML figures (and print the tables) from OUT/results.json",
    )
    return p


def _overrides(args: argparse.Namespace, base: object) -> dict:
    """LabConfig overrides from the command line, checked with errors that name the flags."""
    from .train import TrainConfig

    overrides: dict = {}
    if args.train_len is not None:
        overrides["train_len"] = args.train_len
    if args.methods is not None:
        overrides["methods"] = [m for group in args.methods for m in group]
    if args.seeds is not None:
        overrides["seeds"] = args.seeds
    if args.eval_multipliers is not None:
        overrides["eval_multipliers"] = args.eval_multipliers
    if args.eval_max_tokens is not None:
        overrides["eval_max_tokens"] = args.eval_max_tokens
    if args.corpus is not None:
        overrides["corpus"] = str(args.corpus)
    model = dict(base.model)  # type: ignore[attr-defined]
    for flag, key in (("d_model", "n_embd"), ("layers", "n_layer"), ("heads", "n_head")):
        if getattr(args, flag) is not None:
            model[key] = getattr(args, flag)
    overrides["model"] = model  # checked by GPTConfig (via LabConfig), with the flags' names
    t = base.train.to_dict()  # type: ignore[attr-defined]
    if args.steps is not None:
        t["steps"] = args.steps
        t["warmup_steps"] = min(t["warmup_steps"], max(1, args.steps // 10), args.steps - 1)
    if args.batch_size is not None:
        t["batch_size"] = args.batch_size
    if args.lr is not None:
        t["lr"] = args.lr
    if args.warmup is not None:
        if args.warmup >= t["steps"]:  # a schedule with no cosine part (TrainConfig allows it; the CLI does not)
            raise ValueError(f"--warmup {args.warmup} must be smaller than --steps {t['steps']}")
        t["warmup_steps"] = args.warmup
    overrides["train"] = TrainConfig(**t)  # checks --steps, --warmup, --lr, --batch-size
    return overrides


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # before CUDA initialises: deterministic cuBLAS (harmless on the CPU)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

    import torch

    from .distributed import env_world, init_distributed, shutdown_distributed
    from .experiment import PRESETS, check_publishable
    from .figures import write_figures
    from .results import save_results
    from .tables import format_tables

    world_size, rank, _ = env_world()

    def fail(message: str) -> int:
        if rank == 0:
            print(f"error: {message}", file=sys.stderr)
        return 2

    if args.quick and args.preset not in (None, "quick"):
        return fail(f"--quick is --preset quick; it contradicts --preset {args.preset}")
    preset = "quick" if args.quick else (args.preset or "full")
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    cuda = torch.device(device).type == "cuda"
    if cuda and not torch.cuda.is_available():
        return fail(f"--device {device}: torch.cuda.is_available() is False on this machine")
    index = torch.device(device).index
    if cuda and index is not None and index >= torch.cuda.device_count():
        return fail(f"--device {device}: this machine has {torch.cuda.device_count()} CUDA device(s), 0..N-1")
    precision = args.precision if args.precision != "auto" else ("bf16" if cuda else "fp32")
    attention = args.attention if args.attention != "auto" else ("sdpa" if cuda else "posviz")
    if args.resume and not args.checkpoint_every:
        return fail("--resume needs --checkpoint-every N (the same flags as the interrupted run)")
    make = PRESETS[preset]
    try:
        base = make()
        overrides = _overrides(args, base)
        overrides.update(
            device=str(device), world_size=world_size, precision=precision, attention=attention, compile=args.compile
        )
        cfg = make(**overrides)
    except (ValueError, TypeError) as err:
        return fail(str(err))
    if args.merge_into is not None and (args.publish or args.replot or args.resume):
        return fail("--merge-into adds rows to a file: it cannot be combined with --publish, --replot or --resume")
    if args.publish and preset != "full":
        return fail("--publish takes a full run only (the book shows it); drop --quick / --preset")
    if args.publish and not args.replot:
        try:
            check_publishable(cfg)
        except ValueError as err:
            return fail(str(err))
    target = code = None
    if args.merge_into is not None:
        from .merge import RerunMismatch, check_mergeable_config, check_same_arithmetic, code_version, merge_rerun
        from .results import load_results, machine_info

        try:
            target = load_results(args.merge_into)
            check_mergeable_config(cfg.to_dict(), target)
            here = {**machine_info(torch.device(device)), "torch_threads": torch.get_num_threads()}
            check_same_arithmetic(here, target)  # before training: a rerun elsewhere cannot reproduce the file
        except (ValueError, OSError) as err:  # RerunMismatch and json errors are ValueErrors
            return fail(f"--merge-into {args.merge_into}: {err}")
        code = code_version()  # the code that runs, taken before it runs
    out = args.out
    if out is None and not args.publish:
        out = Path(f"results/extrapolation-{preset}")
    plotlyjs: str | bool = True if args.plotlyjs == "inline" else "cdn"
    if args.replot:
        if rank != 0:
            return 0
        from .results import PUBLISHED, load_results

        source = PUBLISHED if args.publish else out / "results.json"
        if not source.is_file():
            return fail(f"--replot: there is no {source} to redraw (run the experiment with --out {out} first)")
        try:
            results = load_results(source)
        except (ValueError, OSError) as err:  # json.JSONDecodeError is a ValueError
            return fail(f"--replot: cannot read {source}: {err}")
        html = write_figures(results, out or Path("results/extrapolation-full"), include_plotlyjs=plotlyjs)
        print(format_tables(results))
        print(f"\nread {source}; wrote {', '.join(str(p) for p in html)}", file=sys.stderr)
        return 0
    try:  # the data errors, before any process group starts (run_experiment checks the same)
        from .experiment import load_data

        load_data(cfg)
    except ValueError as err:
        return fail(str(err))
    if args.checkpoints or args.checkpoint_every:
        cfg.checkpoint_dir = str((out or Path("results/extrapolation-full")) / "checkpoints")
    cfg.checkpoint_every = args.checkpoint_every

    runtime = init_distributed(device)
    try:
        if runtime.is_main:
            print(
                f"posviz.lab ({cfg.mode}): methods {cfg.reported_methods()}, seeds {cfg.seeds}, train length "
                f"{cfg.train_len}, eval lengths {cfg.eval_lengths}, device {runtime.device}, "
                f"{runtime.world_size} process(es), {cfg.precision}, attention {cfg.attention}, "
                f"{torch.get_num_threads()} threads",
                file=sys.stderr,
            )
        t0 = time.perf_counter()
        from .experiment import run_experiment

        results = run_experiment(cfg, progress=not args.no_progress, runtime=runtime, resume=args.resume)
        if not runtime.is_main:
            return 0
        written = []
        if args.publish:
            from .results import PUBLISHED

            written.append(save_results(results, PUBLISHED))
        if out is not None:
            written.append(save_results(results, out / "results.json"))
            written += write_figures(results, out, include_plotlyjs=plotlyjs)
        if target is not None:
            try:
                merged = merge_rerun(target, results, code=code)
            except RerunMismatch as err:
                return fail(f"--merge-into {args.merge_into}: {err}")
            written.append(save_results(merged, args.merge_into))
            results = merged
        print(format_tables(results))
        print(f"\nwrote {', '.join(str(p) for p in written)} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        return 0
    finally:
        shutdown_distributed()
