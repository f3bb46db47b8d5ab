r"""Relative position encodings: the position enters through the offset between query and key.

* Shaw, Uszkoreit and Vaswani (2018): learned vectors for each clipped offset, added to keys
  and values inside attention.
* Raffel et al. (2020), T5: one learned scalar per head for each *bucket* of offsets, added to
  the scores.

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

import torch
from torch import nn

from ._validate import check_fits_in_memory, check_int, resolve

__all__ = [
    "ShawRelativePosition",
    "T5RelativeBias",
    "relative_positions",
    "t5_relative_bucket",
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
    With :math:`B` buckets per direction (``num_buckets``, halved when bidirectional) and
    :math:`E = B/2` exact buckets, for a distance :math:`a \ge 0`:

    .. math::

        \text{bucket}(a) = \begin{cases}
            a & a < E \\
            \min\!\Big(B - 1,\; E + \Big\lfloor \dfrac{\ln(a / E)}{\ln(D / E)}\,(B - E) \Big\rfloor\Big)
              & a \ge E
        \end{cases}

    where :math:`D` is ``max_distance`` (every distance at or beyond it lands in the last
    bucket). Bidirectional: :math:`a = |n - m|` and keys after the query (:math:`n > m`) use
    buckets :math:`B .. 2B-1`. Causal: :math:`a = \max(m - n, 0)`, so every future key falls in
    bucket 0 (masked anyway).

    Raises ``ValueError`` when ``max_distance <= E``: T5's formula then yields negative or
    undefined buckets.
    """
    if not isinstance(relative_position, torch.Tensor):
        raise TypeError(f"relative_position must be a torch.Tensor, got {type(relative_position).__name__}")
    if relative_position.is_floating_point() or relative_position.is_complex():
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
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        buckets += (relative_position > 0).long() * per_direction  # keys after the query
        distance = relative_position.abs()
    else:
        distance = -torch.clamp(relative_position, max=0)  # max(m - n, 0)
    is_small = distance < max_exact
    # log-spaced buckets between max_exact and max_distance (float32, exactly as T5 computes them)
    large = max_exact + (
        torch.log(distance.float() / max_exact) / math.log(max_distance / max_exact) * (per_direction - max_exact)
    ).long()
    large = torch.clamp(large, max=per_direction - 1)
    return buckets + torch.where(is_small, distance, large)


class ShawRelativePosition(nn.Module):
    r"""Shaw et al.'s relative keys and values with clipping (one table shared by all heads).

    .. math::

        e_{mn} = \frac{q_m^\top (k_n + a^K_{r})}{\sqrt{d}}, \qquad
        o_m = \sum_n \alpha_{mn}\,(v_n + a^V_{r}), \qquad r = \operatorname{clip}(m - n, -k, k)

    i.e. :math:`f_k(x_n, n) = W_k x_n + a^K_r` and :math:`f_v(x_n, n) = W_v x_n + a^V_r`. The
    query carries no position: the offset already involves both ends. ``2k + 1`` learned vectors
    per table; every offset past :math:`\pm k` shares the edge vector, which is why it runs on
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
        """Attention with relative keys/values. ``q``: ``[..., Lq, d]``, ``k, v``: ``[..., Lk, d]``.

        Returns ``(output [..., Lq, d], weights [..., Lq, Lk])``.
        """
        from .attention import attention  # local import: attention.py imports nothing from here

        if q.shape[-1] != self.head_dim:
            raise ValueError(f"q.shape[-1] must equal head_dim={self.head_dim}, got {q.shape[-1]}")
        idx = self.index(q.shape[-2], k.shape[-2])  # [Lq, Lk]
        a_k = self.key_table.to(q.dtype)[idx]  # (Lq, Lk, d)
        scale = 1.0 / math.sqrt(self.head_dim)
        rel = torch.einsum("...md,mnd->...mn", q, a_k) * scale  # q_m . a^K_{mn} / sqrt(d)
        total = rel if bias is None else rel + bias
        out, weights = attention(q, k, v, bias=total, causal=causal, scale=scale)
        if self.value_table is not None:
            a_v = self.value_table.to(q.dtype)[idx]  # (Lq, Lk, d)
            out = out + torch.einsum("...mn,mnd->...md", weights, a_v)  # sum_n alpha_mn a^V_mn
        return out, weights


class T5RelativeBias(nn.Module):
    r"""T5's learned relative bias: one scalar per (bucket, head), added to the scores.

    .. math:: B_{h,mn} = b_{h,\ \text{bucket}(n - m)}

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
        t5_relative_bucket(torch.zeros(1, dtype=torch.long), bidirectional=bidirectional,
                           num_buckets=num_buckets, max_distance=max_distance)  # validate now
        self.embedding = nn.Embedding(num_buckets, self.num_heads)
        nn.init.normal_(self.embedding.weight, std=0.02)

    def buckets(self, query_len: int, key_len: int | None = None) -> torch.Tensor:
        """Bucket of each pair, long ``[q, k]``; T5's sign: key minus query."""
        r = relative_positions(query_len, key_len, device=self.embedding.weight.device)  # m - n
        return t5_relative_bucket(-r, bidirectional=self.bidirectional,
                                  num_buckets=self.num_buckets, max_distance=self.max_distance)

    def forward(self, query_len: int, key_len: int | None = None) -> torch.Tensor:
        """The bias ``[num_heads, query_len, key_len]``."""
        key_len = query_len if key_len is None else key_len
        check_fits_in_memory("T5 bias", (self.num_heads, query_len, key_len),
                             self.embedding.weight.dtype, self.embedding.weight.device)
        return self.embedding(self.buckets(query_len, key_len)).permute(2, 0, 1)  # (h, q, k)
