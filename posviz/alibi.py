r"""Attention with Linear Biases (ALiBi; Press, Smith and Lewis, *Train Short, Test Long*, 2022).

No position is added to the embeddings. Each head :math:`h` adds a fixed penalty to its
attention scores, proportional to the query-key distance:

.. math:: \text{score}_{h,ij} = q_i^\top k_j - m_h\,(i - j), \qquad j \le i,

with slopes :math:`m_h` fixed before training (a geometric sequence). Book chapter: *ALiBi*.
"""

from __future__ import annotations

import math

import torch

from ._validate import check_fits_in_memory, check_int, resolve

__all__ = ["alibi_bias", "alibi_slopes"]


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

    For :math:`n` a power of two, a geometric sequence that starts at and has ratio
    :math:`2^{-8/n}`:

    .. math:: m_h = 2^{-8h/n}, \qquad h = 1, \dots, n

    (8 heads: 1/2, 1/4, ..., 1/256). Otherwise the authors' rule: take the :math:`2^{\lfloor
    \log_2 n\rfloor}` slopes of the nearest lower power of two, then append every other slope of
    the next power of two. The result is **not monotone**: 6 heads give
    1/4, 1/16, 1/64, 1/256, 1/2, 1/8.
    """
    num_heads = check_int("num_heads", num_heads, minimum=1)
    device, dtype = resolve(device, dtype)
    return torch.tensor(_slopes_list(num_heads), dtype=torch.float64, device=device).to(dtype)


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

    .. math:: B_{h,ij} = -m_h\,\lvert i - j\rvert

    Query ``i`` and key ``j`` both count from 0. For causal attention (``j <= i``) this is the
    paper's :math:`-m_h (i - j)`; keys after the query are masked anyway. Add it to the scores
    before the softmax (``posviz.attention(q, k, v, bias=..., causal=True)``); ALiBi does not
    rescale it by :math:`1/\sqrt{d}`.

    Args:
        num_heads: number of heads, >= 1.
        query_len: number of queries, >= 0.
        key_len: number of keys, >= 0 (default ``query_len``).
        slopes: ``[num_heads]`` slopes; default :func:`alibi_slopes` (``num_heads``).
    """
    num_heads = check_int("num_heads", num_heads, minimum=1)
    query_len = check_int("query_len", query_len, minimum=0)
    key_len = query_len if key_len is None else check_int("key_len", key_len, minimum=0)
    device, dtype = resolve(device, dtype)
    if slopes is None:
        slopes = alibi_slopes(num_heads, device=device, dtype=dtype)
    else:
        if not isinstance(slopes, torch.Tensor):
            raise TypeError(f"slopes must be a torch.Tensor, got {type(slopes).__name__}")
        if slopes.shape != (num_heads,):
            raise ValueError(f"slopes must have shape [num_heads] = [{num_heads}], got {list(slopes.shape)}")
        slopes = slopes.to(device=device, dtype=dtype)
    check_fits_in_memory("ALiBi bias", (num_heads, query_len, key_len), dtype, device)
    i = torch.arange(query_len, device=device, dtype=dtype)[:, None]
    j = torch.arange(key_len, device=device, dtype=dtype)[None, :]
    distance = (i - j).abs_()  # |i - j|, [q, k]
    return -slopes[:, None, None] * distance  # -m_h |i - j|
