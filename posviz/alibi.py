r"""Attention with Linear Biases (ALiBi; Press, Smith and Lewis, *Train Short, Test Long*, 2022).

No position is added to the embeddings. Each head :math:`h` adds a fixed penalty to its
attention scores, proportional to the query-key distance (the book's equation *alibi-score*):

.. math:: s_{h,ij} = \frac{q_i^\top k_j}{\sqrt{d}} - \mu_h\,(i - j), \qquad j \le i,

with :math:`d` the head dimension: the bias is added to scores already scaled by
:math:`1/\sqrt{d}` and is not scaled itself (the paper's formula leaves the factor out; the
authors' code applies it to :math:`q_i^\top k_j` only),

with slopes :math:`\mu_h` fixed (the paper's :math:`m`) before training (a geometric sequence). With equal
:math:`q_i^\top k_j` the bias alone spreads a causal row's attention geometrically over the
distance :math:`\delta = i - j` (``alibi_distance_weights``, ``alibi_window_mass``,
``alibi_effective_window``). Book chapter: *ALiBi*.
"""

from __future__ import annotations

import math
import numbers

import torch

from ._validate import check_fits_in_memory, check_int, default_dtype, exact_dtype, resolve, round_once

__all__ = [
    "alibi_bias",
    "alibi_distance_weights",
    "alibi_effective_window",
    "alibi_slopes",
    "alibi_window_mass",
]


def _slopes_list(n: int) -> list[float]:
    # The paper authors' rule (github.com/ofirpress/attention_with_linear_biases, models/transformer.py)
    def power_of_2(n: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))  # 2^(-8/n)
        return [start * start**i for i in range(n)]  # ratio = start

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + _slopes_list(2 * closest)[0::2][: n - closest]


def alibi_slopes(
    num_heads: int,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    r"""The ALiBi paper's head slopes, shape ``[num_heads]``.

    For :math:`H` (``num_heads``) a power of two, a geometric sequence that starts at and has
    ratio :math:`2^{-8/H}`:

    .. math:: \mu_h = \left(2^{-8/H}\right)^{h} = 2^{-8h/H}, \qquad h = 1, \dots, H

    (8 heads: 1/2, 1/4, ..., 1/256). Otherwise the authors' rule: take the :math:`2^{\lfloor
    \log_2 n\rfloor}` slopes of the nearest lower power of two, then append every other slope of
    the next power of two. The result is **not monotone**: 6 heads give
    1/4, 1/16, 1/64, 1/256, 1/2, 1/8.
    """
    num_heads = check_int("num_heads", num_heads, minimum=1)
    device, dtype = resolve(device, dtype)
    exact = torch.tensor(_slopes_list(num_heads), dtype=torch.float64, device="cpu")  # Python floats: float64
    return round_once(exact, dtype).to(device)


def alibi_bias(
    num_heads: int,
    query_len: int,
    key_len: int | None = None,
    *,
    slopes: torch.Tensor | None = None,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    r"""ALiBi's score bias, shape ``[num_heads, query_len, key_len]``.

    .. math:: B_{h,ij} = -\mu_h\,\lvert i - j\rvert, \qquad
              s_{h,ij} = \frac{q_i^\top k_j}{\sqrt{d}} - \mu_h\,(i - j) \quad (j \le i)

    Query ``i`` and key ``j`` both count from 0. For causal attention (``j <= i``) this is the
    paper's :math:`-m (i - j)`, slope :math:`m = \mu_h`; keys after the query are masked anyway. Add it to the scaled
    scores before the softmax (``posviz.attention(q, k, v, bias=..., causal=True)`` does, with its
    default scale :math:`1/\sqrt{d}`); the bias itself is not rescaled.

    Args:
        num_heads: number of heads, >= 1.
        query_len: number of queries, >= 0.
        key_len: number of keys, >= 0 (default ``query_len``).
        slopes: ``[num_heads]`` slopes :math:`\mu_h \ge 0` (finite), checked as by the window
            helpers; default :func:`alibi_slopes` (``num_heads``). The bias keeps their autograd
            graph: slopes that require grad give a bias that does (learned slopes).

    Each value is :math:`-\mu_h \delta` computed in float64 for every distance :math:`\delta` that
    occurs (``query_len + key_len - 1`` of them per head) and rounded once to ``dtype``
    (``posviz._validate.round_once``); the ``[num_heads, query_len, key_len]`` result is
    that small table laid out by :math:`\delta = |i - j|` (a copy, no arithmetic).
    """
    num_heads = check_int("num_heads", num_heads, minimum=1)
    query_len = check_int("query_len", query_len, minimum=0)
    key_len = query_len if key_len is None else check_int("key_len", key_len, minimum=0)
    device, dtype = resolve(device, dtype)
    work = exact_dtype(device)
    if slopes is None:
        m = torch.tensor(_slopes_list(num_heads), dtype=work, device=device)  # float64 (float32 on MPS)
    else:
        m, _ = check_slopes(slopes, shape=(num_heads,))
        m = m.to(device=device, dtype=work)
    check_fits_in_memory("ALiBi bias", (num_heads, query_len, key_len), dtype, device)
    if query_len == 0 or key_len == 0:
        return torch.zeros(num_heads, query_len, key_len, device=device, dtype=dtype)
    n = query_len + key_len - 1
    # distance of each diagonal: s = (query_len - 1) - i + j, delta = |i - j| = |s - (query_len - 1)|
    delta = (torch.arange(n, device=device) - (query_len - 1)).abs_()  # int64: exact at any length
    table = round_once(delta.to(work) * -m[:, None], dtype)  # -m_h delta, [H, n], rounded once
    if query_len >= key_len:
        # row i is table[:, query_len - 1 - i :][:key_len]: a Hankel view (rows overlap), flipped
        # along the queries; flip writes a fresh contiguous [H, q, k] tensor (autograd-safe)
        return table.as_strided((num_heads, query_len, key_len), (n, 1, 1)).flip(1)
    out = torch.empty(num_heads, query_len, key_len, device=device, dtype=dtype)  # fewer rows than columns
    for i in range(query_len):
        out[:, i] = table[:, query_len - 1 - i : n - i]  # keys j = 0 .. key_len - 1
    return out


def check_slopes(slopes: object, *, shape: tuple[int, ...] | None = None) -> tuple[torch.Tensor, torch.dtype]:
    r"""The one check of ALiBi slopes (:func:`alibi_bias` and the window helpers): a real tensor
    or one real number, finite and :math:`\ge 0`, of ``shape`` when given.

    Returns the slopes in float64 (float32 on MPS) on their device, **with their autograd graph**
    (slopes that require grad are not detached), and the dtype to return: a tensor's own floating
    dtype, else torch's default dtype (the library's rule, see ``posviz._validate``).
    """
    if isinstance(slopes, torch.Tensor):
        if slopes.dtype == torch.bool or slopes.is_complex():
            raise TypeError(f"slopes must be a real tensor, got {slopes.dtype}")
        out_dtype = slopes.dtype if slopes.is_floating_point() else default_dtype()
        values = slopes.to(exact_dtype(slopes.device))
    elif isinstance(slopes, numbers.Real) and not isinstance(slopes, bool):
        # a Python number gives torch's default dtype, as torch.tensor(0.5) does
        out_dtype, values = default_dtype(), torch.tensor(float(slopes), dtype=torch.float64)
    else:
        raise TypeError(f"slopes must be a torch.Tensor or a real number, got {type(slopes).__name__}")
    if shape is not None and tuple(values.shape) != shape:
        raise ValueError(f"slopes must have shape {list(shape)} (one per head), got {list(values.shape)}")
    if values.device.type != "meta" and values.numel():
        plain = values.detach()
        if not bool(torch.all(torch.isfinite(plain) & (plain >= 0))):
            raise ValueError(f"slopes must be finite and >= 0, got {plain.flatten()[:8].tolist()}")
    return values, out_dtype


def _check_length(length: object) -> int | None:
    return None if length is None else check_int("length", length, minimum=1)


def alibi_distance_weights(slopes: torch.Tensor | float, length: int) -> torch.Tensor:
    r"""Attention weights that ALiBi's bias alone gives a causal row, by distance; ``[..., length]``.

    A query at position :math:`i = L - 1` sees the :math:`L` keys :math:`j = 0, \dots, L - 1`,
    at distances :math:`\delta = i - j = 0, \dots, L - 1`. When every :math:`q_i^\top k_j` is
    equal, softmax of the bias :math:`-\mu\,\delta` is a truncated geometric distribution
    (Press, Smith and Lewis, 2022):

    .. math::

        a(\delta) = \frac{e^{-\mu\delta}}{\sum_{\delta'=0}^{L-1} e^{-\mu\delta'}}
                  = \frac{e^{-\mu\delta}\,(1 - e^{-\mu})}{1 - e^{-\mu L}},
        \qquad \delta = 0, \dots, L - 1

    (:math:`1/L` for :math:`\mu = 0`). Entry ``[..., d]`` is the weight on distance ``d``, i.e. on
    key :math:`j = L - 1 - d`: the last row of ``posviz.attention`` with zero ``q`` and ``k``,
    ``bias=alibi_bias(...)`` and ``causal=True``, read from right to left.

    Args:
        slopes: ALiBi slopes :math:`\mu \ge 0`, any shape (a tensor, or one number).
        length: the row length :math:`L \ge 1` (number of keys the query sees).
    """
    m, out_dtype = check_slopes(slopes)
    length = check_int("length", length, minimum=1)
    check_fits_in_memory("ALiBi distance weights", (*m.shape, length), m.dtype, m.device)
    delta = torch.arange(length, device=m.device, dtype=m.dtype)
    # softmax(-m * delta) over delta: the closed form above, stable for any m >= 0
    return round_once(torch.softmax(-m[..., None] * delta, dim=-1), out_dtype)


def alibi_window_mass(
    slopes: torch.Tensor | float, window: torch.Tensor | int, length: int | None = None
) -> torch.Tensor:
    r"""Share of a causal row's attention within distance ``window`` (bias only, equal :math:`q\cdot k`).

    Summing :func:`alibi_distance_weights` over :math:`\delta = 0, \dots, w` (a geometric series):

    .. math::

        M(w) = \sum_{\delta=0}^{w} a(\delta) = \frac{1 - e^{-\mu(w+1)}}{1 - e^{-\mu L}},
        \qquad 0 \le w \le L - 1

    (:math:`(w+1)/L` for :math:`\mu = 0`; 1 for :math:`w \ge L - 1`). With ``length=None`` the
    row is taken infinitely long: :math:`M(w) = 1 - e^{-\mu(w+1)}` (Press, Smith and Lewis, 2022,
    for the bias).

    Args:
        slopes: slopes :math:`\mu \ge 0` (a tensor or one number).
        window: distance :math:`w \ge 0` (an integer or an integer-valued tensor); broadcasts with
            ``slopes``.
        length: the row length :math:`L \ge 1`, or ``None`` for an unbounded row.
    """
    m, out_dtype = check_slopes(slopes)
    length = _check_length(length)
    if isinstance(window, torch.Tensor):
        w = window.detach().to(device=m.device, dtype=m.dtype)
    elif isinstance(window, numbers.Integral) and not isinstance(window, bool):
        w = torch.tensor(float(window), device=m.device, dtype=m.dtype)
    else:
        raise TypeError(f"window must be an integer or a torch.Tensor, got {type(window).__name__}")
    if w.numel() and not bool(torch.all((w >= 0) & (w == torch.floor(w)))):
        raise ValueError(f"window must be an integer >= 0, got {w.flatten()[:8].tolist()}")
    if length is not None:
        w = w.clamp(max=length - 1)
    near = -torch.expm1(-m * (w + 1))  # 1 - e^{-m(w+1)}
    if length is None:
        return round_once(near, out_dtype)
    total = -torch.expm1(-m * length)  # 1 - e^{-mL}
    uniform = (w + 1) / length  # the m -> 0 limit
    return round_once(torch.where(m > 0, near / torch.where(m > 0, total, 1.0), uniform), out_dtype)


def alibi_effective_window(slopes: torch.Tensor | float, mass: float = 0.9, length: int | None = None) -> torch.Tensor:
    r"""The shortest distance that holds a share ``mass`` of a causal row's attention (bias only).

    The smallest integer :math:`w` with :math:`M(w) \ge p` (:func:`alibi_window_mass`), solved
    from :math:`1 - e^{-m(w+1)} \ge p\,(1 - e^{-mL})`:

    .. math::

        w_p = \left\lceil \frac{-\ln\!\big(1 - p\,(1 - e^{-mL})\big)}{m} \right\rceil - 1
        \;\xrightarrow{\,L \to \infty\,}\; \left\lceil \frac{\ln\frac{1}{1-p}}{m} \right\rceil - 1
        \approx \frac{\ln 10}{m} \quad (p = 0.9)

    capped at :math:`L - 1` (:math:`\lceil pL \rceil - 1` for :math:`m = 0`). With
    ``length=None`` (an unbounded row) the window is ``inf`` when :math:`m = 0` or :math:`p = 1`.
    Equal :math:`q_i^\top k_j` is an assumption: content scores move the real window. (ALiBi:
    Press, Smith and Lewis, 2022.)

    Args:
        slopes: slopes :math:`\mu \ge 0` (a tensor or one number).
        mass: the share :math:`p \in (0, 1]`.
        length: the row length :math:`L \ge 1`, or ``None`` for an unbounded row.

    Returns:
        Integer-valued windows (float tensor, shape of ``slopes``).
    """
    m, out_dtype = check_slopes(slopes)
    if isinstance(mass, bool) or not isinstance(mass, numbers.Real):
        raise TypeError(f"mass must be a real number in (0, 1], got {mass!r} ({type(mass).__name__})")
    p = float(mass)
    if not 0 < p <= 1:
        raise ValueError(f"mass must be in (0, 1], got {p}")
    length = _check_length(length)
    total = torch.ones_like(m) if length is None else -torch.expm1(-m * length)  # 1 - e^{-mL}
    safe_m = torch.where(m > 0, m, 1.0)
    x = -torch.log1p(-p * total) / safe_m  # w + 1 at the boundary (inf if p * total = 1)
    if length is None:
        x = torch.where(m > 0, x, math.inf)
    else:
        x = torch.where(m > 0, x, p * length)
    # ceil with a relative tolerance, so that rounding error never pushes an exact boundary up
    w = torch.ceil(x * (1 - 1e-12)) - 1
    w = w.clamp(min=0) if length is None else w.clamp(min=0, max=length - 1)
    return round_once(w, out_dtype)
