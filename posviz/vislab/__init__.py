r"""Resolution extrapolation in miniature: tiny ViTs trained on an 8 x 8 patch grid, evaluated larger.

The task (:mod:`posviz.vislab.task`): an image is a grid of patch tokens, background noise and two
marked patches A and B; the label is B's quadrant as seen from A (up-left, up-right, down-left,
down-right), which depends on the signs of the 2-D offset only, so it is the same task at any grid
size. The model (:mod:`posviz.vislab.model`): a tiny ViT (2 layers, d = 64, 4 heads, a class token)
whose position step is a 2-D plug-in (:mod:`posviz.vislab.positions`) calling the library's
functions: ``none``, ``learned`` (a table for the training grid, resized by
:func:`posviz.resize_position_table`), ``sincos-2d`` (:func:`posviz.sinusoidal_encoding_2d`),
``rope-axial`` (:func:`posviz.axial_rope_2d`), ``rope-mixed`` (:class:`posviz.MixedRoPE`) and
``swin-bias`` (:class:`posviz.SwinRelativeBias`, offsets past the training range clipped).
The protocol is the lab's (:mod:`posviz.vislab.experiment`): paired seeds, the position learning
rate chosen on validation at the training grid, paired differences against ``none`` with the
inside-the-spread rule.

Run it::

    python -m posviz.vislab --quick               # a smoke run
    python -m posviz.vislab --workers 2 --publish # the full run: 3 seeds, 500 steps, lr search

Read the published run with :func:`load_published`; draw it with :func:`accuracy_figure`,
tabulate it with :func:`accuracy_table` and :func:`paired_table`; :func:`glue_values` gives what a
chapter glues (best method at the largest grid, accuracies, differences inside the spread, and
Heo et al.'s comparisons, :data:`PAPER_COMPARISONS`, as paired differences: :func:`paired_between`).

Results JSON, schema ``"posviz.vislab/resolution"`` version 1; lists "per grid" are aligned with
``eval_grids`` (ascending); accuracies are fractions in [0, 1]::

    {
      "schema", "schema_version", "created_utc": str, "command": [str],
      "code": {"git_commit": str | null, "dirty_paths": [str]},   # posviz/ paths differing from the commit
      "wall_seconds": float, "load_average_at_end": [float] | null,
      "config": VisConfig.to_dict(),   # methods, seeds, train_grid, eval_grids, model, train, n_validation,
                                       # n_heldout, eval_batch_size, position_lr_grid, baseline, mode, workers, threads
      "machine": {platform, python, cpu, cpu_count, cpus_usable, torch, torch_threads, device, gpu,
                  load_average_at_start, workers},
      "train_grid": int, "eval_grids": [int], "method_order": [str],
      "methods": {NAME: {
          "kind": str, "params": int, "position_lr_mult": float | null,   # null: no position parameters
          "lr_search": [{"position_lr_mult", "seed", "validation_loss", "validation_accuracy",
                         "accuracy": [per grid]}],     # every grid point, first seed ([] without a search)
          "seeds": [{"seed", "position_lr_mult", "accuracy": [per grid], "loss": [per grid],
                     "validation_accuracy", "validation_loss", "final_train_loss", "train_seconds", "params",
                     "loss_curve": {"step": [int], "loss": [float]}}],
          "aggregate": {"accuracy" | "loss": {"mean", "std", "min", "max", "n": [per grid]},
                        "validation_accuracy" | "validation_loss" | "final_train_loss" | "train_seconds":
                            {"mean", "std", "min", "max", "n"}}}},
      "paired": {"baseline": str, "key": "accuracy",
                 "methods": {NAME: {"diff": [[per seed] per grid], "mean", "std", "min", "max": [per grid],
                                    "inside_spread": [bool | null per grid]}}}   # null: the baseline, one seed
    }
"""

from .config import VisConfig, full_config, quick_config
from .experiment import run_experiment
from .figures import accuracy_figure, accuracy_table, format_tables, method_label, paired_table
from .model import TinyViT, ViTConfig
from .positions import METHODS, PositionMethod2D
from .results import (
    PAPER_COMPARISONS,
    PUBLISHED,
    glue_values,
    load_published,
    load_results,
    paired_between,
    save_results,
    validate_results,
)

__all__ = [
    "METHODS",
    "PAPER_COMPARISONS",
    "PUBLISHED",
    "PositionMethod2D",
    "TinyViT",
    "ViTConfig",
    "VisConfig",
    "accuracy_figure",
    "accuracy_table",
    "format_tables",
    "full_config",
    "glue_values",
    "load_published",
    "load_results",
    "method_label",
    "paired_between",
    "paired_table",
    "quick_config",
    "run_experiment",
    "save_results",
    "validate_results",
]
