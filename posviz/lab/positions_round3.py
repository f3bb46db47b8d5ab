r"""The lab's round-three position plug-ins: randomized positions, learned functions of distance,
contextual positions and xPos (issue 24). Registered in :mod:`posviz.lab.positions`.

* ``learned-random``, ``rope-random`` (Ruoss et al. 2023, :func:`posviz.randomized.random_positions`):
  in training (a pass in training mode with gradients on) every batch reads its table rows /
  rotation angles at a sorted random subset of
  :math:`\{0, \dots, 16 L_{\text{train}} - 1\}` (:data:`RANDOM_RANGE_FACTOR`); in evaluation, at
  every length, the plain positions :math:`0..n-1`, as the paper does. The learned table has
  :math:`16 L_{\text{train}}` rows, so it runs at every length the lab evaluates (1x-16x).
  The draws are deterministic: batch :math:`s` of a run uses a generator seeded from the
  model's seed and :math:`s` (a counter kept in the state dict, so ``--resume`` and every DDP
  rank draw the same positions).
* ``fire`` (Li et al. 2024, :class:`posviz.distance_bias.FIRE`) and ``kerple-log`` (Chi et al.
  2022, :class:`posviz.distance_bias.KerpleLogBias`): score biases shared by all layers, like the
  lab's ALiBi and T5; they do not depend on q, so SDPA can take them.
* ``cope`` (Golovneva et al. 2024, :class:`posviz.cope.CoPE`): one CoPE table per layer; its bias
  depends on q (through the gates), so it always runs :func:`posviz.attention` (never SDPA).
* ``xpos`` (Sun et al. 2022, :func:`posviz.xpos.apply_xpos`): RoPE with the paper's decay,
  the paper's constants (:math:`\gamma = 512`, :math:`\gamma' = 0.4`).
"""

from __future__ import annotations

import hashlib
import math
from typing import TYPE_CHECKING

import torch
from torch import nn

from posviz import LearnedPositionalEmbedding, apply_rope
from posviz.cope import CoPE
from posviz.distance_bias import FIRE, KerpleLogBias
from posviz.randomized import random_positions
from posviz.xpos import apply_xpos

from .positions import BeyondLearnedTable, PositionMethod

if TYPE_CHECKING:
    from .model import GPTConfig

__all__ = [
    "FIRE_HIDDEN",
    "FIRE_THRESHOLD_FRACTION",
    "RANDOM_RANGE_FACTOR",
    "ROUND3_CLASSES",
    "CoPEPosition",
    "FIREPosition",
    "KerpleLogPosition",
    "RandomLearnedPosition",
    "RandomRotaryPosition",
    "XPosPosition",
    "cope_max_position",
]

RANDOM_RANGE_FACTOR = 16
"""Training positions of ``learned-random`` and ``rope-random`` come from ``[0, 16 L_train)``: the
longest evaluation length (16x), so a 16x evaluation reads only values seen in training."""
FIRE_HIDDEN = 32
"""The hidden width of FIRE's MLP (the paper's 32)."""
FIRE_THRESHOLD_FRACTION = 0.25
r"""FIRE's threshold :math:`L` starts at this fraction of the training length. The paper's
pseudo-code initialises :math:`L = 512`; the lab keeps the ratio :math:`512 / 2048` (an assumption:
2048 tokens as the paper's training length), so :math:`L_0 = 16` at :math:`L_{\text{train}} = 64`."""


def cope_max_position(train_len: int) -> int:
    r"""CoPE's :math:`p_{\max}`: the training length (a query can count at most :math:`L_{\text{train}}`
    open gates in training, so clipping there keeps every row of the table trained)."""
    return int(train_len)


def _draw_seed(seed: int, count: int) -> int:
    digest = hashlib.sha256(f"posviz.lab:random-positions:{int(seed)}:{int(count)}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


class _RandomDraws(PositionMethod):
    """Training-time random positions, one sorted draw per forward pass (so per batch).

    :meth:`posviz.lab.GPT.forward` calls :meth:`add_to_input` once per pass, before any attention
    layer: that is where the draw happens; :meth:`rotate` reads the same draw in every layer.
    """

    def _setup_draws(self, cfg: GPTConfig) -> None:
        self.max_position = RANDOM_RANGE_FACTOR * cfg.block_size
        self.register_buffer("draw_seed", torch.zeros((), dtype=torch.int64))  # from the position stream
        self.register_buffer("draw_count", torch.zeros((), dtype=torch.int64))  # batches drawn so far
        self._positions: torch.Tensor | None = None

    def _draw(self, length: int, device: torch.device) -> torch.Tensor | None:
        """Sorted random positions in a training pass (advancing the counter); None otherwise (0..n-1).

        A training pass is one in training mode with gradients enabled: a pass under
        ``torch.no_grad()`` learns nothing, so it reads the evaluation positions, whatever the mode."""
        if not (self.training and torch.is_grad_enabled()):
            self._positions = None
            return None
        generator = torch.Generator().manual_seed(_draw_seed(int(self.draw_seed), int(self.draw_count)))
        self.draw_count += 1
        self._positions = random_positions(length, self.max_position, generator=generator, device=device)
        return self._positions

    @torch.no_grad()
    def _init_draws(self, generator: torch.Generator) -> None:
        self.draw_seed.fill_(int(torch.randint(0, 2**62, (), generator=generator)))
        self.draw_count.zero_()


class RandomLearnedPosition(_RandomDraws):
    r"""A learned table of :math:`16 L_{\text{train}}` rows read at sorted random positions in training
    and at :math:`0..n-1` in evaluation (Ruoss et al. 2023)."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self._setup_draws(cfg)
        self.table = LearnedPositionalEmbedding(self.max_position, cfg.n_embd)

    def init_parameters(self, generator: torch.Generator) -> None:
        super().init_parameters(generator)  # the table: N(0, 0.02^2), as `learned`
        self._init_draws(generator)

    def add_to_input(self, length: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        positions = self._draw(length, device)
        if positions is not None:
            return self.table(positions).to(dtype)  # P[p_1..p_n], (T, C)
        if length > self.table.max_len:
            raise BeyondLearnedTable(
                f"length {length} is past the learned table: max_len={self.table.max_len} has rows for "
                f"positions 0..{self.table.max_len - 1} only (a learned table cannot extrapolate)"
            )
        return self.table.rows(length).to(dtype)  # P[0..n-1], (T, C)


class RandomRotaryPosition(_RandomDraws):
    r"""RoPE (:func:`posviz.apply_rope`, interleaved) at sorted random positions in training and at
    :math:`0..n-1` in evaluation (Ruoss et al. 2023)."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self._setup_draws(cfg)
        self.base = cfg.rope_base

    def init_parameters(self, generator: torch.Generator) -> None:
        self._init_draws(generator)

    def add_to_input(self, length: int, device: torch.device, dtype: torch.dtype) -> None:
        self._draw(length, device)  # the draw this pass's layers rotate by
        return None

    def rotate(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        positions = self._positions if self.training and torch.is_grad_enabled() else None
        if positions is not None and positions.shape[-1] != q.shape[-2]:
            raise RuntimeError("rope-random: rotate() called without a draw for this length (add_to_input first)")
        return apply_rope(q, positions, base=self.base), apply_rope(k, positions, base=self.base)  # (B, nh, T, hs)

    def extra_repr(self) -> str:
        return f"base={self.base}, max_position={self.max_position}"


class FIREPosition(PositionMethod):
    r"""FIRE's bias :math:`f_\theta(\psi(i-j)/\psi(\max(L, i)))` (:class:`posviz.distance_bias.FIRE`),
    one module shared by all layers, :data:`FIRE_HIDDEN` hidden units, :math:`L_0` =
    :data:`FIRE_THRESHOLD_FRACTION` of the training length."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.fire = FIRE(cfg.n_head, hidden=FIRE_HIDDEN, init_threshold=FIRE_THRESHOLD_FRACTION * cfg.block_size)

    def init_parameters(self, generator: torch.Generator) -> None:
        self.fire.reset_parameters(generator)

    def bias(self, length: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        return self.fire(length).to(device=device, dtype=dtype)  # (nh, T, T)


class KerpleLogPosition(PositionMethod):
    r"""KERPLE's log bias :math:`-r_{1,h}\log(1 + r_{2,h}|m-n|)` (:class:`posviz.distance_bias.KerpleLogBias`),
    shared by all layers."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.kerple = KerpleLogBias(cfg.n_head)

    def init_parameters(self, generator: torch.Generator) -> None:
        self.kerple.reset_parameters(generator)

    def bias(self, length: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        return self.kerple(length).to(device=device, dtype=dtype)  # (nh, T, T)


class CoPEPosition(PositionMethod):
    r"""CoPE (:class:`posviz.cope.CoPE`), one table per layer, :math:`p_{\max}` =
    :func:`cope_max_position`: scores :math:`q_i^\top k_j/\sqrt{d} + q_i^\top e[p_{ij}]`, the gates
    reading :math:`q_i^\top k_j/\sqrt{d}` (the paper's code). The bias depends on q: always
    :func:`posviz.attention`, never SDPA."""

    supports_sdpa = False

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList(CoPE(cfg.head_dim, cope_max_position(cfg.block_size)) for _ in range(cfg.n_layer))

    def attend(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None, layer: int
    ) -> torch.Tensor:
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])  # q_i . k_j / sqrt(d), the gates' logits
        position = self.layers[layer](q, scores, causal=True)  # q_i . e[p_ij], (B, nh, T, T)
        # PositionMethod.attend: posviz.attention with causal=True (use_sdpa is never set for CoPE)
        return super().attend(q, k, v, position if bias is None else bias + position, layer)


class XPosPosition(PositionMethod):
    r"""xPos (:func:`posviz.xpos.apply_xpos`): RoPE times :math:`\zeta_i^{(m-n)/\gamma}`, decaying
    with the distance in this causal model."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.base = cfg.rope_base

    def rotate(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return apply_xpos(q, k, base=self.base)  # (B, nh, T, hs)

    def extra_repr(self) -> str:
        return f"base={self.base}"


ROUND3_CLASSES: dict[str, type[PositionMethod]] = {
    "learned-random": RandomLearnedPosition,
    "rope-random": RandomRotaryPosition,
    "fire": FIREPosition,
    "kerple-log": KerpleLogPosition,
    "cope": CoPEPosition,
    "xpos": XPosPosition,
}
"""The round-three methods' plug-ins, by name (merged into ``posviz.lab.positions``' registry)."""
