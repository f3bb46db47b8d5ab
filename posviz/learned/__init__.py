r"""Learned position tables: their cost, a tiny model that trains one, and how to read the result.

A learned table adds a trained row to each token embedding, :math:`x_m \mapsto x_m + P[m]`
(:class:`posviz.LearnedPositionalEmbedding`, as in BERT and GPT). This module trains such a
table on a toy task small enough to run in a few seconds on a laptop CPU, so that the book can
show a real learned table instead of describing one:

* the task, :func:`sliding_window_max`: at every position output the largest of the last
  ``window + 1`` tokens. Which keys are "the last few" is a question about position only;
* the model, :class:`OneLayerModel`: token embedding + learned position table, one causal
  attention layer (:func:`posviz.attention`) and a linear read-out;
* the loop, :func:`train_window_max` (configured by :class:`WindowMaxConfig`): seeded,
  single-threaded and deterministic, keeping a :class:`Snapshot` of the table at a dozen chosen
  steps;
* the readings: :func:`cosine_similarity_matrix` (which positions look alike),
  :func:`mean_by_offset` (the same, averaged along each diagonal :math:`r = m - n`) and
  :func:`positional_attention` (the attention the table alone asks for);
* the bill: :func:`learned_table_parameters`.

Book chapter: *Learned position tables*.

Three modules: ``posviz.learned.model`` (task and model), ``posviz.learned.train`` (the
loop) and ``posviz.learned.analysis`` (the readings and the bill); everything is re-exported
here.
"""

from .analysis import (
    cosine_similarity_matrix,
    explained_variance,
    learned_table_parameters,
    mean_by_offset,
    principal_coordinates,
)
from .model import OneLayerModel, positional_attention, sliding_window_max
from .train import DEFAULT_CHECKPOINTS, Snapshot, TrainingRun, WindowMaxConfig, train_grid, train_window_max

__all__ = [
    "DEFAULT_CHECKPOINTS",
    "OneLayerModel",
    "Snapshot",
    "TrainingRun",
    "WindowMaxConfig",
    "cosine_similarity_matrix",
    "explained_variance",
    "learned_table_parameters",
    "mean_by_offset",
    "positional_attention",
    "principal_coordinates",
    "sliding_window_max",
    "train_grid",
    "train_window_max",
]
