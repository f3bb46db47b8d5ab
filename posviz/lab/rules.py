r"""What each evaluation-time RoPE rule of the lab does to the trained model's frequency ladder.

For a results file's model (head size :math:`d`, base :math:`b`, training length
:math:`L_{\text{train}}`) and an evaluated length :math:`L`, :func:`rule_frequencies` gives each
rule's :math:`\theta'_i/\theta_i` per pair and its attention factor, from the same mapping
(:func:`posviz.lab.positions.rope_scaling_config`) and the same :func:`posviz.rope_frequencies` /
:func:`posviz.rope_attention_factor` calls the model uses; :func:`rules_table` prints them beside
the number of turns :math:`r_i = L_{\text{train}}\theta_i/2\pi` each pair makes over the training
length, the quantity YaRN's and llama3's bands are defined by.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from ..frequencies import rope_frequencies
from ..i18n import tr
from ..rope_scaling import rope_attention_factor
from .model import ROPE_VARIANTS
from .positions import rope_scaling_config
from .tables import _rows, _table

__all__ = ["RULE_ROWS", "rule_frequencies", "rules_table", "turns_over_training"]

RULE_ROWS = ("rope-pi", "rope-ntk", "rope-yarn", "rope-yarn-no-temp", "rope-dynamic", "rope-llama3")
"""The variants :func:`rules_table` shows, in order."""


def _model(results: dict) -> tuple[int, float, int]:
    model = results["config"]["model"]
    return model["n_embd"] // model["n_head"], float(model["rope_base"]), int(results["train_len"])


def turns_over_training(results: dict) -> torch.Tensor:
    r""":math:`r_i = L_{\text{train}}\,\theta_i / 2\pi`, float64 ``[d/2]``: how many turns pair :math:`i`
    makes over the training length."""
    dim, base, train_len = _model(results)
    return train_len * rope_frequencies(dim, base, device="cpu", dtype=torch.float64) / (2 * math.pi)


def rule_frequencies(results: dict, name: str, length: int) -> tuple[torch.Tensor, float]:
    r"""``(ratio, attention_factor)`` of variant ``name`` at evaluated ``length``: :math:`\theta'_i/\theta_i`
    (float64 ``[d/2]``) and the factor on cos and sin (scores get its square). ``rope-pi``'s ratio is
    :math:`1/s` for every pair (the lab divides positions instead, the same angles)."""
    if name not in ROPE_VARIANTS:
        raise ValueError(f"name must be one of {tuple(ROPE_VARIANTS)}, got {name!r}")
    dim, base, train_len = _model(results)
    config = rope_scaling_config(ROPE_VARIANTS[name], length, train_len)
    plain = rope_frequencies(dim, base, device="cpu", dtype=torch.float64)
    if config is None:
        return torch.ones_like(plain), 1.0
    theta = rope_frequencies(dim, base, scaling=config, seq_len=length, device="cpu", dtype=torch.float64)
    return theta / plain, rope_attention_factor(config, seq_len=length)


@_table
def rules_table(results: dict, *, length: int | None = None, names: Sequence[str] = RULE_ROWS) -> str:
    """Markdown table, one row per pair: turns over the training length and each rule's
    :math:`\\theta'_i/\\theta_i` at ``length`` (default the longest evaluated), then the attention
    factor on cos and sin."""
    length = max(results["eval_lengths"]) if length is None else int(length)
    turns = turns_over_training(results)
    columns = {name: rule_frequencies(results, name, length) for name in names}
    rows = []
    for i, r in enumerate(turns.tolist()):
        rows.append([str(i), f"{r:.3g}", *(f"{columns[n][0][i].item():.3f}" for n in names)])
    rows.append([tr("cos, sin ×"), "", *(f"{columns[n][1]:.3f}" for n in names)])
    head = [tr("pair i"), tr("turns over L = {n}", n=results["train_len"]), *names]
    return tr("θ′ᵢ/θᵢ at L = {length}", length=length) + "\n\n" + _rows(head, rows)
