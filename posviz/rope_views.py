r"""RoPE seen pair by pair: the angles, the complex view, the relative score and the decay factor.

The functions the *RoPE* chapter uses to look inside :func:`posviz.apply_rope` (Su et al., 2024,
*RoFormer*): the angle :math:`m\theta_i` of every pair (:func:`rope_angles`), the pairs as complex
numbers (:func:`rope_complex_view`), the score as a function of the offset only
(:func:`rope_relative_score`) and the distance factor of RoFormer's long-term-decay bound
(:func:`rope_mean_partial_sum`). All are importable from :mod:`posviz.rope` too.
"""

from __future__ import annotations

from typing import Literal

import torch

from ._validate import (
    check_even_dim,
    check_fits_in_memory,
    check_positive,
    check_real,
    check_tensor,
    compute_dtype,
    default_dtype,
    round_once,
    table_dtype,
)
from .frequencies import rope_frequencies

__all__ = [
    "rope_angles",
    "rope_complex_view",
    "rope_mean_partial_sum",
    "rope_relative_score",
]

Layout = Literal["interleaved", "half"]
_LAYOUTS = ("interleaved", "half")


def rope_mean_partial_sum(
    distances: torch.Tensor,
    dim: int,
    base: float = 10000.0,
) -> torch.Tensor:
    r"""The distance-dependent factor of RoFormer's long-term-decay bound (§3.4.3): the mean
    partial-sum magnitude :math:`\bar S(r)`, *not* a bound on the score itself.

    Writing the score as a sum over pairs and applying Abel summation gives, for the offset
    :math:`r = m - n`,

    .. math:: S_j(r) = \sum_{k=0}^{j-1} e^{\mathrm{i}\,r\,\theta_k}, \qquad
              |q_m^\top k_n| \le \Big(\max_i |h_{i+1} - h_i|\Big) \sum_{j=1}^{d/2} |S_j(r)|
              = \Big(\max_i |h_{i+1} - h_i|\Big)\,\frac{d}{2}\,\bar S(r), \qquad
              \bar S(r) = \frac{1}{d/2}\sum_{j=1}^{d/2} |S_j(r)| ,

    with :math:`h_i` the pair products of the query and key. This function returns
    :math:`\bar S(r)` for each offset in ``distances``: it depends on the offset and :math:`d`
    only, starts at :math:`\bar S(0) = (d/2 + 1)/2` and decays (with oscillation) as
    :math:`|r|` grows, which is the paper's Figure 2. To bound a score, multiply by
    :math:`\tfrac{d}{2} \max_i |h_{i+1} - h_i|` of that query and key.
    """
    distances = check_tensor("distances", distances, floating=False)
    if distances.is_complex() or distances.dtype == torch.bool:
        raise TypeError(f"distances must hold real numbers, got {distances.dtype}")
    dim = check_even_dim("dim", dim)
    base = check_positive("base", base)
    dtype = distances.dtype if distances.is_floating_point() else default_dtype()
    work = table_dtype(distances.device)
    check_fits_in_memory("decay-bound table", (distances.numel(), dim // 2), torch.complex128, distances.device)
    theta = rope_frequencies(dim, base, device=distances.device, dtype=work)
    angle = distances.to(work)[..., None] * theta  # (m-n) theta_k
    s = torch.cumsum(torch.polar(torch.ones_like(angle), angle), dim=-1)  # S_j, j = 1..d/2
    return round_once(s.abs().mean(-1), dtype)


# --- Functions for the RoPE chapter: angles, the complex view and scores. -----------------------


def rope_angles(positions: torch.Tensor | float, dim: int, base: float = 10000.0) -> torch.Tensor:
    r"""The rotation angle of every pair at every position, :math:`m\,\theta_i`, shape ``[..., dim // 2]``.

    .. math:: \phi_{m,i} = m\,\theta_i = m \cdot \text{base}^{-2i/d}, \qquad i = 0, \dots, d/2 - 1

    (RoFormer eq. 15 counts :math:`i` from 1 and writes :math:`10000^{-2(i-1)/d}`.) Angles are in
    radians and not wrapped: pair :math:`i` has turned :math:`\phi_{m,i} / 2\pi` full turns at
    position :math:`m`. Both layouts use the same angles; only the pairing of dimensions differs.

    Args:
        positions: a real number or a tensor of positions (any shape, integers or reals).
        dim: model (or head) dimension :math:`d`, a positive even integer.
        base: frequency base, > 0.

    Returns:
        ``positions.shape + (dim // 2,)``, computed in float64 and returned in the positions'
        floating dtype (torch's default dtype for integer positions or a Python number), on their
        device.
    """
    python_number = not isinstance(positions, torch.Tensor)
    if python_number:
        if isinstance(positions, bool) or not isinstance(positions, (int, float)):
            raise TypeError(f"positions must be a torch.Tensor or a real number, got {type(positions).__name__}")
        positions = torch.tensor(check_real("positions", positions), dtype=torch.float64)
    if positions.is_complex() or positions.dtype == torch.bool:
        raise TypeError(f"positions must hold real numbers, got {positions.dtype}")
    dim = check_even_dim("dim", dim)
    base = check_positive("base", base)
    dtype = positions.dtype if positions.is_floating_point() and not python_number else default_dtype()
    work = table_dtype(positions.device)
    check_fits_in_memory("angle table", (positions.numel(), dim // 2), work, positions.device)
    theta = rope_frequencies(dim, base, device=positions.device, dtype=work)
    return round_once(positions.to(work)[..., None] * theta, dtype)  # m * theta_i


def _pair_index(dim: int, layout: str, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Dimensions ``(a_i, b_i)`` of pair ``i``: ``(2i, 2i+1)`` interleaved, ``(i, i+d/2)`` half."""
    if layout == "interleaved":
        return torch.arange(0, dim, 2, device=device), torch.arange(1, dim, 2, device=device)
    return torch.arange(0, dim // 2, device=device), torch.arange(dim // 2, dim, device=device)


def _check_layout(layout: object) -> str:
    if layout not in _LAYOUTS:
        raise ValueError(f"layout must be one of {_LAYOUTS}, got {layout!r}")
    return str(layout)


def _check_vectors(name: str, x: object) -> torch.Tensor:
    x = check_tensor(name, x, min_dim=1, shape_hint="[..., dim] (at least 1 dim)")
    check_even_dim(f"dim ({name}.shape[-1])", x.shape[-1])
    return x


def rope_complex_view(x: torch.Tensor, *, layout: Layout = "interleaved") -> torch.Tensor:
    r"""The pairs of ``x`` (``[..., dim]``) as complex numbers, shape ``[..., dim // 2]``.

    .. math::

        \tilde x_i = x_{a_i} + \mathrm{i}\, x_{b_i}, \qquad
        (a_i, b_i) = \begin{cases} (2i,\ 2i+1) & \texttt{layout="interleaved"} \text{ (RoFormer §3.4.2)}\\
        (i,\ i + d/2) & \texttt{layout="half"} \end{cases}

    In this view RoPE at position :math:`m` is the elementwise product
    :math:`\tilde x_i\, e^{\mathrm{i} m\theta_i}` (a rotation of pair :math:`i` by :math:`m\theta_i`),
    and the real dot product of two pairs is :math:`\operatorname{Re}[\tilde q_i\,\overline{\tilde k_i}]`.
    Returns a new tensor (complex128 for float64 input, else complex64).
    """
    x = _check_vectors("x", x)
    layout = _check_layout(layout)
    a, b = _pair_index(x.shape[-1], layout, x.device)
    xw = x.to(compute_dtype(x.dtype))
    return torch.complex(xw[..., a], xw[..., b])


def rope_relative_score(
    q: torch.Tensor,
    k: torch.Tensor,
    offsets: torch.Tensor,
    base: float = 10000.0,
    *,
    layout: Layout = "interleaved",
) -> torch.Tensor:
    r"""The RoPE score of an unrotated query ``q`` and key ``k`` as a function of :math:`r = m - n`.

    Rotating ``q`` to position :math:`m` and ``k`` to position :math:`n` and taking the dot
    product gives, in the complex view of :func:`rope_complex_view` (RoFormer eq. 12 and §3.4.3),

    .. math::

        (R_{\Theta,m}\, q)^\top (R_{\Theta,n}\, k)
        = \operatorname{Re}\Big[\sum_{i=0}^{d/2-1} \tilde q_i\, \overline{\tilde k_i}\,
          e^{\mathrm{i}\,(m-n)\,\theta_i}\Big],

    which depends on the positions only through the offset :math:`r = m - n` (query minus key).
    This function evaluates the right-hand side for each offset, without rotating anything;
    :func:`rope_scores` computes the left-hand side.

    Args:
        q, k: floating tensors ``[..., dim]`` (``dim`` even), broadcastable against each other.
        offsets: relative positions :math:`r = m - n`, a 0-D or 1-D tensor (integers or reals).
        base: frequency base, > 0.
        layout: ``"interleaved"`` or ``"half"`` (how the dimensions of ``q`` and ``k`` are paired).

    Returns:
        ``[..., len(offsets)]`` (``[...]`` for 0-D ``offsets``), computed in float64, returned in
        the dtype of ``q`` and ``k`` (which must match).
    """
    q, k = _check_vectors("q", q), _check_vectors("k", k)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same last dim, got q: {q.shape[-1]} and k: {k.shape[-1]}")
    if q.dtype != k.dtype:
        raise TypeError(f"q and k must have the same dtype, got q: {q.dtype} and k: {k.dtype}; cast one with .to()")
    if not isinstance(offsets, torch.Tensor):
        raise TypeError(f"offsets must be a torch.Tensor, got {type(offsets).__name__}")
    if offsets.is_complex() or offsets.dtype == torch.bool:
        raise TypeError(f"offsets must hold real numbers, got {offsets.dtype}")
    if offsets.dim() > 1:
        raise ValueError(
            f"offsets must be a 0-D or 1-D tensor of real numbers, got shape {list(offsets.shape)} ({offsets.dtype})"
        )
    layout = _check_layout(layout)
    base = check_positive("base", base)
    try:
        batch = torch.broadcast_shapes(q.shape[:-1], k.shape[:-1])
    except RuntimeError as err:
        raise ValueError(f"q and k must broadcast, got q: {list(q.shape)} and k: {list(k.shape)}") from err
    dim = q.shape[-1]
    check_fits_in_memory("score table", (*batch, max(offsets.numel(), 1), dim // 2), torch.complex128, q.device)
    out_dtype = q.dtype
    work = table_dtype(q.device)
    qc = rope_complex_view(q.to(work), layout=layout)
    kc = rope_complex_view(k.to(device=q.device, dtype=work), layout=layout)
    h = qc * kc.conj()  # q~_i conj(k~_i), [..., d/2]
    angle = rope_angles(offsets.to(device=q.device, dtype=work), dim, base)  # r theta_i, [R, d/2]
    phase = torch.polar(torch.ones_like(angle), angle)  # e^{i r theta_i}
    return round_once((h[..., None, :] * phase).real.sum(-1), out_dtype).reshape((*batch, *offsets.shape))
