r"""Rotary position embedding (RoPE; Su et al., *RoFormer*, 2021).

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

Book chapter: *Rotary position embedding (RoPE)*.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Literal, NamedTuple

import torch

from ._validate import (
    check_even_dim,
    check_fits_in_memory,
    check_positive,
    check_qk,
    check_real,
    check_tensor,
    compute_dtype,
    default_dtype,
    resolve,
    table_dtype,
)
from .frequencies import rope_frequencies

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

Layout = Literal["interleaved", "half"]
_LAYOUTS = ("interleaved", "half")


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


def _build_tables(
    seq: int, dim: int, base: float, device: torch.device, work: torch.dtype, layout: str
) -> tuple[torch.Tensor, ...]:
    exact = table_dtype(device)
    theta = rope_frequencies(dim, base, device=device, dtype=exact)
    angle = torch.arange(seq, device=device, dtype=exact)[:, None] * theta  # m * theta_i, [seq, d/2]
    return _angle_tables(angle, layout, work)


def _tables(
    seq: int, dim: int, base: float, device: torch.device, work: torch.dtype, layout: str
) -> tuple[torch.Tensor, ...]:
    """Position tables for positions ``0..seq-1``, cached (never handed to the caller)."""
    key = (seq, dim, base, device, work, layout)
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        _CACHE_STATS["hits"] += 1
        return hit
    _CACHE_STATS["misses"] += 1
    tables = _build_tables(seq, dim, base, device, work, layout)
    size = _nbytes(tables)
    if size <= ROPE_CACHE_MAX_BYTES:
        _CACHE[key] = tables
        _CACHE_STATS["bytes"] += size
        while _CACHE_STATS["bytes"] > ROPE_CACHE_MAX_BYTES:
            _, dropped = _CACHE.popitem(last=False)
            _CACHE_STATS["bytes"] -= _nbytes(dropped)
    return tables


def _angle_tables(angle: torch.Tensor, layout: str, work: torch.dtype) -> tuple[torch.Tensor, ...]:
    """e^{i angle} (interleaved) or (cos, sin) (half), computed in the angle's dtype, cast to ``work``."""
    if layout == "interleaved":
        cis = torch.polar(torch.ones_like(angle), angle)  # e^{i m theta_i}
        return (cis.to(torch.complex128 if work == torch.float64 else torch.complex64),)
    return torch.cos(angle).to(work).contiguous(), torch.sin(angle).to(work).contiguous()


def clear_rope_cache() -> None:
    """Drop the cached cos/sin tables of :func:`apply_rope` (and reset the counts)."""
    _CACHE.clear()
    _CACHE_STATS.update(hits=0, misses=0, bytes=0)


def rope_cache_info() -> RopeCacheInfo:
    """Hits, misses, entries and bytes of :func:`apply_rope`'s table cache.

    The cache keeps the tables of the default positions ``0..seq-1`` per ``(seq, dim, base,
    device, dtype, layout)``, least recently used dropped first, up to
    ``posviz.rope.ROPE_CACHE_MAX_BYTES`` (64 MiB) in all; :func:`clear_rope_cache` empties it.
    """
    return RopeCacheInfo(
        _CACHE_STATS["hits"], _CACHE_STATS["misses"], len(_CACHE), _CACHE_STATS["bytes"], ROPE_CACHE_MAX_BYTES
    )


def apply_rope(
    x: torch.Tensor,
    positions: torch.Tensor | None = None,
    base: float = 10000.0,
    *,
    layout: Layout = "interleaved",
) -> torch.Tensor:
    r"""Rotate the pairs of ``x`` (``[..., seq, dim]``) by their positions' angles.

    .. math::

        \begin{pmatrix} y_{a} \\ y_{b} \end{pmatrix} =
        \begin{pmatrix}\cos m\theta_i & -\sin m\theta_i\\ \sin m\theta_i & \cos m\theta_i\end{pmatrix}
        \begin{pmatrix} x_{a} \\ x_{b} \end{pmatrix}, \qquad \theta_i = \text{base}^{-2i/d}

    with :math:`(a, b) = (2i, 2i+1)` for ``layout="interleaved"`` (RoFormer) and
    :math:`(a, b) = (i, i + d/2)` for ``layout="half"`` (GPT-NeoX, Hugging Face). For the interleaved
    layout this is :math:`R_{\Theta,m} x_m` (:func:`rope_rotation_matrix`).

    Implementation: interleaved pairs are viewed as complex numbers
    :math:`x_{2i} + \mathrm{i}\,x_{2i+1}` and multiplied by :math:`e^{\mathrm{i} m\theta_i}`
    (one elementwise pass); the half layout uses two fused multiply-adds per half. The
    cos/sin tables for the default positions are cached across calls, up to 64 MiB in all
    (:func:`rope_cache_info`, :func:`clear_rope_cache`).

    Args:
        x: floating tensor ``[..., seq, dim]``; ``dim`` even. Output keeps its dtype and device
            (float16/bfloat16 are rotated in float32 and cast back; float64 stays float64).
        positions: positions of the ``seq`` rows, shape ``[seq]`` or broadcastable to
            ``x.shape[:-1]`` (integers or reals); default ``arange(seq)``.
        base: frequency base, > 0.
        layout: ``"interleaved"`` or ``"half"``.
    """
    x = check_tensor("x", x, min_dim=2, shape_hint="[..., seq, dim] (at least 2 dims)")
    layout = _check_layout(layout)
    seq, dim = x.shape[-2], x.shape[-1]
    check_even_dim("dim (x.shape[-1])", dim)
    base = check_positive("base", base)
    work = compute_dtype(x.dtype)

    if positions is None:
        tables = _tables(seq, dim, base, x.device, work, layout)
    else:
        if not isinstance(positions, torch.Tensor):
            raise TypeError(f"positions must be a torch.Tensor or None, got {type(positions).__name__}")
        if positions.dim() == 0 or positions.shape[-1] != seq:
            raise ValueError(
                f"positions must have shape [seq] or [..., seq] with seq={seq}, got {list(positions.shape)}"
            )
        exact = table_dtype(x.device)
        theta = rope_frequencies(dim, base, device=x.device, dtype=exact)
        angle = positions.to(device=x.device, dtype=exact)[..., None] * theta  # m * theta_i, [..., seq, d/2]
        tables = _angle_tables(angle, layout, work)

    xw = x.to(work)
    if layout == "interleaved":
        (cis,) = tables
        xc = torch.view_as_complex(xw.contiguous().unflatten(-1, (dim // 2, 2)))  # x_2i + i x_2i+1
        out = torch.view_as_real(xc * cis).flatten(-2)  # rotate by m theta_i
    else:
        cos, sin = tables
        half = dim // 2
        x1, x2 = xw[..., :half], xw[..., half:]
        out = torch.empty(torch.broadcast_shapes(xw.shape, (*cos.shape[:-1], dim)), dtype=work, device=x.device)
        o1, o2 = out[..., :half], out[..., half:]
        torch.mul(x1, cos, out=o1)
        o1.addcmul_(x2, sin, value=-1.0)  # y_i = x_i cos - x_{i+d/2} sin
        torch.mul(x2, cos, out=o2)
        o2.addcmul_(x1, sin)  # y_{i+d/2} = x_i sin + x_{i+d/2} cos
    return out.to(x.dtype)


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
    return r.to(dtype)


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
    return s.abs().mean(-1).to(dtype)


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
    return (positions.to(work)[..., None] * theta).to(dtype)  # m * theta_i


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
    return (h[..., None, :] * phase).real.sum(-1).to(out_dtype).reshape((*batch, *offsets.shape))


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
