r"""The "train short, test long" experiment in miniature (Press, Smith and Lewis, ICLR 2022, Figs. 1-2).

Small causal byte-level Transformer language models, identical except for the position method
(``posviz.lab.model.METHODS``: ``none``, ``sinusoidal``, ``learned``, ``shaw``, ``t5``,
``rope``, ``alibi``; plus six evaluation-time rescalings of the trained ``rope`` model, no
retraining: ``rope-pi``, ``rope-ntk``, ``rope-yarn``, ``rope-yarn-no-temp``, ``rope-dynamic`` and
``rope-llama3``, ``posviz.lab.positions.rope_scaling_config``), are trained on the Python
documentation shipped with CPython (``pydoc_data.topics``) at one length :math:`L_{\text{train}}`
and evaluated on held-out text at :math:`L \in \{1, 2, 4, 8, 16\} \times L_{\text{train}}`, with
training throughput, peak memory and inference throughput measured in the same run. Every
position method calls the posviz function its chapter teaches, and attention is
:func:`posviz.attention` with ``causal=True`` (Shaw's module applies the same mask rule to its
own scores).

The protocol (``posviz.lab.experiment``): the topics are split into train, validation and
held-out text with no 64-byte string in common (``posviz.lab.data``); with one seed every
method starts from the same token embedding and blocks and sees the same batches
(``posviz.lab.model.GPT``); the position parameters (learned table, T5 buckets, Shaw
vectors) train in their own parameter group, whose learning-rate multiplier is chosen per method
on the validation loss at the training length (``posviz.lab.train``); and each method's
per-seed perplexity is compared with the baseline's (``none``) of the same seed.

Run it::

    python -m posviz.lab --quick --threads 1      # 71 s of CPU time (measured; 6 min on a busy shared machine)
    python -m posviz.lab --threads 1 --publish    # full: 3 seeds, d=128, 3 layers, 400 steps, lr search
    python -m posviz.lab --threads 1 --methods rope rope-yarn --merge-into posviz/lab/published/extrapolation.json
    python -m posviz.lab --preset gpu             # one GPU, about 10 minutes (an estimate)
    torchrun --standalone --nproc_per_node=8 -m posviz.lab --preset gpu   # several GPUs (DDP)

Under torchrun each process trains on its shard of every batch (DistributedDataParallel, gloo on
the CPU, nccl on CUDA) and evaluates its share of the windows; the numbers are those of one process
up to floating-point rounding (``posviz.lab.distributed``). ``--corpus FILE``, the model and
optimiser flags, ``--checkpoint-every``/``--resume``: see ``posviz.lab.cli``.

The full run the book shows ships inside the package (``posviz/lab/published/extrapolation.json``):
:func:`load_published` reads it, ``--publish`` rewrites it (see ``posviz.lab.cli``; it refuses
any configuration but the full one, computed in float32 through :func:`posviz.attention`
without compilation: ``posviz.lab.config.check_publishable``).

Modules: ``posviz.lab.config`` (``LabConfig``, presets, the checks made before a run),
``posviz.lab.data`` (corpus, splits, windows), ``posviz.lab.overlap`` (shared 64-byte strings),
``posviz.lab.model`` (the model), ``posviz.lab.positions`` (the position plug-ins and the RoPE
rules' mappings), ``posviz.lab.rules`` (what each rule does to the ladder), ``posviz.lab.merge``
(``--merge-into``: new RoPE rows from a rope-only rerun),
``posviz.lab.train``, ``posviz.lab.evaluate``, ``posviz.lab.distributed`` (processes, bf16,
SDPA), ``posviz.lab.memory``, ``posviz.lab.experiment`` (the protocol and the loop),
``posviz.lab.results`` (aggregation, paired differences, schema, I/O), ``posviz.lab.tables``
(Markdown tables in the reader's language), ``posviz.lab.figures``, ``posviz.lab.cost_figures``
and ``posviz.lab.slider_figures`` (Plotly), ``posviz.lab.cli``.

Results JSON (``OUT/results.json``, or the published copy), schema ``"posviz.lab/extrapolation"`` version 2. Lists
indexed "per length" are aligned with ``eval_lengths``. Perplexity is :math:`\exp` of the mean
cross-entropy (nats) over all scored tokens; a length a method cannot run is ``null`` with the
reason in ``cannot_run`` (never a number)::

    {
      "schema": "posviz.lab/extrapolation", "schema_version": 2,
      "created_utc": str, "command": [str], "wall_seconds": float, "load_average_at_end": [float] | null,
      "config": {                      # LabConfig.to_dict()
        "methods": [str], "seeds": [int], "train_len": int, "eval_multipliers": [int],
        "eval_lengths": [int], "model": {GPTConfig fields but method}, "train": {TrainConfig fields},
        "eval_tokens_per_batch": int, "eval_max_tokens": int | null, "validation_max_tokens": int | null,
        "position_lr_grid": [float], "baseline": str, "device": str,
        "mode": "full" | "quick" | "gpu", "checkpoint_dir": str | null,
        # optional (absent from runs before issue #14; defaults in brackets):
        "corpus": str | null [null: pydoc], "world_size": int [1], "precision": "fp32" | "bf16" ["fp32"],
        "attention": "posviz" | "sdpa" ["posviz"], "compile": bool [false], "checkpoint_every": int [0]},
      "data": {"source", "python" (sys.version), "tokenization", "n_chars", "n_tokens",
               # --corpus FILE: "blocks": {"train" | "validation" | "heldout": [start, end]} (bytes) instead of "topics"
               "heldout_fraction", "validation_fraction",
               "topics": {"train" | "validation" | "heldout": [str]},
               "n_train_tokens", "n_validation_tokens", "n_heldout_tokens",
               "eval_scored_tokens", "validation_scored_tokens",
               "overlap": {"n": 64, "what": str,
                           "heldout_ngrams_in_train_text": float,  # held-out 64-byte strings in the train text
                           "train_bytes_tainted", "validation_bytes_tainted": float,  # left out of train / val
                           "training_windows_with_heldout_ngram": 0.0,  # measured on the drawable windows
                           "validation_windows", "validation_windows_dropped": int,
                           "validation_ngrams_in_heldout": 0.0},      # measured on the scored windows
               "sha256": {"text", "train", "validation", "heldout"}},  # hex SHA-256 of the UTF-8 bytes
      "machine": {"platform", "python", "cpu", "cpu_count", "cpus_usable", "torch", "torch_threads",
                  "device", "gpu", "load_average_at_start",
                  "world_size", "distributed_backend": "gloo" | "nccl" | null},   # optional, as above
      "train_len": int, "eval_lengths": [int],
      "method_order": [str],           # display order
      "methods": {
        NAME: {
          "kind": str,                 # "adds to the input" | "rotates q and k" | "biases the scores" | ...
          "trained_as": str,           # NAME, or "rope" for the rope-* variants (same weights, no retraining)
          "rope_scaling": "pi" | "ntk" | "yarn" | "yarn-no-temp" | "dynamic" | "llama3" | null,
          "params": int,
          "attention": "posviz" | "sdpa",   # optional: the attention path the method ran
          "max_length": int | null,    # learned: rows in the table
          "position_lr_mult": float | null,   # chosen multiplier (null: no position parameters)
          "lr_search": [{"position_lr_mult", "seed", "validation_loss", "final_train_loss",
                         "perplexity": [float | null per length]}],   # every grid point, first seed
          "memory": {"what": str,      # what is measured (tensor bytes, not RSS)
                     "train": {"param_bytes", "optimizer_state_bytes", "step_peak_bytes", "total_bytes"} | null,
                     "inference_peak_bytes": [int | null per length]},
          "seeds": [{
            "seed": int,
            "perplexity": [float | null per length], "loss": [float | null per length],
            "inference_tokens_per_s": [float | null per length],      # wall clock, median over batches
            "inference_tokens_per_cpu_s": [float | null per length],  # per CPU second (process_time)
            "cannot_run": [str | null per length],
            # trained methods only:
            "position_lr_mult": float | null, "validation_loss": float,
            "final_train_loss": float, "train_seconds": float,
            "train_tokens_per_s": float,        # B*T / median step time
            "train_tokens_per_s_mean": float,   # B*T*steps / total step time
            "train_tokens_per_cpu_s": float,    # B*T / median CPU time per step (all threads)
            "loss_curve": {"step": [int], "loss": [float], "lr": [float], "grad_norm": [float]}}],
          "aggregate": {               # over seeds
            "perplexity" | "loss" | "inference_tokens_per_s" | "inference_tokens_per_cpu_s":
                {"mean", "std", "min", "max": [float | null per length], "n": [int per length]},
            # trained methods only, each {"mean", "std", "min", "max", "n"}:
            "final_train_loss", "train_tokens_per_s", "train_tokens_per_s_mean", "train_tokens_per_cpu_s",
            "train_seconds", "validation_loss"}}},
      "paired": {"baseline": str, "key": "perplexity",     # null when the baseline was not run
                 "methods": {NAME: {"diff": [[float per seed] | null per length],   # NAME minus baseline, same seed
                                    "mean", "std", "min", "max": [float | null per length],
                                    "inside_spread": [bool | null per length]}}},
      # optional: rows added later by --merge-into (posviz.lab.merge), one entry per merge
      "reruns": [{"rows": [str], "verified_identical": [str], "command": [str],
                  "code": {"git_commit": str | null, "dirty_paths": [str]}, "created_utc": str,
                  "wall_seconds": float, "load_average_at_end": [float] | null, "machine": {...}}]
    }

``std`` is the sample standard deviation (n - 1), ``null`` with one seed. A paired difference is
*inside the seed spread* when the per-seed differences do not all have the same sign or their
mean is no larger than their standard deviation (:func:`inside_spread`; ``null`` with one seed). Read a file with
``load_results`` (it validates) or :func:`load_published`; tabulate it with
:func:`perplexity_table`, :func:`paired_table` and :func:`cost_table` (``posviz.lab.tables``;
a one-seed difference reads "one seed: no spread", ``spread_words``); draw it with
:func:`perplexity_figure`, :func:`paired_difference_figure`, :func:`perplexity_at_length_figure`,
:func:`cost_figure` and :func:`inference_at_length_figure`.
"""

from .config import PRESETS, LabConfig, full_config, gpu_config, quick_config
from .experiment import run_experiment
from .figures import (
    cost_figure,
    inference_at_length_figure,
    paired_difference_figure,
    perplexity_at_length_figure,
    perplexity_figure,
    training_curve_figure,
    write_figures,
)
from .model import ALL_METHODS, GPT, METHODS, ROPE_VARIANTS, GPTConfig
from .results import (
    PUBLISHED,
    inside_spread,
    load_previous,
    load_published,
    load_results,
    paired_differences,
    perplexity_ratio,
    save_results,
    select_methods,
    validate_results,
)
from .tables import (
    Table,
    cost_table,
    format_tables,
    lr_search_table,
    lr_sensitivity,
    lr_sensitivity_table,
    paired_table,
    perplexity_table,
    previous_run_table,
    spread_words,
)

__all__ = [
    "ALL_METHODS",
    "GPT",
    "METHODS",
    "PRESETS",
    "PUBLISHED",
    "ROPE_VARIANTS",
    "GPTConfig",
    "LabConfig",
    "Table",
    "cost_figure",
    "cost_table",
    "format_tables",
    "full_config",
    "gpu_config",
    "inference_at_length_figure",
    "inside_spread",
    "load_previous",
    "load_published",
    "load_results",
    "lr_search_table",
    "lr_sensitivity",
    "lr_sensitivity_table",
    "paired_difference_figure",
    "paired_differences",
    "paired_table",
    "perplexity_at_length_figure",
    "perplexity_figure",
    "perplexity_ratio",
    "perplexity_table",
    "previous_run_table",
    "quick_config",
    "run_experiment",
    "save_results",
    "select_methods",
    "spread_words",
    "training_curve_figure",
    "validate_results",
    "write_figures",
]
