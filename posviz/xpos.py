r"""xPos, RoPE with an exponential decay (Sun et al., 2022, "A Length-Extrapolatable Transformer",
ACL 2023, §3.2).

RoPE rotates pair :math:`i` of the query at position :math:`m` and of the key at position
:math:`n` by :math:`m\theta_i` and :math:`n\theta_i` (:func:`posviz.apply_rope`). xPos also
scales them, the query by :math:`\zeta_i^{m/\gamma}` and the key by :math:`\zeta_i^{-n/\gamma}`, so
pair :math:`i`'s contribution to the score is RoPE's times :math:`\zeta_i^{(m-n)/\gamma}`:

.. math::

    \zeta_i = \frac{i/(d/2) + \gamma'}{1 + \gamma'} \in (0, 1), \qquad \gamma' = 0.4, \qquad
    \gamma = 512 \text{ (the scale base)}.

**Sign.** Every :math:`\zeta_i < 1`, so with the query's exponent :math:`+m/\gamma` and the key's
:math:`-n/\gamma`, :math:`\zeta_i^{(m-n)/\gamma}` *shrinks* as the key lies further back
(:math:`m - n > 0` grows): distant keys get smaller scores in a causal decoder, fastest in the
fast-rotating pairs (small :math:`i`, small :math:`\zeta_i`). The opposite signs would make distant
keys *larger*. Positions enter the scales centred, :math:`m - c` and :math:`n - c` with
:math:`c = \lfloor T/2 \rfloor` (as ``rotary-embedding-torch`` does; the paper's code centres too),
which keeps the factors near 1 and cancels in the score.
"""

from __future__ import annotations

import torch

from ._validate import check_int, check_positive, check_qk, check_real, exact_dtype, resolve
from .rope import DEFAULT_BASE, apply_rope

__all__ = ["apply_xpos", "xpos_scale", "xpos_zeta"]


def xpos_zeta(
    dim: int,
    *,
    zeta_gamma: float = 0.4,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    r"""The per-pair decay bases :math:`\zeta_i = (i/(d/2) + \gamma')/(1 + \gamma')`, :math:`i = 0..d/2-1`
    (Sun et al. 2022, §3.2; :math:`\gamma'` = ``zeta_gamma``, the paper's 0.4), ``[dim // 2]``."""
    dim = check_int("dim", dim, minimum=2)
    if dim % 2:
        raise ValueError(f"dim must be even (xPos scales RoPE's pairs), got {dim}")
    zeta_gamma = check_real("zeta_gamma", zeta_gamma)
    if zeta_gamma <= 0:
        raise ValueError(f"zeta_gamma must be > 0, got {zeta_gamma}")
    device, dtype = resolve(device, dtype)
    i = torch.arange(dim // 2, device=device, dtype=exact_dtype(device))
    zeta = (i / (dim / 2) + zeta_gamma) / (1 + zeta_gamma)  # zeta_i
    return zeta.to(dtype)


def xpos_scale(
    length: int,
    dim: int,
    *,
    scale_base: float = 512.0,
    zeta_gamma: float = 0.4,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    r"""The query scales :math:`\zeta_i^{(m - c)/\gamma}` of positions :math:`m = 0..T-1`, each pair's
    value on both its coordinates (interleaved, :math:`(2i, 2i+1)`), ``[length, dim]``; the key's
    are their reciprocals. :math:`c = \lfloor T/2 \rfloor`, :math:`\gamma` = ``scale_base``."""
    length = check_int("length", length, minimum=1)
    scale_base = check_positive("scale_base", scale_base)
    device, dtype = resolve(device, dtype)
    work = exact_dtype(device)
    zeta = xpos_zeta(dim, zeta_gamma=zeta_gamma, device=device, dtype=work)  # (d/2,)
    power = (torch.arange(length, device=device, dtype=work) - length // 2) / scale_base  # (m - c) / gamma
    scale = zeta[None, :] ** power[:, None]  # zeta_i^((m - c)/gamma), (T, d/2)
    return scale.repeat_interleave(2, dim=-1).to(dtype)  # (T, d): pair i on 2i and 2i+1


def apply_xpos(
    q: torch.Tensor,
    k: torch.Tensor,
    base: float = DEFAULT_BASE,
    *,
    scale_base: float = 512.0,
    zeta_gamma: float = 0.4,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""xPos on queries and keys ``[..., T, d]`` (interleaved pairs, self-attention: one length):

    .. math::

        \tilde q_m = \zeta^{(m - c)/\gamma} \odot R_{\Theta,m}\, q_m, \qquad
        \tilde k_n = \zeta^{-(n - c)/\gamma} \odot R_{\Theta,n}\, k_n, \qquad
        \tilde q_m^\top \tilde k_n = \sum_i \zeta_i^{(m-n)/\gamma}\, s_i(m, n)

    with :math:`s_i(m, n)` pair :math:`i`'s RoPE score (:func:`posviz.apply_rope`), :math:`\zeta_i`
    from :func:`xpos_zeta` and the scales from :func:`xpos_scale`. For a causal decoder
    (:math:`n \le m`) every factor :math:`\zeta_i^{(m-n)/\gamma} \le 1` falls with the distance.

    Args:
        q, k: floating tensors ``[..., T, d]`` of one dtype and device, ``d`` even, the same ``T``.
        base: RoPE's frequency base, > 0.
        scale_base: :math:`\gamma > 0` (the paper's 512).
        zeta_gamma: :math:`\gamma' > 0` (the paper's 0.4).

    Returns:
        ``(q', k')`` in the inputs' dtype and device.
    """
    q, k = check_qk(q, k)
    if q.shape[-2] != k.shape[-2]:
        raise ValueError(f"q and k must have the same length T (self-attention), got {q.shape[-2]} and {k.shape[-2]}")
    length, dim = q.shape[-2], q.shape[-1]
    exact = xpos_scale(
        length, dim, scale_base=scale_base, zeta_gamma=zeta_gamma, device=q.device, dtype=exact_dtype(q.device)
    )  # zeta^((m - c)/gamma), (T, d), float64
    q_scale = exact.to(q.dtype)  # rounded once
    k_scale = (1.0 / exact).to(k.dtype)  # zeta^(-(n - c)/gamma), rounded once
    q_out = apply_rope(q, base=base) * q_scale  # zeta^(+(m - c)/gamma) R_m q_m
    k_out = apply_rope(k, base=base) * k_scale  # zeta^(-(n - c)/gamma) R_n k_n
    return q_out, k_out
