r"""The frequency ladder shared by sinusoidal encoding and RoPE.

Both methods use the same geometric sequence of angular frequencies
(Vaswani et al., 2017, §3.5; Su et al., RoFormer, eq. 15):

.. math::

    \theta_i = \text{base}^{-2i/d}, \qquad i = 0, 1, \dots, d/2 - 1 .

RoFormer counts :math:`i` from 1 and writes :math:`10000^{-2(i-1)/d}`; Vaswani et al. count from 0,
as the code does.
Pair :math:`i` has wavelength :math:`2\pi / \theta_i`, from :math:`2\pi` (``i = 0``) to almost
:math:`2\pi \cdot \text{base}` (``i = d/2 - 1``).

Derived in the book: *Sinusoidal encoding* (the Fourier-feature view) and *RoPE*.
"""

from __future__ import annotations

import math

import torch

from ._validate import check_even_dim, check_positive, resolve, table_dtype

__all__ = ["rope_frequencies", "wavelengths"]


def rope_frequencies(
    dim: int,
    base: float = 10000.0,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    r"""Angular frequencies :math:`\theta_i = \text{base}^{-2i/d}`, shape ``[dim // 2]``.

    .. math:: \theta_i = \text{base}^{-2i/d}, \quad i = 0, \dots, d/2 - 1

    The same ladder is used by :func:`posviz.sinusoidal_encoding` (Vaswani et al., 2017) and by
    every RoPE function (Su et al., 2021).

    Args:
        dim: model (or head) dimension :math:`d`, a positive even integer.
        base: the frequency base (10000 in both papers), > 0.
    """
    dim = check_even_dim("dim", dim)
    base = check_positive("base", base)
    device, dtype = resolve(device, dtype)
    work = table_dtype(device)  # built in float64, then cast
    exponent = torch.arange(0, dim, 2, device=device, dtype=work) / dim  # 2i/d
    theta = torch.exp(-math.log(base) * exponent)  # base^(-2i/d)
    return theta.to(dtype)


def wavelengths(
    dim: int,
    base: float = 10000.0,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    r"""Wavelength of each pair, :math:`\lambda_i = 2\pi / \theta_i = 2\pi\,\text{base}^{2i/d}`.

    Shape ``[dim // 2]``; runs from :math:`2\pi` to just under :math:`2\pi\cdot\text{base}`.
    """
    device, dtype = resolve(device, dtype)
    theta = rope_frequencies(dim, base, device=device, dtype=table_dtype(device))
    return (2 * math.pi / theta).to(dtype)
