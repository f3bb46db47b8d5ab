r"""Absolute position encodings: added to the token embedding before the first layer.

:math:`x_m \mapsto x_m + p_m`: the fixed sinusoids of Vaswani et al. (2017) and the learned table of
BERT (Devlin et al., 2019) and GPT (Radford et al., 2018). Book chapters: *Sinusoidal encoding*
and *Learned position tables*.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ._validate import (
    check_even_dim,
    check_fits_in_memory,
    check_int,
    check_positive,
    check_real,
    default_dtype,
    resolve,
    round_once,
    table_dtype,
)
from .frequencies import rope_frequencies
from .rope import rope_rotation_matrix

__all__ = [
    "LearnedPositionalEmbedding",
    "binary_counter_waves",
    "sinusoidal_encoding",
    "sinusoidal_offset_similarity",
    "sinusoidal_phase_coverage",
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

        PE(p, 2i) = \sin(p\,\theta_i), \qquad PE(p, 2i+1) = \cos(p\,\theta_i), \qquad
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
    return round_once(pe.reshape(length, dim), dtype)


def sinusoidal_shift_matrix(
    offset: float,
    dim: int,
    base: float = 10000.0,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    r"""The fixed linear map :math:`M_\delta` with :math:`PE(p + \delta) = M_\delta\,PE(p)` for every ``p``.

    From the angle-sum identities, each (sin, cos) pair is rotated by :math:`-\delta\theta_i`:

    .. math::

        \begin{pmatrix} \sin((p+k)\theta_i) \\ \cos((p+k)\theta_i) \end{pmatrix}
        = \begin{pmatrix} \cos \delta\theta_i & \sin \delta\theta_i \\
                          -\sin \delta\theta_i & \cos \delta\theta_i \end{pmatrix}
          \begin{pmatrix} \sin p\theta_i \\ \cos p\theta_i \end{pmatrix},

    so :math:`M_\delta = R_{\Theta,-\delta}`, the block-diagonal RoPE matrix at position :math:`-\delta`
    (:func:`posviz.rope_rotation_matrix`). It does not depend on ``p``: this is the
    "attend by relative position" argument of Vaswani et al. (2017).
    """
    if isinstance(offset, torch.Tensor):
        if offset.numel() != 1:
            raise ValueError(f"offset must be a single number, got a tensor of shape {list(offset.shape)}")
        if offset.dtype == torch.bool or offset.is_complex():
            raise TypeError(f"offset must be a real number, got a {offset.dtype} tensor")
        offset = offset.item()
    offset = check_real("offset", offset)
    device, dtype = resolve(device, dtype)
    exact = rope_rotation_matrix(-offset, dim, base, device=device, dtype=table_dtype(device))  # R_{Theta,-k}
    return round_once(exact, dtype)


def sinusoidal_offset_similarity(
    offsets: torch.Tensor,
    dim: int,
    base: float = 10000.0,
) -> torch.Tensor:
    r"""Dot product :math:`PE(p)\cdot PE(p+\delta)` as a function of the offset :math:`\delta` (``offsets``) alone.

    .. math::

        PE(p)\cdot PE(p+\delta) = \sum_{i=0}^{d/2-1} \big(\sin p\theta_i \sin (p+\delta)\theta_i
        + \cos p\theta_i \cos (p+\delta)\theta_i\big) = \sum_{i=0}^{d/2-1} \cos(\delta\,\theta_i)

    It equals ``d/2`` at :math:`\delta = 0`, is symmetric in :math:`\delta` and does not depend on ``p``.
    Keeps the device and dtype of ``offsets`` (integer offsets give torch's default dtype).
    """
    if not isinstance(offsets, torch.Tensor):
        raise TypeError(f"offsets must be a torch.Tensor, got {type(offsets).__name__}")
    if offsets.is_complex() or offsets.dtype == torch.bool:
        raise TypeError(f"offsets must be a real (integer or floating) tensor, got {offsets.dtype}")
    dtype = offsets.dtype if offsets.is_floating_point() else default_dtype()
    theta = rope_frequencies(dim, base, device=offsets.device, dtype=table_dtype(offsets.device))
    check_fits_in_memory("offset-similarity table", (offsets.numel(), theta.numel()), theta.dtype, offsets.device)
    k = offsets.to(theta.dtype)
    return round_once(torch.cos(k[..., None] * theta).sum(-1), dtype)


def sinusoidal_phase_coverage(
    length: int,
    dim: int,
    base: float = 10000.0,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    r"""Fraction of each (sin, cos) pair's circle that positions ``0 .. length-1`` sweep, ``[dim // 2]``.

    Position :math:`p` puts pair :math:`i` at angle :math:`p\,\theta_i` on the unit circle, so the
    positions :math:`0, \dots, L-1` of a training sequence sweep the arc from 0 to
    :math:`(L-1)\,\theta_i`:

    .. math::

        c_i(L) = \min\!\left(1,\ \frac{(L-1)\,\theta_i}{2\pi}\right)
               = \min\!\left(1,\ \frac{L-1}{\lambda_i}\right), \qquad
        \theta_i = \text{base}^{-2i/d}, \quad \lambda_i = 2\pi/\theta_i .

    :math:`c_i = 1` means the pair has turned at least once: every phase of it occurs before
    :math:`L`. :math:`c_i < 1` means that positions past :math:`L` put the pair at angles no
    training position reached (Vaswani et al., 2017, §3.5 hoped the encoding would extrapolate;
    this is the part of the circle it must extrapolate to).

    Args:
        length: number of positions :math:`L`, >= 1.
        dim: model dimension :math:`d`, a positive even integer.
        base: frequency base, > 0.
    """
    length = check_int("length", length, minimum=1)
    device, dtype = resolve(device, dtype)
    theta = rope_frequencies(dim, base, device=device, dtype=table_dtype(device))
    swept = (length - 1) * theta / (2 * math.pi)  # turns made by pair i over 0..L-1
    return round_once(swept.clamp(max=1.0), dtype)


def binary_counter_waves(positions: torch.Tensor, bits: int, *, smooth: bool = False) -> torch.Tensor:
    r"""The bits of a binary counter as square waves, or their smooth sinusoidal version, ``[..., bits]``.

    Bit :math:`\ell` of position :math:`p` is :math:`b_\ell(p) = \lfloor p / 2^\ell \rfloor \bmod 2`: it flips
    every :math:`2^k` positions and repeats every :math:`2^{k+1}`. Written as a sign it is a square
    wave, and that square wave is the sign of a sine of the same period:

    .. math::

        s_\ell(p) = 1 - 2\,b_\ell(p) = \operatorname{sgn} \sin\!\left(\frac{\pi\,(p + \tfrac12)}{2^\ell}\right)
        \quad (p \in \mathbb{Z}), \qquad
        \tilde s_\ell(p) = \sin\!\left(\frac{\pi\,(p + \tfrac12)}{2^\ell}\right) .

    ``smooth=False`` returns :math:`s_\ell(p)` (bit 0 gives +1, bit 1 gives -1, so that each column
    starts, like a sine, with its positive half) and needs integer positions; ``smooth=True``
    returns :math:`\tilde s_\ell(p)` for any real positions. This is the "binary counter" reading
    of the sinusoidal encoding (Kazemnejad, 2019): fast columns resolve neighbours, slow columns
    the coarse position; the sinusoids of Vaswani et al. (2017) use the ratio
    :math:`\text{base}^{2/d}` between periods instead of 2.

    Args:
        positions: a tensor of positions (integer dtype unless ``smooth``).
        bits: number of bits (columns) :math:`k = 0 .. \text{bits}-1`, in [1, 62].
        smooth: return the sine instead of the square wave.
    """
    if not isinstance(positions, torch.Tensor):
        raise TypeError(f"positions must be a torch.Tensor, got {type(positions).__name__}")
    if positions.dtype == torch.bool or positions.is_complex():
        raise TypeError(f"positions must be an integer or real tensor, got {positions.dtype}")
    bits = check_int("bits", bits, minimum=1, maximum=62)
    if smooth:
        work = table_dtype(positions.device)
        dtype = positions.dtype if positions.is_floating_point() else default_dtype()
        period_half = 2.0 ** torch.arange(bits, device=positions.device, dtype=work)  # 2^k
        angle = math.pi * (positions.to(work)[..., None] + 0.5) / period_half
        return round_once(torch.sin(angle), dtype)
    if positions.is_floating_point():
        raise TypeError(
            f"positions must be an integer tensor for the square waves (smooth=False), got {positions.dtype}"
        )
    shifts = torch.arange(bits, device=positions.device)
    bit = torch.bitwise_and(torch.bitwise_right_shift(positions.long()[..., None], shifts), 1)  # floor(p/2^k) mod 2
    return (1 - 2 * bit).to(default_dtype())


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

    def forward(self, positions: torch.Tensor) -> torch.Tensor:
        """Rows ``P[positions]`` for a long tensor of positions, ``[..., dim]``.

        Like ``torch.nn.Embedding``, the argument is always positions, never a length:
        ``emb(torch.tensor(5))`` is row 5 (shape ``[dim]``). For the first ``n`` rows use
        :meth:`rows` (``emb.rows(n)``, shape ``[n, dim]``); a Python int raises ``TypeError``
        pointing there.
        """
        if not isinstance(positions, torch.Tensor):
            raise TypeError(
                f"positions must be a tensor of positions, got {type(positions).__name__}: "
                f"for the first n rows use emb.rows(n), for row n use emb(torch.tensor(n))"
            )
        if positions.is_floating_point() or positions.dtype == torch.bool or positions.is_complex():
            raise TypeError(f"positions must be an integer tensor, got {positions.dtype}")
        pos = positions.to(self.table.weight.device)
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

    def rows(self, length: int) -> torch.Tensor:
        """The first ``length`` rows, ``P[0..length-1]``, shape ``[length, dim]``."""
        length = check_int("length", length, minimum=0)
        return self(torch.arange(length, device=self.table.weight.device))

    def extra_repr(self) -> str:
        return f"max_len={self.max_len}, dim={self.dim}"
