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

from ._validate import check_fits_in_memory, check_positive
from .rope import apply_rope

__all__ = ["attention", "attention_scores", "causal_mask", "self_attention"]


def causal_mask(query_len: int, key_len: int, *, device: torch.device | str | None = None) -> torch.Tensor:
    """Boolean ``[query_len, key_len]``, True where key ``n > m`` (the future, to be masked)."""
    return torch.ones(query_len, key_len, dtype=torch.bool, device=device).triu_(1)


def _check_tensor(name: str, t: object) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if not t.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {t.dtype}")
    if t.dim() < 2:
        raise ValueError(f"{name} must have shape [..., seq, dim], got {list(t.shape)}")


def attention_scores(
    q: torch.Tensor,
    k: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    causal: bool = False,
    scale: float | None = None,
) -> torch.Tensor:
    r"""The scores that the softmax of :func:`attention` turns into weights, ``[..., Lq, Lk]``.

    .. math::

        s_{mn} = s\, q_m^\top k_n + B_{mn}, \qquad s = 1/\sqrt{d} \text{ by default}

    (Vaswani et al., 2017, eq. 1). The factor :math:`1/\sqrt{d}` keeps the scores at unit
    variance: if the :math:`d` components of :math:`q_m` and :math:`k_n` are independent with
    mean 0 and variance 1, then :math:`\operatorname{Var}(q_m^\top k_n) = d` (their footnote 4).

    Args:
        q: queries ``[..., Lq, d]`` (floating point).
        k: keys ``[..., Lk, d]``; the batch dimensions broadcast with ``q``'s.
        bias: added to the scaled scores; broadcasts to ``[..., Lq, Lk]``.
        causal: set the scores of future keys (``n > m``) to :math:`-\infty`.
        scale: multiplier :math:`s` of :math:`q_m^\top k_n` (default :math:`1/\sqrt{d}`).
    """
    _check_tensor("q", q)
    _check_tensor("k", k)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same last dim, got q: {q.shape[-1]} and k: {k.shape[-1]}")
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

    # in place where the shape allows: one [..., Lq, Lk] buffer instead of three (autograd-safe:
    # neither matmul nor mul needs its output for the backward pass)
    scores = torch.matmul(q, k.transpose(-2, -1)).mul_(scale)  # s q_m . k_n, [..., Lq, Lk]
    if bias is not None:
        bias = bias.to(scores.dtype)
        scores = scores.add_(bias) if scores.shape == tuple(shape) else scores + bias
    if causal:
        scores = scores.masked_fill_(causal_mask(lq, lk, device=q.device), float("-inf"))
    return scores


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
        _check_tensor(name, t)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same last dim, got q: {q.shape[-1]} and k: {k.shape[-1]}")
    if v is not None and v.shape[-2] != k.shape[-2]:
        raise ValueError(f"v must have as many rows as k (keys), got v: {v.shape[-2]} and k: {k.shape[-2]}")
    scores = attention_scores(q, k, bias=bias, causal=causal, scale=scale)  # s_mn
    weights = torch.softmax(scores, dim=-1)  # a_mn
    out = None if v is None else torch.matmul(weights, v.to(weights.dtype))  # o_m = sum_n a_mn v_n
    return out, weights


def self_attention(
    x: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    w_v: torch.Tensor,
    *,
    position: torch.Tensor | None = None,
    rope_base: float | None = None,
    bias: torch.Tensor | None = None,
    causal: bool = False,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""One attention head over a sequence ``x: [..., L, d]``, with position plugged in at any of
    the three places: **added** to the input, **rotating** the queries and keys, **biasing** the
    scores.

    .. math::

        q_m = R_{\Theta,m} W_q (x_m + p_m), \qquad k_n = R_{\Theta,n} W_k (x_n + p_n),
        \qquad v_n = W_v (x_n + p_n),

        s_{mn} = s\, q_m^\top k_n + B_{mn}, \qquad a_{mn} = \operatorname{softmax}_n(s_{mn}),
        \qquad o_m = \sum_n a_{mn} v_n

    with :math:`p_m = 0` without ``position``, :math:`R_{\Theta,m} = I` without ``rope_base``
    (else RoPE's rotation, :func:`posviz.apply_rope`, interleaved pairs) and :math:`B = 0`
    without ``bias`` (Vaswani et al., 2017, §3.2 and §3.5; Su et al., 2024). With none of them,
    :math:`f_q(x_m, m) = W_q x_m` does not depend on :math:`m`. The weights act as
    :math:`W x_m` on column vectors, so a row-vector sequence is multiplied by :math:`W^\top`:
    ``q = (x + p) @ w_q.T``, as ``torch.nn.Linear`` does.

    Args:
        x: token vectors ``[..., L, d]`` (floating point).
        w_q: query projection :math:`W_q`, ``[d_k, d]``.
        w_k: key projection :math:`W_k`, ``[d_k, d]``.
        w_v: value projection :math:`W_v`, ``[d_v, d]``.
        position: absolute position vectors :math:`p_m`, broadcasting to ``x`` (e.g.
            :func:`posviz.sinusoidal_encoding` ``(L, d)``); ``None`` for no position.
        rope_base: rotate ``q`` and ``k`` by RoPE with this base (``d_k`` even), positions
            ``0..L-1``; ``None`` for no rotation.
        bias: :math:`B`, added to the scaled scores, as in :func:`attention` (e.g.
            :func:`posviz.alibi_bias`).
        causal: mask future keys, as in :func:`attention`.
        scale: multiplier of :math:`q_m^\top k_n` (default :math:`1/\sqrt{d_k}`).

    Returns:
        ``(output [..., L, d_v], weights [..., L, L])``.
    """
    _check_tensor("x", x)
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v)):
        if not isinstance(w, torch.Tensor) or not w.is_floating_point():
            raise TypeError(
                f"{name} must be a floating-point torch.Tensor, got {getattr(w, 'dtype', type(w).__name__)}"
            )
        if w.dim() != 2 or w.shape[1] != x.shape[-1]:
            raise ValueError(
                f"{name} must have shape [d_out, {x.shape[-1]}] (x has d = {x.shape[-1]}), got {list(w.shape)}"
            )
    if position is not None:
        if not isinstance(position, torch.Tensor) or not position.is_floating_point():
            raise TypeError(f"position must be a floating-point torch.Tensor or None, got {type(position).__name__}")
        try:
            torch.broadcast_shapes(position.shape, x.shape)
        except RuntimeError as err:
            raise ValueError(
                f"position must broadcast to x {list(x.shape)} (one vector per position), got {list(position.shape)}"
            ) from err
        x = x + position.to(x.dtype)  # x_m + p_m
    q, k, v = x @ w_q.T.to(x.dtype), x @ w_k.T.to(x.dtype), x @ w_v.T.to(x.dtype)
    if rope_base is not None:
        rope_base = check_positive("rope_base", rope_base)
        q, k = apply_rope(q, base=rope_base), apply_rope(k, base=rope_base)  # R_m q_m, R_n k_n
    out, weights = attention(q, k, v, bias=bias, causal=causal, scale=scale)
    return out, weights
