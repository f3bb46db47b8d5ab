r"""Rotary position embedding (RoPE; Su et al., 2024, *RoFormer*).

RoPE rotates each 2-D pair of a query or key by an angle proportional to its position:

.. math::

    f_{\{q,k\}}(x_m, m) = R_{\Theta,m}\, W_{\{q,k\}}\, x_m, \qquad
    R_{\Theta,m} = \operatorname{diag}\!\big(R(m\theta_0), \dots, R(m\theta_{d/2-1})\big), \qquad
    R(\alpha) = \begin{pmatrix}\cos\alpha & -\sin\alpha\\ \sin\alpha & \cos\alpha\end{pmatrix}

and since :math:`R_{\Theta,m}^\top R_{\Theta,n} = R_{\Theta,n-m}`,

.. math:: q_m^\top k_n = x_m^\top W_q^\top R_{\Theta,n-m} W_k x_n ,

a function of the offset :math:`n - m` only. Values are not rotated.

**Pair layouts.** ``layout="interleaved"`` rotates the pairs :math:`(x_{2i}, x_{2i+1})`, as in
the RoFormer paper, GPT-J and Meta's reference LLaMA code (complex multiplication of adjacent
pairs). ``layout="half"`` rotates :math:`(x_i, x_{i+d/2})`, as in GPT-NeoX and Hugging Face
``transformers`` (whose LLaMA port permutes the converted weights to use it). The two are
the same operation up to a fixed permutation of the dimensions
(:func:`rope_layout_permutation`); weights converted between conventions must permute the rows
of :math:`W_q` and :math:`W_k` accordingly.

**Partial rotary.** ``rotary_dim`` rotates only the first ``rotary_dim`` coordinates and passes
the rest through (GPT-NeoX/Pythia: a quarter of the head; Phi: ``partial_rotary_factor``, a half
by default; GPT-J: 64 of 256), with the pairs of the chosen layout formed *inside* that slice
and :math:`d` = ``rotary_dim`` in :math:`\theta_i = \text{base}^{-2i/d}`.

The chapter's look inside (angles, complex view, relative score, decay factor) is
:mod:`posviz.rope_views`, importable from here too. Published papers are cited by their
journal or conference year (RoFormer: *Neurocomputing* 2024, first on arXiv in 2021).

Book chapter: *Rotary position embedding (RoPE)*.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

import torch

from ._validate import (
    check_even_dim,
    check_fits_in_memory,
    check_int,
    check_positive,
    check_qk,
    check_real,
    check_tensor,
    compute_dtype,
    resolve,
    round_once,
    table_dtype,
)
from .frequencies import rope_frequencies
from .rope_views import (
    Layout,
    _check_layout,
    rope_angles,
    rope_complex_view,
    rope_mean_partial_sum,
    rope_relative_score,
)

__all__ = [
    "apply_rope",
    "clear_rope_cache",
    "rope_cache_info",
    "rope_angles",
    "rope_complex_view",
    "rope_mean_partial_sum",
    "rope_layout_permutation",
    "rope_relative_score",
    "rope_rotation_matrix",
    "rope_scores",
]

DEFAULT_BASE = 10000.0


class RopeCacheInfo(NamedTuple):
    """What :func:`rope_cache_info` reports about the table cache of :func:`apply_rope`."""

    hits: int
    misses: int
    entries: int
    bytes: int
    max_bytes: int


# Tables of apply_rope's default positions, least recently used first. Bounded by bytes (not by a
# count: one long table can outweigh a hundred short ones); a table larger than the whole budget
# is computed and not kept. Tables live on their device: clear_rope_cache() frees them.
_CACHE: OrderedDict[tuple, tuple[torch.Tensor, ...]] = OrderedDict()
_CACHE_STATS = {"hits": 0, "misses": 0, "bytes": 0}
ROPE_CACHE_MAX_BYTES = 64 * 2**20


def _nbytes(tables: tuple[torch.Tensor, ...]) -> int:
    return sum(t.numel() * t.element_size() for t in tables)


def _tables(
    seq: int, theta_key: tuple, make_theta, factor: float, device: torch.device, work: torch.dtype, layout: str
) -> tuple[torch.Tensor, ...]:
    """Position tables for positions ``0..seq-1`` (cached, never handed to the caller).

    The key holds everything the tables depend on: the length, the frequencies (``theta_key``:
    the base and rotated dimension, or the values of explicit frequencies), the cos/sin factor,
    the device, the working dtype (float64 tables must not be served from float32 ones) and the
    layout. ``make_theta()`` gives the float64 frequencies, on a miss only.
    """
    key = (seq, theta_key, factor, device, work, layout)
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        _CACHE_STATS["hits"] += 1
        return hit
    _CACHE_STATS["misses"] += 1
    theta = make_theta()
    angle = torch.arange(seq, device=device, dtype=theta.dtype)[:, None] * theta  # m * theta_i, [seq, r/2]
    tables = _angle_tables(angle, layout, work, factor)
    size = _nbytes(tables)
    if size <= ROPE_CACHE_MAX_BYTES:
        _CACHE[key] = tables
        _CACHE_STATS["bytes"] += size
        while _CACHE_STATS["bytes"] > ROPE_CACHE_MAX_BYTES:
            _, dropped = _CACHE.popitem(last=False)
            _CACHE_STATS["bytes"] -= _nbytes(dropped)
    return tables


def _angle_tables(
    angle: torch.Tensor, layout: str, work: torch.dtype, factor: float = 1.0
) -> tuple[torch.Tensor, ...]:
    """a e^{i angle} (interleaved) or (a cos, a sin) (half), computed in the angle's dtype, cast to ``work``."""
    if layout == "interleaved":
        cis = torch.polar(torch.full_like(angle, factor), angle)  # a e^{i m theta_i}
        return (cis.to(torch.complex128 if work == torch.float64 else torch.complex64),)
    cos, sin = torch.cos(angle), torch.sin(angle)
    if factor != 1.0:
        cos, sin = cos * factor, sin * factor
    return cos.to(work).contiguous(), sin.to(work).contiguous()


def clear_rope_cache() -> None:
    """Drop the cached cos/sin tables of :func:`apply_rope` (and reset the counts)."""
    _CACHE.clear()
    _CACHE_STATS.update(hits=0, misses=0, bytes=0)


def rope_cache_info() -> RopeCacheInfo:
    """Hits, misses, entries and bytes of :func:`apply_rope`'s table cache.

    The cache keeps the tables of the default positions ``0..seq-1`` per ``(seq, frequencies,
    attention_factor, device, dtype, layout)`` (the frequencies: ``base`` and ``rotary_dim``, or
    the values of explicit ``frequencies``), least recently used dropped first, up to
    ``posviz.rope.ROPE_CACHE_MAX_BYTES`` (64 MiB) in all; :func:`clear_rope_cache` empties it.
    """
    return RopeCacheInfo(
        _CACHE_STATS["hits"], _CACHE_STATS["misses"], len(_CACHE), _CACHE_STATS["bytes"], ROPE_CACHE_MAX_BYTES
    )


def _check_rotary_dim(rotary_dim: object, dim: int) -> int:
    if rotary_dim is None:
        return check_even_dim("dim (x.shape[-1])", dim)
    rotary_dim = check_int("rotary_dim", rotary_dim, minimum=1)
    if rotary_dim % 2 or rotary_dim > dim:
        raise ValueError(
            f"rotary_dim must be a positive even integer <= dim (x.shape[-1] = {dim}): the rotated "
            f"coordinates come in pairs, got {rotary_dim}"
        )
    return rotary_dim


def _theta(frequencies: object, base: float, rotary_dim: int, device: torch.device):
    """The cache key of the frequencies and a function giving them in float64 on ``device``."""
    exact = table_dtype(device)
    if frequencies is None:
        return ("base", base, rotary_dim), lambda: rope_frequencies(rotary_dim, base, device=device, dtype=exact)
    if base != DEFAULT_BASE:
        raise ValueError(f"pass either base or frequencies, not both: frequencies replace base (got base={base})")
    frequencies = check_tensor("frequencies", frequencies, ndim=1, shape_hint="[rotary_dim // 2]")
    if frequencies.numel() != rotary_dim // 2:
        raise ValueError(
            f"frequencies must hold one value per rotated pair, rotary_dim // 2 = {rotary_dim // 2}, got "
            f"{frequencies.numel()} (pass rotary_dim={2 * frequencies.numel()} to rotate only that many coordinates)"
        )
    values = frequencies.detach().to(device="cpu", dtype=torch.float64)
    if not bool(torch.isfinite(values).all()):
        raise ValueError("frequencies must be finite, got NaN or inf")
    theta = frequencies.detach().to(device=device, dtype=exact)
    return ("theta", tuple(values.tolist())), lambda: theta


def _check_positions(positions: object, x: torch.Tensor) -> torch.Tensor:
    seq = x.shape[-2]
    if not isinstance(positions, torch.Tensor):
        raise TypeError(f"positions must be a torch.Tensor or None, got {type(positions).__name__}")
    if positions.dtype == torch.bool or positions.is_complex():
        raise TypeError(f"positions must hold real numbers (integers or floats), got {positions.dtype}")
    if positions.dim() == 0 or positions.shape[-1] != seq:
        raise ValueError(
            f"positions must have shape [seq] or [..., seq] with seq={seq}, got {list(positions.shape)}"
        )
    try:
        torch.broadcast_shapes(positions.shape, x.shape[:-1])
    except RuntimeError as err:
        raise ValueError(
            f"positions' batch dims must broadcast against x's: positions {list(positions.shape)} and x "
            f"{list(x.shape)} (positions [..., seq] against x [..., seq, dim]); e.g. positions[:, None, :] for "
            f"x [batch, heads, seq, dim]"
        ) from err
    if positions.is_floating_point() and not bool(torch.isfinite(positions).all()):
        raise ValueError("positions must be finite, got NaN or inf")
    return positions


def apply_rope(
    x: torch.Tensor,
    positions: torch.Tensor | None = None,
    base: float = DEFAULT_BASE,
    *,
    layout: Layout = "interleaved",
    rotary_dim: int | None = None,
    frequencies: torch.Tensor | None = None,
    attention_factor: float = 1.0,
) -> torch.Tensor:
    r"""Rotate the pairs of ``x`` (``[..., seq, dim]``) by their positions' angles.

    .. math::

        \begin{pmatrix} y_{a} \\ y_{b} \end{pmatrix} =
        \begin{pmatrix}\cos m\theta_i & -\sin m\theta_i\\ \sin m\theta_i & \cos m\theta_i\end{pmatrix}
        \begin{pmatrix} x_{a} \\ x_{b} \end{pmatrix}, \qquad \theta_i = \text{base}^{-2i/d}

    with :math:`(a, b) = (2i, 2i+1)` for ``layout="interleaved"`` (RoFormer, GPT-J) and
    :math:`(a, b) = (i, i + d/2)` for ``layout="half"`` (GPT-NeoX, Hugging Face). For the interleaved
    layout this is :math:`R_{\Theta,m} x_m` (:func:`rope_rotation_matrix`).

    **Partial rotary** (``rotary_dim`` = :math:`r < \text{dim}`): only :math:`x_{0..r-1}` rotate,
    paired within that slice (:math:`d = r` above, :math:`(i, i + r/2)` in the half layout,
    as GPT-NeoX and Phi; :math:`(2i, 2i + 1)` interleaved, as GPT-J), and
    :math:`y_j = x_j` for :math:`j \ge r`.

    **Scaled frequencies**: ``frequencies`` replaces :math:`\theta` with a ladder of your own,
    e.g. :func:`posviz.rope_frequencies` with a ``scaling`` rule, and ``attention_factor``
    multiplies cos and sin (the rotated coordinates only, as ``transformers``'
    ``attention_scaling`` does; :func:`posviz.rope_attention_factor`).

    Implementation: interleaved pairs are viewed as complex numbers
    :math:`x_{2i} + \mathrm{i}\,x_{2i+1}` and multiplied by :math:`e^{\mathrm{i} m\theta_i}`
    (one elementwise pass); the half layout uses two fused multiply-adds per half. The
    cos/sin tables for the default positions are cached across calls, up to 64 MiB in all
    (:func:`rope_cache_info`, :func:`clear_rope_cache`).

    Args:
        x: floating tensor ``[..., seq, dim]``. Output keeps its dtype and device
            (float16/bfloat16 are rotated in float32 and cast back; float64 stays float64).
        positions: positions of the ``seq`` rows, shape ``[seq]`` or ``[..., seq]`` whose batch
            dims broadcast against ``x``'s (real integers or floats, finite); default
            ``arange(seq)``. The output has the broadcast batch shape.
        base: frequency base, > 0 (leave it when passing ``frequencies``).
        layout: ``"interleaved"`` or ``"half"``.
        rotary_dim: how many leading coordinates rotate, a positive even integer <= dim;
            default all (``dim`` must then be even).
        frequencies: a 1-D floating tensor of ``rotary_dim // 2`` finite values :math:`\theta_i`.
        attention_factor: a number > 0 multiplying the rotated coordinates (default 1).
    """
    x = check_tensor("x", x, min_dim=2, shape_hint="[..., seq, dim] (at least 2 dims)")
    layout = _check_layout(layout)
    seq, dim = x.shape[-2], x.shape[-1]
    rotary_dim = _check_rotary_dim(rotary_dim, dim)
    base = check_positive("base", base)
    factor = check_positive("attention_factor", attention_factor)
    work = compute_dtype(x.dtype)
    theta_key, make_theta = _theta(frequencies, base, rotary_dim, x.device)

    if positions is None:
        tables = _tables(seq, theta_key, make_theta, factor, x.device, work, layout)
    else:
        positions = _check_positions(positions, x)
        theta = make_theta()
        angle = positions.to(device=x.device, dtype=theta.dtype)[..., None] * theta  # m * theta_i, [..., seq, r/2]
        tables = _angle_tables(angle, layout, work, factor)

    xw = x[..., :rotary_dim].to(work)
    if layout == "interleaved":
        (cis,) = tables
        xc = torch.view_as_complex(xw.contiguous().unflatten(-1, (rotary_dim // 2, 2)))  # x_2i + i x_2i+1
        out = torch.view_as_real(xc * cis).flatten(-2)  # rotate by m theta_i
    else:
        cos, sin = tables
        half = rotary_dim // 2
        x1, x2 = xw[..., :half], xw[..., half:]
        if torch.is_grad_enabled() and (xw.requires_grad or cos.requires_grad):
            # autograd: out= and in-place ops on a fresh buffer are not differentiable
            out = torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
        else:
            shape = torch.broadcast_shapes(xw.shape, (*cos.shape[:-1], rotary_dim))
            out = torch.empty(shape, dtype=work, device=x.device)
            o1, o2 = out[..., :half], out[..., half:]
            torch.mul(x1, cos, out=o1)
            o1.addcmul_(x2, sin, value=-1.0)  # y_i = x_i cos - x_{i+r/2} sin
            torch.mul(x2, cos, out=o2)
            o2.addcmul_(x1, sin)  # y_{i+r/2} = x_i sin + x_{i+r/2} cos
    out = out.to(x.dtype)
    if rotary_dim == dim:
        return out
    rest = x[..., rotary_dim:]  # passed through unrotated
    return torch.cat((out, rest.expand(*out.shape[:-1], dim - rotary_dim)), dim=-1)


def rope_rotation_matrix(
    position: float,
    dim: int,
    base: float = 10000.0,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    r"""The block-diagonal rotation :math:`R_{\Theta,m}` of RoFormer eq. (15), ``[dim, dim]``.

    .. math::

        R_{\Theta,m} = \begin{pmatrix}
        \cos m\theta_0 & -\sin m\theta_0 & & & \\
        \sin m\theta_0 & \cos m\theta_0 & & & \\
        & & \ddots & & \\
        & & & \cos m\theta_{d/2-1} & -\sin m\theta_{d/2-1} \\
        & & & \sin m\theta_{d/2-1} & \cos m\theta_{d/2-1}
        \end{pmatrix}

    It is orthogonal and :math:`R_{\Theta,m}^\top R_{\Theta,n} = R_{\Theta,n-m}`.
    ``apply_rope(x)[..., m, :] == R_m @ x[..., m, :]`` for the interleaved layout.
    """
    if isinstance(position, torch.Tensor):
        if position.numel() != 1:
            raise ValueError(f"position must be a single number, got a tensor of shape {list(position.shape)}")
        position = float(position.item())
    position = check_real("position", position)
    dim = check_even_dim("dim", dim)
    device, dtype = resolve(device, dtype)
    check_fits_in_memory("rotation matrix", (dim, dim), dtype, device)
    work = table_dtype(device)
    angle = position * rope_frequencies(dim, base, device=device, dtype=work)  # m theta_i
    cos, sin = torch.cos(angle), torch.sin(angle)
    r = torch.zeros(dim, dim, device=device, dtype=work)
    idx = torch.arange(0, dim, 2, device=device)
    r[idx, idx] = cos
    r[idx, idx + 1] = -sin
    r[idx + 1, idx] = sin
    r[idx + 1, idx + 1] = cos
    return round_once(r, dtype)


def rope_layout_permutation(dim: int, *, device: torch.device | str | None = None) -> torch.Tensor:
    r"""Index ``P`` that turns interleaved pair order into half-split order, ``[dim]`` long.

    ``P = [0, 2, 4, ..., d-2, 1, 3, ..., d-1]``: position :math:`i` of the half layout holds
    dimension :math:`2i` of the interleaved layout and position :math:`i + d/2` holds
    :math:`2i+1`. Then, for every ``x``,

    .. math::

        \operatorname{RoPE}_{\text{half}}(x_{[P]}) = \operatorname{RoPE}_{\text{interleaved}}(x)_{[P]},

    and because ``q`` and ``k`` are permuted alike, every score :math:`q^\top k` is unchanged.
    Converting weights between conventions permutes the output rows of :math:`W_q, W_k` by ``P``
    (``torch.argsort(P)`` goes back).
    """
    dim = check_even_dim("dim", dim)
    device, _ = resolve(device, None)
    return torch.cat((torch.arange(0, dim, 2, device=device), torch.arange(1, dim, 2, device=device)))


def rope_scores(
    q: torch.Tensor,
    k: torch.Tensor,
    q_positions: torch.Tensor | None = None,
    k_positions: torch.Tensor | None = None,
    base: float = 10000.0,
    *,
    layout: Layout = "interleaved",
    scale: float = 1.0,
) -> torch.Tensor:
    r"""Scores of rotated queries against rotated keys, ``[..., Lq, Lk]`` (RoFormer eq. 16).

    .. math::

        s_{mn} = \text{scale}\cdot (R_{\Theta,m}\, q_m)^\top (R_{\Theta,n}\, k_n)
               = \text{scale}\cdot q_m^\top R_{\Theta,n-m}\, k_n

    with the rotations of :func:`~posviz.apply_rope` (:math:`q_m, k_n` are the rows of ``q`` and
    ``k`` before rotation). ``scale=1`` (default) gives RoFormer's unscaled score; pass
    ``scale=1/math.sqrt(d)`` for the scaled scores of attention.

    Args:
        q: queries ``[..., Lq, dim]`` (``dim`` even).
        k: keys ``[..., Lk, dim]``; their batch dims broadcast against those of ``q``.
        q_positions, k_positions: positions of the rows, as in :func:`~posviz.apply_rope`
            (default ``arange(Lq)`` and ``arange(Lk)``).
        base: frequency base, > 0.
        layout: ``"interleaved"`` or ``"half"``.
        scale: a finite real multiplier.
    """
    q, k = check_qk(q, k, last="dim")
    scale = check_real("scale", scale)
    rq = apply_rope(q, q_positions, base, layout=layout)
    rk = apply_rope(k, k_positions, base, layout=layout)
    return (rq @ rk.transpose(-1, -2)) * scale
