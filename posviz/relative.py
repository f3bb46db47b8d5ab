r"""Relative position encodings: the position enters through the offset between query and key.

* Shaw, Uszkoreit and Vaswani (2018): learned vectors for each clipped offset, added to keys
  and values inside attention.
* Dai et al. (2019), Transformer-XL: the absolute score split into four terms
  (``absolute_score_terms``), then rewritten with the sinusoid of the offset and two learned
  global vectors (``transformer_xl_scores``).
* Raffel et al. (2020), T5: one learned scalar per head for each *bucket* of offsets, added to
  the scores.

``posviz.cost.relative_attention_cost`` times plain attention against Shaw-style and T5-bias attention.

**Sign conventions.** The book writes the offset as query minus key, :math:`r = m - n`, as the
article does. Shaw et al. index their tables by :math:`\operatorname{clip}(j - i, k)` (key minus
query), so :class:`ShawRelativePosition`'s tables are theirs mirrored (row :math:`r` here is
row :math:`-r` there; nothing learnable changes). T5's code also uses key minus query,
``relative_position = memory_position - context_position`` (= :math:`n - m = -r`), and
:func:`t5_relative_bucket` takes T5's sign.
Book chapter: *Relative position encoding*.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

from ._validate import check_fits_in_memory, check_int, check_positive, check_same_dtype_device, check_tensor, resolve
from .dot_product import check_bias, check_causal, check_inputs, check_values, masked_softmax

__all__ = [
    "ScoreTerms",
    "ShawRelativePosition",
    "T5RelativeBias",
    "absolute_score_terms",
    "relative_positions",
    "t5_relative_bucket",
    "transformer_xl_scores",
]


def _clip_range(max_distance: int | tuple[int, int] | None) -> tuple[int | None, int | None]:
    if max_distance is None:
        return None, None
    if isinstance(max_distance, tuple):
        if len(max_distance) != 2:
            raise ValueError(f"max_distance as a tuple must be (Rmin, Rmax), got {max_distance!r}")
        lo = check_int("max_distance[0] (Rmin)", max_distance[0])
        hi = check_int("max_distance[1] (Rmax)", max_distance[1])
        if lo > 0 or hi < 0:
            raise ValueError(f"max_distance (Rmin, Rmax) must satisfy Rmin <= 0 <= Rmax, got ({lo}, {hi})")
        return lo, hi
    k = check_int("max_distance", max_distance, minimum=0)
    return -k, k


def relative_positions(
    query_len: int,
    key_len: int | None = None,
    max_distance: int | tuple[int, int] | None = None,
    *,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    r"""Clipped relative positions (query minus key), long ``[query_len, key_len]``.

    .. math:: r_{mn} = \operatorname{clip}(m - n,\; R_{\min},\; R_{\max})

    Args:
        query_len, key_len: numbers of queries and keys (>= 0; ``key_len`` defaults to
            ``query_len``).
        max_distance: ``k`` for Shaw et al.'s symmetric clip :math:`[-k, k]`, a tuple
            ``(Rmin, Rmax)`` with ``Rmin <= 0 <= Rmax``, or ``None`` for no clipping.
    """
    query_len = check_int("query_len", query_len, minimum=0)
    key_len = query_len if key_len is None else check_int("key_len", key_len, minimum=0)
    lo, hi = _clip_range(max_distance)
    device, _ = resolve(device, None)
    check_fits_in_memory("relative-position matrix", (query_len, key_len), torch.long, device)
    m = torch.arange(query_len, device=device)[:, None]
    n = torch.arange(key_len, device=device)[None, :]
    r = m - n  # query minus key
    if lo is not None:
        r = r.clamp_(lo, hi)
    return r


def t5_relative_bucket(
    relative_position: torch.Tensor,
    *,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
) -> torch.Tensor:
    r"""T5's bucket index for each relative position; identical to T5 / Hugging Face.

    ``relative_position`` is **key minus query** (:math:`n - m`, T5's sign), an integer tensor.
    With :math:`N` buckets per direction (``num_buckets``, halved when bidirectional) and
    :math:`E = N/2` exact buckets, for a distance :math:`a \ge 0`:

    .. math::

        \text{bucket}(a) = \begin{cases}
            a & a < E \\
            \min\!\Big(N - 1,\; E + \Big\lfloor \dfrac{\ln(a / E)}{\ln(D / E)}\,(N - E) \Big\rfloor\Big)
              & a \ge E
        \end{cases}

    where :math:`D` is ``max_distance``: the buckets are log-spaced up to :math:`D`, and the
    last one, :math:`N - 1`, begins before :math:`D` (at distance 91 bidirectional, 113 causal,
    for T5's defaults :math:`N = 32` and :math:`D = 128`) and holds every larger distance.
    Bidirectional: :math:`a = |n - m|` and keys after the query (:math:`n > m`) use
    buckets :math:`N .. 2N-1`. Causal: :math:`a = \max(m - n, 0)`, so every future key falls in
    bucket 0 (masked anyway).

    Raises ``ValueError`` when ``max_distance <= E``: T5's formula then yields negative or
    undefined buckets.
    """
    if not isinstance(relative_position, torch.Tensor):
        raise TypeError(f"relative_position must be a torch.Tensor, got {type(relative_position).__name__}")
    if relative_position.is_floating_point() or relative_position.is_complex() or relative_position.dtype == torch.bool:
        raise TypeError(f"relative_position must be an integer tensor, got {relative_position.dtype}")
    if not isinstance(bidirectional, bool):
        raise TypeError(f"bidirectional must be a bool, got {type(bidirectional).__name__}")
    num_buckets = check_int("num_buckets", num_buckets, minimum=4 if bidirectional else 2)
    max_distance = check_int("max_distance", max_distance, minimum=1)
    per_direction = num_buckets // 2 if bidirectional else num_buckets
    max_exact = per_direction // 2
    if max_distance <= max_exact:
        raise ValueError(
            f"max_distance must be > the number of exact buckets ({max_exact} = num_buckets"
            f"{' // 2' if bidirectional else ''} // 2), got max_distance={max_distance}"
        )

    relative_position = relative_position.long()
    if bidirectional:
        distance = relative_position.abs()
    else:
        distance = torch.clamp(relative_position, max=0).neg_()  # max(m - n, 0)
    # log-spaced buckets between max_exact and max_distance (float32, exactly as T5 computes them);
    # each step below works in place on one fresh buffer
    large = distance.float().div_(max_exact).log_().div_(math.log(max_distance / max_exact))
    large = large.mul_(per_direction - max_exact).long().add_(max_exact).clamp_(max=per_direction - 1)
    buckets = torch.where(distance < max_exact, distance, large)
    if bidirectional:
        buckets += (relative_position > 0).long() * per_direction  # keys after the query
    return buckets


class ShawRelativePosition(nn.Module):
    r"""Shaw et al.'s relative keys and values with clipping (one table shared by all heads).

    .. math::

        e_{mn} = \frac{q_m^\top (k_n + a^K_{r})}{\sqrt{d}}, \qquad
        o_m = \sum_n \alpha_{mn}\,(v_n + a^V_{r}), \qquad r = \operatorname{clip}(m - n, -\kappa, \kappa)

    i.e. :math:`f_k(x_n, n) = W_k x_n + a^K_r` and :math:`f_v(x_n, n) = W_v x_n + a^V_r`. The
    query carries no position: the offset already involves both ends.
    :math:`2\kappa + 1` (``max_distance`` :math:`= \kappa`) learned vectors
    per table; every offset past :math:`\pm\kappa` shares the edge vector, which is why it runs on
    inputs of any length (and why it cannot tell where the first token is).
    """

    def __init__(self, head_dim: int, max_distance: int, *, values: bool = True) -> None:
        super().__init__()
        self.head_dim = check_int("head_dim", head_dim, minimum=1)
        self.max_distance = check_int("max_distance", max_distance, minimum=0)
        n = 2 * self.max_distance + 1
        self.key_table = nn.Parameter(torch.randn(n, self.head_dim) * 0.02)  # a^K_r, r = -k..k
        self.value_table = nn.Parameter(torch.randn(n, self.head_dim) * 0.02) if values else None

    def index(self, query_len: int, key_len: int | None = None) -> torch.Tensor:
        """Row of each table used by pair ``(m, n)``: ``clip(m - n) + k``, long ``[q, k]``."""
        r = relative_positions(query_len, key_len, self.max_distance, device=self.key_table.device)
        return r + self.max_distance

    def forward(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        *,
        causal: bool = False,
        bias: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Attention with relative keys/values. ``q``: ``[..., Lq, d]``, ``k, v``: ``[..., Lk, d]``
        (one dtype and device). ``bias``: added to the scores, or a boolean mask (True = may
        attend); ``bias`` and ``causal`` follow :func:`posviz.attention`'s one mask rule
        (``posviz.dot_product.masked_softmax``): a query whose every key is hidden gets zero
        weights and a zero output (its relative values included), not NaN.

        Returns ``(output [..., Lq, d], weights [..., Lq, Lk])``.
        """
        q, k = check_inputs(q, k)
        causal = check_causal(causal)
        if q.shape[-1] != self.head_dim:
            raise ValueError(f"q.shape[-1] must equal head_dim={self.head_dim}, got {q.shape[-1]}")
        shape, bias = check_bias(bias, q, k)
        v = check_values(v, q, k, shape)
        if self.value_table is not None and v.shape[-1] != self.head_dim:
            raise ValueError(f"v.shape[-1] must equal head_dim={self.head_dim} (relative values), got {v.shape[-1]}")
        lq, lk = q.shape[-2], k.shape[-2]
        tables = 1 if self.value_table is None else 2
        check_fits_in_memory("Shaw's relative key/value vectors", (tables, lq, lk, self.head_dim), q.dtype, q.device)
        check_fits_in_memory("attention map", shape, q.dtype, q.device, copies=3)
        idx = self.index(lq, lk)  # [Lq, Lk]
        a_k = self.key_table.to(q.dtype)[idx]  # (Lq, Lk, d)
        scale = 1.0 / math.sqrt(self.head_dim)
        rel = torch.einsum("...md,mnd->...mn", q, a_k) * scale  # q_m . a^K_{mn} / sqrt(d)
        scores = torch.matmul(q, k.transpose(-2, -1)).mul_(scale).add_(rel)  # q_m . (k_n + a^K_mn) / sqrt(d)
        weights = masked_softmax(scores, bias, causal, shape)  # the mask rule of posviz.attention
        out = torch.matmul(weights, v)  # sum_n alpha_mn v_n
        if self.value_table is not None:
            a_v = self.value_table.to(q.dtype)[idx]  # (Lq, Lk, d)
            out = out + torch.einsum("...mn,mnd->...md", weights, a_v)  # sum_n alpha_mn a^V_mn
        return out, weights


class T5RelativeBias(nn.Module):
    r"""T5's learned relative bias: one scalar per (bucket, head), added to the scores.

    .. math:: B_{h,mn} = b_{h,\ \operatorname{bucket}(n - m)}

    ``num_buckets * num_heads`` parameters (T5: 32 x heads), shared by all layers in T5. T5 does
    not scale scores by :math:`1/\sqrt{d}` (it folds that into the initialisation); pass
    ``scale=`` to :func:`posviz.attention` as your model needs.
    """

    def __init__(
        self, num_heads: int, *, num_buckets: int = 32, max_distance: int = 128, bidirectional: bool = True
    ) -> None:
        super().__init__()
        self.num_heads = check_int("num_heads", num_heads, minimum=1)
        self.num_buckets = num_buckets
        self.max_distance = max_distance
        self.bidirectional = bidirectional
        t5_relative_bucket(
            torch.zeros(1, dtype=torch.long),
            bidirectional=bidirectional,
            num_buckets=num_buckets,
            max_distance=max_distance,
        )  # validate now
        self.embedding = nn.Embedding(num_buckets, self.num_heads)
        nn.init.normal_(self.embedding.weight, std=0.02)

    def buckets(self, query_len: int, key_len: int | None = None) -> torch.Tensor:
        """Bucket of each pair, long ``[q, k]``; T5's sign: key minus query."""
        r = relative_positions(query_len, key_len, device=self.embedding.weight.device)  # m - n
        return t5_relative_bucket(
            -r, bidirectional=self.bidirectional, num_buckets=self.num_buckets, max_distance=self.max_distance
        )

    def forward(self, query_len: int, key_len: int | None = None) -> torch.Tensor:
        """The bias ``[num_heads, query_len, key_len]``."""
        query_len = check_int("query_len", query_len, minimum=0)
        key_len = query_len if key_len is None else check_int("key_len", key_len, minimum=0)
        check_fits_in_memory(
            "T5 bias", (self.num_heads, query_len, key_len), self.embedding.weight.dtype, self.embedding.weight.device
        )
        return self.embedding(self.buckets(query_len, key_len)).permute(2, 0, 1)  # (h, q, k)


class ScoreTerms(NamedTuple):
    r"""The four terms of an (unscaled) attention score, each ``[..., Lq, Lk]``.

    Dai et al. (2019, §3.3) label them (a) content–content, (b) content-dependent positional
    bias, (c) global content bias and (d) global positional bias; in the absolute expansion
    (c) is position–content and (d) position–position. :attr:`total` is their sum.
    """

    a: torch.Tensor
    b: torch.Tensor
    c: torch.Tensor
    d: torch.Tensor

    @property
    def total(self) -> torch.Tensor:
        """:math:`(a) + (b) + (c) + (d)`."""
        return self.a + self.b + self.c + self.d


def _check_float(name: str, t: object, ndim: int | None = None, min_ndim: int | None = None) -> torch.Tensor:
    return check_tensor(
        name,
        t,
        ndim=ndim,
        min_dim=min_ndim or 0,
        shape_hint="" if min_ndim is None else f"[..., seq, dim] (>= {min_ndim} dims)",
    )


def _check_last(name: str, t: torch.Tensor, size: int, what: str) -> None:
    if t.shape[-1] != size:
        raise ValueError(f"{name}.shape[-1] must equal {what} = {size}, got shape {list(t.shape)}")


def _batch(*tensors: torch.Tensor) -> torch.Size:
    try:
        return torch.broadcast_shapes(*(t.shape[:-2] for t in tensors))
    except RuntimeError as err:
        shapes = ", ".join(str(list(t.shape)) for t in tensors)
        raise ValueError(f"the leading (batch) dimensions do not broadcast: {shapes}") from err


def absolute_score_terms(
    e_q: torch.Tensor,
    e_k: torch.Tensor,
    p_q: torch.Tensor,
    p_k: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
) -> ScoreTerms:
    r"""The score of a Transformer with absolute encodings, split into four terms.

    With :math:`q_m = W_q(E_m + U_m)` and :math:`k_n = W_k(E_n + U_n)` (token embedding
    :math:`E`, absolute position vector :math:`U`; Dai et al., 2019, §3.3):

    .. math::

        q_m^\top k_n =
        \underbrace{E_m^\top W_q^\top W_k E_n}_{(a)}
        + \underbrace{E_m^\top W_q^\top W_k U_n}_{(b)}
        + \underbrace{U_m^\top W_q^\top W_k E_n}_{(c)}
        + \underbrace{U_m^\top W_q^\top W_k U_n}_{(d)}

    The formula writes column vectors; the tensors hold one vector per row (``x @ W.T``).
    No :math:`1/\sqrt{d}` scaling is applied.

    Args:
        e_q, e_k: token embeddings (or hidden states) ``[..., Lq, d_model]`` and
            ``[..., Lk, d_model]``.
        p_q, p_k: position vectors :math:`U` of the queries and keys, ``[..., Lq, d_model]``
            and ``[..., Lk, d_model]`` (e.g. rows of :func:`posviz.sinusoidal_encoding`).
        w_q, w_k: projections ``[d_head, d_model]``.

    Returns:
        :class:`ScoreTerms` ``(a, b, c, d)``, each ``[..., Lq, Lk]``.
    """
    for name, t in (("e_q", e_q), ("e_k", e_k), ("p_q", p_q), ("p_k", p_k)):
        _check_float(name, t, min_ndim=2)
    _check_float("w_q", w_q, ndim=2)
    _check_float("w_k", w_k, ndim=2)
    check_same_dtype_device(e_q=e_q, e_k=e_k, p_q=p_q, p_k=p_k, w_q=w_q, w_k=w_k)
    d_model = e_q.shape[-1]
    for name, t in (("e_k", e_k), ("p_q", p_q), ("p_k", p_k), ("w_q", w_q), ("w_k", w_k)):
        _check_last(name, t, d_model, "e_q.shape[-1] (d_model)")
    if w_q.shape[0] != w_k.shape[0]:
        raise ValueError(
            f"w_q and w_k must have the same number of rows (d_head), got {w_q.shape[0]} and {w_k.shape[0]}"
        )
    if p_q.shape[-2] != e_q.shape[-2]:
        raise ValueError(f"p_q must have one row per query ({e_q.shape[-2]}), got shape {list(p_q.shape)}")
    if p_k.shape[-2] != e_k.shape[-2]:
        raise ValueError(f"p_k must have one row per key ({e_k.shape[-2]}), got shape {list(p_k.shape)}")
    batch = _batch(e_q, e_k, p_q, p_k)
    lq, lk = e_q.shape[-2], e_k.shape[-2]
    check_fits_in_memory("score terms", (4, *batch, lq, lk), e_q.dtype, e_q.device)
    qe, qu = e_q @ w_q.T, p_q @ w_q.T  # W_q E_m, W_q U_m (as rows)
    ke, ku = e_k @ w_k.T, p_k @ w_k.T  # W_k E_n, W_k U_n
    shape = (*batch, lq, lk)
    return ScoreTerms(
        a=(qe @ ke.transpose(-2, -1)).expand(shape),
        b=(qe @ ku.transpose(-2, -1)).expand(shape),
        c=(qu @ ke.transpose(-2, -1)).expand(shape),
        d=(qu @ ku.transpose(-2, -1)).expand(shape),
    )


def _signed_sinusoid(offsets: torch.Tensor, dim: int, base: float, dtype: torch.dtype) -> torch.Tensor:
    """Rows :math:`PE(r)` of :func:`posviz.sinusoidal_encoding` for integer offsets of either sign.

    :math:`PE(-r)` is :math:`PE(r)` with its sine (even) columns negated: sin is odd, cos even.
    """
    from .absolute import sinusoidal_encoding  # local import: keeps the module graph a tree

    size = int(offsets.abs().max()) + 1 if offsets.numel() else 1
    table = sinusoidal_encoding(size, dim, base, device=offsets.device, dtype=dtype)  # PE(0..size-1)
    rows = table[offsets.abs()]
    sign = torch.ones(dim, dtype=dtype, device=offsets.device).repeat(offsets.numel(), 1)
    sign[:, 0::2] = torch.where(offsets < 0, -1.0, 1.0).to(dtype)[:, None]  # sin(-x) = -sin(x)
    return rows * sign


def transformer_xl_scores(
    e_q: torch.Tensor,
    e_k: torch.Tensor,
    w_q: torch.Tensor,
    w_k_e: torch.Tensor,
    w_k_r: torch.Tensor,
    u: torch.Tensor,
    v: torch.Tensor,
    *,
    base: float = 10000.0,
) -> ScoreTerms:
    r"""Transformer-XL's relative attention score, as its four terms (Dai et al., 2019, §3.3).

    .. math::

        A^{\mathrm{rel}}_{mn} =
        \underbrace{E_m^\top W_q^\top W_{k,E} E_n}_{(a)}
        + \underbrace{E_m^\top W_q^\top W_{k,R} R_{m-n}}_{(b)}
        + \underbrace{u^\top W_{k,E} E_n}_{(c)}
        + \underbrace{v^\top W_{k,R} R_{m-n}}_{(d)}

    Compared with :func:`absolute_score_terms`: the key's absolute position :math:`U_n` becomes
    the sinusoid of the offset, :math:`R_{m-n}`; the query's :math:`U_m^\top W_q^\top` becomes
    the learned vectors :math:`u^\top` and :math:`v^\top`; and :math:`W_k` splits into
    :math:`W_{k,E}` (content keys) and :math:`W_{k,R}` (position keys).

    :math:`R_r` is row :math:`r` of :func:`posviz.sinusoidal_encoding` (sines in the even
    columns, frequency base ``base``) with :math:`r = m - n`, queries and keys both counted from
    0; for :math:`r < 0` (a key after the query, which a causal model masks) the sines change
    sign. The official code concatenates all sines then all cosines; the layouts differ by a
    fixed permutation of the columns of :math:`W_{k,R}`. No :math:`1/\sqrt{d}` scaling is applied
    (the model scales the sum).

    Args:
        e_q, e_k: content (token embeddings or hidden states) ``[..., Lq, d_model]`` and
            ``[..., Lk, d_model]``.
        w_q, w_k_e: ``[d_head, d_model]``.
        w_k_r: ``[d_head, d_R]``, with :math:`d_R` (the sinusoid's dimension) even.
        u, v: ``[d_head]``.
        base: the sinusoid's frequency base, > 0.

    Returns:
        :class:`ScoreTerms` ``(a, b, c, d)``, each ``[..., Lq, Lk]``. (b) and (d) depend on the
        positions only through :math:`m - n`; (c) is the same for every query.
    """
    _check_float("e_q", e_q, min_ndim=2)
    _check_float("e_k", e_k, min_ndim=2)
    for name, t in (("w_q", w_q), ("w_k_e", w_k_e), ("w_k_r", w_k_r)):
        _check_float(name, t, ndim=2)
    _check_float("u", u, ndim=1)
    _check_float("v", v, ndim=1)
    check_same_dtype_device(e_q=e_q, e_k=e_k, w_q=w_q, w_k_e=w_k_e, w_k_r=w_k_r, u=u, v=v)
    base = check_positive("base", base)
    d_model, d_head, d_r = e_q.shape[-1], w_q.shape[0], w_k_r.shape[1]
    for name, t in (("e_k", e_k), ("w_q", w_q), ("w_k_e", w_k_e)):
        _check_last(name, t, d_model, "e_q.shape[-1] (d_model)")
    if w_k_e.shape[0] != d_head or w_k_r.shape[0] != d_head:
        raise ValueError(
            f"w_k_e and w_k_r must have d_head = w_q.shape[0] = {d_head} rows, got shapes "
            f"{list(w_k_e.shape)} and {list(w_k_r.shape)}"
        )
    if d_r % 2:
        raise ValueError(f"w_k_r.shape[1] (the sinusoid dimension d_R) must be even, got {d_r}")
    _check_last("u", u, d_head, "w_q.shape[0] (d_head)")
    _check_last("v", v, d_head, "w_q.shape[0] (d_head)")
    batch = _batch(e_q, e_k)
    lq, lk = e_q.shape[-2], e_k.shape[-2]
    check_fits_in_memory("score terms", (4, *batch, lq, lk), e_q.dtype, e_q.device)

    offsets = torch.arange(-(lk - 1), lq, device=e_q.device)  # every m - n that occurs
    r_keys = _signed_sinusoid(offsets, d_r, base, e_q.dtype) @ w_k_r.T  # W_{k,R} R_r, [n_off, d_head]
    idx = relative_positions(lq, lk, device=e_q.device) + (lk - 1)  # row of offset m - n
    q = e_q @ w_q.T  # W_q E_m (rows)
    k = e_k @ w_k_e.T  # W_{k,E} E_n
    shape = (*batch, lq, lk)
    rows = torch.arange(lq, device=e_q.device)[:, None]
    b_all = q @ r_keys.T  # [..., Lq, n_off]: E_m^T W_q^T W_{k,R} R_r for every offset r
    return ScoreTerms(
        a=(q @ k.transpose(-2, -1)).expand(shape),
        b=b_all[..., rows, idx].expand(shape),
        c=(k @ u).unsqueeze(-2).expand(shape),
        d=(r_keys @ v)[idx].expand(shape),
    )
