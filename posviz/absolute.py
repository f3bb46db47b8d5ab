r"""Absolute position encodings: added to the token embedding before the first layer.

:math:`x_m \mapsto x_m + p_m`: the fixed sinusoids of Vaswani et al. (2017) and the learned table of
BERT (Devlin et al., 2019) and GPT (Radford et al., 2018). Book chapters: *Sinusoidal encoding*
and *Learned position tables*.
"""

from __future__ import annotations

import torch
from torch import nn

from ._validate import (
    check_even_dim,
    check_fits_in_memory,
    check_int,
    check_positive,
    resolve,
    table_dtype,
)
from .frequencies import rope_frequencies
from .rope import rope_rotation_matrix

__all__ = [
    "LearnedPositionalEmbedding",
    "sinusoidal_encoding",
    "sinusoidal_offset_similarity",
    "sinusoidal_shift_matrix",
]


def sinusoidal_encoding(
    length: int,
    dim: int,
    base: float = 10000.0,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    r"""The sinusoidal table of Vaswani et al. (2017, §3.5), shape ``[length, dim]``.

    .. math::

        PE_{(p,\,2i)} = \sin\!\left(p\,\theta_i\right), \qquad
        PE_{(p,\,2i+1)} = \cos\!\left(p\,\theta_i\right), \qquad
        \theta_i = \text{base}^{-2i/d}

    Sines sit in the even columns and cosines in the odd ones (the paper's layout, not the
    "all sines then all cosines" layout of some libraries).

    Args:
        length: number of positions ``p = 0 .. length-1``, >= 0.
        dim: model dimension :math:`d`, a positive even integer.
        base: frequency base, > 0 (10000 in the paper).
    """
    length = check_int("length", length, minimum=0)
    dim = check_even_dim("dim", dim)
    base = check_positive("base", base)
    device, dtype = resolve(device, dtype)
    check_fits_in_memory("sinusoidal table", (length, dim), dtype, device)
    work = table_dtype(device)
    theta = rope_frequencies(dim, base, device=device, dtype=work)  # [d/2]
    angle = torch.arange(length, device=device, dtype=work)[:, None] * theta  # p * theta_i, [L, d/2]
    pe = torch.stack((torch.sin(angle), torch.cos(angle)), dim=-1)  # [L, d/2, 2]
    return pe.reshape(length, dim).to(dtype)


def sinusoidal_shift_matrix(
    offset: float,
    dim: int,
    base: float = 10000.0,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    r"""The fixed linear map :math:`M_k` with :math:`PE(p + k) = M_k\,PE(p)` for every ``p``.

    From the angle-sum identities, each (sin, cos) pair is rotated by :math:`-k\theta_i`:

    .. math::

        \begin{pmatrix} \sin((p+k)\theta_i) \\ \cos((p+k)\theta_i) \end{pmatrix}
        = \begin{pmatrix} \cos k\theta_i & \sin k\theta_i \\
                          -\sin k\theta_i & \cos k\theta_i \end{pmatrix}
          \begin{pmatrix} \sin p\theta_i \\ \cos p\theta_i \end{pmatrix},

    so :math:`M_k = R_{\Theta,-k}`, the block-diagonal RoPE matrix at position :math:`-k`
    (:func:`posviz.rope_rotation_matrix`). It does not depend on ``p``: this is the
    "attend by relative position" argument of Vaswani et al. (2017).
    """
    return rope_rotation_matrix(-offset, dim, base, device=device, dtype=dtype)


def sinusoidal_offset_similarity(
    offsets: torch.Tensor,
    dim: int,
    base: float = 10000.0,
) -> torch.Tensor:
    r"""Dot product :math:`PE(p)\cdot PE(p+k)` as a function of the offset ``k`` alone.

    .. math::

        PE(p)\cdot PE(p+k) = \sum_{i=0}^{d/2-1} \big(\sin p\theta_i \sin (p+k)\theta_i
        + \cos p\theta_i \cos (p+k)\theta_i\big) = \sum_{i=0}^{d/2-1} \cos(k\,\theta_i)

    It equals ``d/2`` at ``k = 0``, is symmetric in ``k`` and does not depend on ``p``.
    Keeps the device and dtype of ``offsets`` (integer offsets give float32).
    """
    if not isinstance(offsets, torch.Tensor):
        raise TypeError(f"offsets must be a torch.Tensor, got {type(offsets).__name__}")
    dtype = offsets.dtype if offsets.is_floating_point() else torch.float32
    theta = rope_frequencies(dim, base, device=offsets.device, dtype=table_dtype(offsets.device))
    k = offsets.to(theta.dtype)
    return torch.cos(k[..., None] * theta).sum(-1).to(dtype)


class LearnedPositionalEmbedding(nn.Module):
    r"""A learned table of ``max_len`` position vectors, as in BERT and GPT.

    .. math:: p_m = P[m], \qquad P \in \mathbb{R}^{L_{\max} \times d}

    ``max_len * dim`` parameters (BERT-base: 512 x 768 = 393,216), initialised from
    :math:`\mathcal{N}(0, 0.02^2)` as in BERT/GPT and trained with the model. There is no row
    for a position ``>= max_len``: asking for one raises ``IndexError`` naming ``max_len``.
    """

    def __init__(self, max_len: int, dim: int) -> None:
        super().__init__()
        self.max_len = check_int("max_len", max_len, minimum=1)
        self.dim = check_int("dim", dim, minimum=1)
        self.table = nn.Embedding(self.max_len, self.dim)
        nn.init.normal_(self.table.weight, std=0.02)

    def forward(self, positions: torch.Tensor | int) -> torch.Tensor:
        """``positions``: an int length (positions ``0..length-1``) or a long tensor of positions.

        Returns ``[..., dim]`` (``[length, dim]`` for an int).
        """
        if isinstance(positions, torch.Tensor):
            if positions.is_floating_point() or positions.dtype == torch.bool:
                raise TypeError(f"positions must be an integer tensor, got {positions.dtype}")
            pos = positions.to(self.table.weight.device)
        else:
            length = check_int("positions (a length)", positions, minimum=0)
            pos = torch.arange(length, device=self.table.weight.device)
        if pos.numel():
            lo, hi = int(pos.min()), int(pos.max())
            if lo < 0:
                raise IndexError(f"positions must be >= 0, got {lo}")
            if hi >= self.max_len:
                raise IndexError(
                    f"position {hi} is past the learned table: max_len={self.max_len} has rows for "
                    f"positions 0..{self.max_len - 1} only (a learned table cannot extrapolate)"
                )
        return self.table(pos)

    def extra_repr(self) -> str:
        return f"max_len={self.max_len}, dim={self.dim}"
