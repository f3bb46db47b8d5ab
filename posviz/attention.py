r"""Scaled dot-product attention that returns its weights, for drawing them.

.. math::

    a_{mn} = \operatorname{softmax}_n\!\Big(\frac{q_m^\top k_n}{\sqrt{d}} + B_{mn}\Big), \qquad
    o_m = \sum_n a_{mn}\, v_n

with :math:`q_m = f_q(x_m, m)`, :math:`k_n = f_k(x_n, n)`, :math:`v_n = f_v(x_n, n)` (Vaswani et
al., 2017, eq. 1). Every position method plugs in at one of three places: it **adds** to the
input :math:`x` (sinusoidal, learned), **rotates** :math:`q` and :math:`k` (RoPE) or **biases** the
scores :math:`B` (ALiBi, T5; Shaw et al. also add to the values). Book chapter: *Why position
matters*.
"""

from __future__ import annotations

import math

import torch

from ._validate import check_fits_in_memory

__all__ = ["attention", "causal_mask"]


def causal_mask(query_len: int, key_len: int, *, device: torch.device | str | None = None) -> torch.Tensor:
    """Boolean ``[query_len, key_len]``, True where key ``n > m`` (the future, to be masked)."""
    return torch.ones(query_len, key_len, dtype=torch.bool, device=device).triu_(1)


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor | None = None,
    *,
    bias: torch.Tensor | None = None,
    causal: bool = False,
    scale: float | None = None,
) -> tuple[torch.Tensor | None, torch.Tensor]:
    r"""Attention weights and output. Shapes ``q: [..., Lq, d]``, ``k: [..., Lk, d]``,
    ``v: [..., Lk, dv]``.

    .. math::

        A = \operatorname{softmax}\big(s\,QK^\top + B\big), \qquad O = AV,
        \qquad s = 1/\sqrt{d} \text{ by default}

    Args:
        bias: added to the scaled scores; broadcasts to ``[..., Lq, Lk]`` (e.g. ALiBi's
            ``[heads, Lq, Lk]``).
        causal: mask future keys: query ``m`` sees keys ``0..m`` (top-left aligned, as
            ``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``).
        scale: multiplier of :math:`QK^\top` (default :math:`1/\sqrt{d}`).

    Returns:
        ``(output, weights)``: ``output`` is ``[..., Lq, dv]`` (``None`` when ``v`` is None),
        ``weights`` is ``[..., Lq, Lk]`` with rows summing to 1.
    """
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t is None and name == "v":
            continue
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if not t.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got {t.dtype}")
        if t.dim() < 2:
            raise ValueError(f"{name} must have shape [..., seq, dim], got {list(t.shape)}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same last dim, got q: {q.shape[-1]} and k: {k.shape[-1]}")
    if v is not None and v.shape[-2] != k.shape[-2]:
        raise ValueError(f"v must have as many rows as k (keys), got v: {v.shape[-2]} and k: {k.shape[-2]}")
    lq, lk = q.shape[-2], k.shape[-2]
    try:
        batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
        shape = (*batch, lq, lk)
        if bias is not None:
            if not isinstance(bias, torch.Tensor):
                raise TypeError(f"bias must be a torch.Tensor or None, got {type(bias).__name__}")
            shape = torch.broadcast_shapes(shape, bias.shape)
    except RuntimeError as err:
        raise ValueError(
            f"shapes do not broadcast: q {list(q.shape)}, k {list(k.shape)}"
            f"{'' if bias is None else f', bias {list(bias.shape)}'} ({err})"
        ) from err
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1]) if q.shape[-1] else 1.0
    check_fits_in_memory("attention map", tuple(shape), q.dtype, q.device, copies=3)

    scores = torch.matmul(q, k.transpose(-2, -1)) * scale  # s q_m . k_n, [..., Lq, Lk]
    if bias is not None:
        scores = scores + bias.to(scores.dtype)
    if causal:
        scores = scores.masked_fill(causal_mask(lq, lk, device=q.device), float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # a_mn
    out = None if v is None else torch.matmul(weights, v.to(weights.dtype))  # o_m = sum_n a_mn v_n
    return out, weights
