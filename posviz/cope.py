r"""Contextual position encoding, CoPE (Golovneva, Wang, Weston and Sukhbaatar, 2024, "Contextual
Position Encoding: Learning to Count What's Important").

A position that counts *what the model chooses* instead of tokens. Each query :math:`i` opens a
gate on every earlier key :math:`k`, :math:`g_{ik} = \sigma(\text{score}_{ik})`, and the position
of key :math:`j` seen from query :math:`i` is the number of open gates between them,

.. math::

    p_{ij} = \sum_{k=j}^{i} g_{ik} \qquad (j \le i),

a real number (gates are soft), clipped at :math:`p_{\max}`. A table of :math:`p_{\max}+1`
position vectors :math:`e[0..p_{\max}]` is read between its integer rows,
:math:`e[p] = (p - \lfloor p \rfloor)\, e[\lceil p \rceil] + (1 - p + \lfloor p \rfloor)\, e[\lfloor p \rfloor]`,
and :math:`q_i^\top e[p_{ij}]` is added to the score. With every gate at 1, :math:`p_{ij} = i - j + 1`:
relative positions counted in tokens.
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import check_int, check_tensor

__all__ = ["CoPE", "cope_interpolate", "cope_positions"]


def cope_positions(scores: torch.Tensor, *, causal: bool = True, max_position: float | None = None) -> torch.Tensor:
    r"""CoPE's positions from the attention scores (Golovneva et al. 2024, eq. (3)-(4)):

    .. math::

        g_{ik} = \sigma(\text{score}_{ik}), \qquad p_{ij} = \sum_{k=j}^{i} g_{ik}, \qquad
        p_{ij} \leftarrow \min(p_{ij}, p_{\max})

    ``scores`` are the logits the gates read, as in the paper's code the scaled
    :math:`q_i^\top k_j / \sqrt{d}` (CoPE's gates use the same query and key as attention).
    With ``causal`` (default), keys :math:`k > i` get gate 0 (the paper adds the causal mask's
    :math:`\log 0 = -\infty` to the logits first, and :math:`\sigma(-\infty) = 0`), so the sum runs
    from :math:`j` to :math:`i`; entries :math:`j > i` are 0. Without ``causal`` every key's gate
    counts (the sum runs from :math:`j` to the last key).

    Args:
        scores: floating ``[..., Lq, Lk]`` (query rows, key columns; ``causal`` needs
            :math:`L_q = L_k`), keeps autograd.
        causal: ``True`` (decoder) or ``False``.
        max_position: :math:`p_{\max} > 0` to clip at (None: no clip).

    Returns:
        :math:`p`, the shape and dtype of ``scores``.
    """
    scores = check_tensor("scores", scores, min_dim=2, shape_hint="[..., Lq, Lk]")
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False, got {causal!r}")
    gates = torch.sigmoid(scores)  # g_ik
    if causal:
        lq, lk = scores.shape[-2:]
        if lq != lk:
            raise ValueError(f"causal CoPE needs square scores [..., T, T], got {list(scores.shape)}")
        future = torch.ones(lq, lk, dtype=torch.bool, device=scores.device).triu(1)  # k > i
        gates = gates.masked_fill(future, 0.0)  # sigma(-inf) = 0
    positions = gates.flip(-1).cumsum(-1).flip(-1)  # p_ij = sum_{k >= j} g_ik
    if max_position is not None:
        if isinstance(max_position, bool) or not isinstance(max_position, (int, float)) or not max_position > 0:
            raise ValueError(f"max_position must be a number > 0 or None, got {max_position!r}")
        positions = positions.clamp(max=float(max_position))
    return positions


def cope_interpolate(logits_int: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    r"""Read per-integer-position values between their integer rows (Golovneva et al. 2024, eq. (5)):

    .. math::

        z[p] = (p - \lfloor p \rfloor)\, z[\lceil p \rceil] + (1 - p + \lfloor p \rfloor)\, z[\lfloor p \rfloor]

    Since :math:`q^\top e[p]` is linear in :math:`e`, interpolating the logits
    :math:`z[t] = q_i^\top e[t]` is interpolating the embeddings, and cheaper (the paper's code does
    so).

    Args:
        logits_int: ``[..., Lq, P]``, :math:`z[t] = q_i^\top e[t]` for :math:`t = 0..P-1`.
        positions: ``[..., Lq, Lk]``, in :math:`[0, P - 1]` (:func:`cope_positions` with
            ``max_position=P - 1``); batch dimensions equal to ``logits_int``'s.

    Returns:
        The values :math:`z[p_{ij}]` in row :math:`i`, shape ``[..., Lq, Lk]``.
    """
    logits_int = check_tensor("logits_int", logits_int, min_dim=2, shape_hint="[..., Lq, P]")
    positions = check_tensor("positions", positions, min_dim=2, shape_hint="[..., Lq, Lk]")
    if positions.shape[:-1] != logits_int.shape[:-1]:
        raise ValueError(
            f"positions [..., Lq, Lk] must share logits_int's leading shape {list(logits_int.shape[:-1])}, "
            f"got {list(positions.shape)}"
        )
    top = logits_int.shape[-1] - 1
    lo, hi = (float(positions.detach().min()), float(positions.detach().max())) if positions.numel() else (0, 0)
    if lo < 0 or hi > top:
        raise ValueError(
            f"positions must lie in [0, {top}] (the rows of logits_int); clip them with max_position={top}, "
            f"got [{lo}, {hi}]"
        )
    floor = positions.floor()
    ceil = positions.ceil()
    weight = positions - floor  # p - floor(p)
    at_floor = logits_int.gather(-1, floor.long())  # z[floor p]
    at_ceil = logits_int.gather(-1, ceil.long())  # z[ceil p]
    return weight * at_ceil + (1 - weight) * at_floor  # (p - floor p) z[ceil p] + (1 - p + floor p) z[floor p]


class CoPE(nn.Module):
    r"""CoPE's score term for one layer: ``forward(q, scores)`` returns :math:`q_i^\top e[p_{ij}]`.

    A table :math:`e[0..p_{\max}]` of ``max_position + 1`` vectors of the head size, shared by the
    layer's heads (as in the paper's code), initialised :math:`\mathcal{N}(0, 0.02^2)`;
    :math:`p_{ij}` from :func:`cope_positions` (clipped at :math:`p_{\max}`), the logits read
    between integer rows by :func:`cope_interpolate`. Add the result to the scores before the
    softmax (the causal mask then hides :math:`j > i`).

    Args:
        head_dim: :math:`d`, the size of :math:`q`.
        max_position: :math:`p_{\max} \ge 1`.
    """

    def __init__(self, head_dim: int, max_position: int) -> None:
        super().__init__()
        self.head_dim = check_int("head_dim", head_dim, minimum=1)
        self.max_position = check_int("max_position", max_position, minimum=1)
        self.table = nn.Parameter(torch.empty(self.max_position + 1, self.head_dim))  # e[0..p_max]
        nn.init.normal_(self.table, std=0.02)

    def forward(self, q: torch.Tensor, scores: torch.Tensor, *, causal: bool = True) -> torch.Tensor:
        """``q``: ``[..., T, d]``; ``scores``: ``[..., T, T]`` (the gates' logits); returns ``[..., T, T]``."""
        q = check_tensor("q", q, min_dim=2, shape_hint="[..., T, head_dim]")
        if q.shape[-1] != self.head_dim:
            raise ValueError(f"q's last dimension must be head_dim={self.head_dim}, got {q.shape[-1]}")
        positions = cope_positions(scores, causal=causal, max_position=self.max_position)  # p_ij
        logits_int = q @ self.table.to(q.dtype).T  # z[t] = q_i . e[t], (..., T, p_max + 1)
        return cope_interpolate(logits_int.expand(*positions.shape[:-1], -1), positions)  # q_i . e[p_ij]

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, max_position={self.max_position}"
