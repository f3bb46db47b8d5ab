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

from ._validate import check_fits_in_memory, check_qk, check_real, check_tensor
from .rope import apply_rope

__all__ = ["attention", "attention_scores", "attention_weights", "causal_mask", "self_attention"]
# masked_softmax, mask_scores and the check_* helpers are shared with posviz.relative (not exported)


def causal_mask(query_len: int, key_len: int, *, device: torch.device | str | None = None) -> torch.Tensor:
    """Boolean ``[query_len, key_len]``, True where key ``n > m`` (the future, to be masked).

    Note the sense: True marks what is **hidden**. A ``bias`` mask given to :func:`attention`
    follows PyTorch's sense instead (True = may attend), so pass ``~causal_mask(...)`` there, or
    simply ``causal=True``.
    """
    return torch.ones(query_len, key_len, dtype=torch.bool, device=device).triu_(1)


def check_causal(causal: object) -> bool:
    """``causal`` is a Python bool (a string such as ``"no"`` is truthy: it would mask the future)."""
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False, got {causal!r} ({type(causal).__name__})")
    return causal


def check_inputs(q: object, k: object) -> tuple[torch.Tensor, torch.Tensor]:
    """Queries and keys as :func:`posviz._validate.check_qk` wants them, with a head size ``d >= 1``."""
    q, k = check_qk(q, k)
    if q.shape[-1] == 0:
        raise ValueError(f"q and k must have a head size d >= 1 (their last dim), got shapes {list(q.shape)}")
    return q, k


def check_bias(bias: object, q: torch.Tensor, k: torch.Tensor) -> tuple[tuple[int, ...], torch.Tensor | None]:
    """The scores' shape (with ``bias`` broadcast in) and the bias on the scores' device."""
    lq, lk = q.shape[-2], k.shape[-2]
    if bias is not None:
        if not isinstance(bias, torch.Tensor):
            raise TypeError(f"bias must be a torch.Tensor or None, got {type(bias).__name__}")
        if not (bias.is_floating_point() or bias.dtype == torch.bool):
            raise TypeError(
                f"bias must be a floating-point tensor (added to the scores) or a boolean mask "
                f"(True = may attend), got {bias.dtype}"
            )
    try:
        batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
        shape = (*batch, lq, lk)
        if bias is not None:
            shape = tuple(torch.broadcast_shapes(shape, bias.shape))
    except RuntimeError as err:
        raise ValueError(
            f"shapes do not broadcast: q {list(q.shape)}, k {list(k.shape)}"
            f"{'' if bias is None else f', bias {list(bias.shape)}'} ({err})"
        ) from err
    if bias is not None and bias.device != q.device:
        bias = bias.to(q.device)  # one copy; build the bias on q's device (device=q.device) to avoid it
    return shape, bias


def check_values(v: object, q: torch.Tensor, k: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """Values ``[..., Lk, dv]``: one row per key, ``q``'s dtype and device, batch dims that broadcast
    with the weights' (``shape``, from :func:`check_bias`)."""
    v = check_tensor("v", v, min_dim=2, shape_hint="[..., Lk, dv]")
    if v.shape[-2] != k.shape[-2]:
        raise ValueError(f"v must have as many rows as k (keys), got v: {v.shape[-2]} and k: {k.shape[-2]}")
    if v.dtype != q.dtype:
        raise TypeError(f"v must have q's dtype {q.dtype}, got {v.dtype}; cast it with .to()")
    if v.device != q.device:
        raise ValueError(f"v must be on q's device {q.device}, got {v.device}; move it with .to()")
    try:
        torch.broadcast_shapes(shape[:-2], v.shape[:-2])
    except RuntimeError as err:
        raise ValueError(
            f"v's batch dimensions {list(v.shape[:-2])} (v has shape {list(v.shape)}) do not broadcast "
            f"with the weights' {list(shape[:-2])} (from q {list(q.shape)} and k {list(k.shape)}"
            f" and the bias)"
        ) from err
    return v


def mask_scores(
    scores: torch.Tensor, bias: torch.Tensor | None, causal: bool, shape: tuple[int, ...]
) -> torch.Tensor:
    r"""Add ``bias`` to the scores, or hide what a boolean ``bias`` hides, then the future if
    ``causal``: :math:`s_{mn} + B_{mn}`, :math:`-\infty` where a mask is False or ``n > m``.

    In place where the shape allows (``scores`` must be a fresh buffer, e.g. a matmul's output:
    autograd-safe, since neither matmul nor mul needs its output for the backward pass).
    """
    if bias is not None:
        if bias.dtype == torch.bool:  # PyTorch's sense, as scaled_dot_product_attention: True = may attend
            hidden = ~bias
            scores = (
                scores.masked_fill_(hidden, -math.inf)
                if scores.shape == shape
                else scores.masked_fill(hidden, -math.inf)
            )
        else:
            bias = bias.to(scores.dtype)
            scores = scores.add_(bias) if scores.shape == shape else scores + bias
    if causal:
        scores = scores.masked_fill_(causal_mask(scores.shape[-2], scores.shape[-1], device=scores.device), -math.inf)
    return scores


def masked_softmax(
    scores: torch.Tensor, bias: torch.Tensor | None, causal: bool, shape: tuple[int, ...]
) -> torch.Tensor:
    r"""The one mask rule of every attention path in posviz (:func:`attention`,
    :func:`attention_weights`, :func:`self_attention`, :class:`posviz.ShawRelativePosition`):
    :func:`mask_scores`, then the softmax over the keys,

    .. math:: a_{mn} = \operatorname{softmax}_n(s_{mn}), \qquad
              a_{mn} = 0 \text{ for every } n \text{ when every } s_{mn} = -\infty .

    A query whose every key is hidden (by a boolean mask, by ``causal``, by a :math:`-\infty`
    float bias, or by several together) gets zero weights, hence a zero output, and zero
    gradients, as ``torch.nn.functional.scaled_dot_product_attention`` gives, instead of softmax's
    :math:`0/0` = NaN. A NaN score still gives NaN.
    """
    scores = mask_scores(scores, bias, causal, shape)
    if scores.shape[-1] == 0:  # no keys at all: nothing to normalise
        return torch.softmax(scores, dim=-1)
    empty = scores.amax(dim=-1, keepdim=True) == -math.inf  # [..., Lq, 1]: no key left to attend to
    if scores.device.type != "meta" and bool(empty.any()):  # meta tensors hold no values
        scores = scores.masked_fill(empty, 0.0)  # finite: no NaN in the softmax nor in its gradient
        return torch.softmax(scores, dim=-1).masked_fill(empty, 0.0)
    return torch.softmax(scores, dim=-1)  # a_mn


def _scores(
    q: torch.Tensor,
    k: torch.Tensor,
    scale: float | None,
    shape: tuple[int, ...],
) -> torch.Tensor:
    """``s q_m . k_n``, ``[..., Lq, Lk]``, a fresh buffer for :func:`mask_scores`."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else check_real("scale", scale)
    check_fits_in_memory("attention map", shape, q.dtype, q.device, copies=3)
    return torch.matmul(q, k.transpose(-2, -1)).mul_(scale)  # s q_m . k_n, [..., Lq, Lk]


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
        k: keys ``[..., Lk, d]``, same dtype and device as ``q``; the batch dimensions broadcast
            with ``q``'s.
        bias: a floating tensor added to the scaled scores (cast to the scores' dtype), or a
            boolean mask in PyTorch's sense (``True`` = may attend; ``False`` gives
            :math:`-\infty`), as ``attn_mask`` of ``torch.nn.functional.scaled_dot_product_attention``;
            broadcasts to ``[..., Lq, Lk]``; moved to ``q``'s device if it is elsewhere.
        causal: ``True`` or ``False``: set the scores of future keys (``n > m``) to :math:`-\infty`.
        scale: multiplier :math:`s` of :math:`q_m^\top k_n` (default :math:`1/\sqrt{d}`).
    """
    q, k = check_inputs(q, k)
    causal = check_causal(causal)
    shape, bias = check_bias(bias, q, k)
    return mask_scores(_scores(q, k, scale, shape), bias, causal, shape)


def _weights(q: torch.Tensor, k: torch.Tensor, bias: object, causal: object, scale: float | None) -> torch.Tensor:
    causal = check_causal(causal)
    shape, bias = check_bias(bias, q, k)
    return masked_softmax(_scores(q, k, scale, shape), bias, causal, shape)  # a_mn


def attention_weights(
    q: torch.Tensor,
    k: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    causal: bool = False,
    scale: float | None = None,
) -> torch.Tensor:
    r"""The attention weights alone, ``[..., Lq, Lk]``, rows summing to 1.

    .. math:: a_{mn} = \operatorname{softmax}_n\big(s\, q_m^\top k_n + B_{mn}\big)

    The weights of :func:`attention`, for drawing an attention map without values. Arguments as
    in :func:`attention_scores`. A row whose every key is hidden (by a boolean mask, ``causal``,
    a :math:`-\infty` bias or several together) is all zeros (``masked_softmax``).
    """
    q, k = check_inputs(q, k)
    return _weights(q, k, bias, causal, scale)


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    causal: bool = False,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Attention output and weights. Shapes ``q: [..., Lq, d]``, ``k: [..., Lk, d]``,
    ``v: [..., Lk, dv]``.

    .. math::

        A = \operatorname{softmax}\big(s\,QK^\top + B\big), \qquad O = AV,
        \qquad s = 1/\sqrt{d} \text{ by default}

    Matches ``torch.nn.functional.scaled_dot_product_attention`` (same masks, same ``scale``),
    and also returns the weights, which that function does not. For the weights alone use
    :func:`attention_weights`.

    Args:
        q: queries; ``k`` and ``v`` must have its dtype and device.
        bias: a floating tensor added to the scaled scores (e.g. ALiBi's ``[heads, Lq, Lk]``), or a
            boolean mask in PyTorch's sense (``True`` = may attend), as SDPA's ``attn_mask``;
            broadcasts to ``[..., Lq, Lk]``; moved to ``q``'s device if it is elsewhere.
        causal: ``True`` or ``False``: mask future keys: query ``m`` sees keys ``0..m`` (top-left
            aligned, as ``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``).
        scale: multiplier of :math:`QK^\top` (default :math:`1/\sqrt{d}`).

    Returns:
        ``(output, weights)``: ``output`` is ``[..., Lq, dv]``, ``weights`` is ``[..., Lq, Lk]``.

    One mask rule for every attention path (``posviz.dot_product.masked_softmax``): a query whose
    every score is :math:`-\infty` (every key hidden by the mask, by ``causal``, by a
    :math:`-\infty` float bias, or by several together) gets zero weights, a zero output and zero
    gradients, as in SDPA. ``v``'s batch dimensions broadcast with the weights'.
    """
    q, k = check_inputs(q, k)
    causal = check_causal(causal)
    shape, bias = check_bias(bias, q, k)
    v = check_values(v, q, k, shape)
    weights = masked_softmax(_scores(q, k, scale, shape), bias, causal, shape)  # a_mn
    out = torch.matmul(weights, v)  # o_m = sum_n a_mn v_n
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
    check_tensor("x", x, min_dim=2, shape_hint="[..., L, d]")
    check_causal(causal)
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
        rope_base = check_real("rope_base", rope_base, positive=True)
        q, k = apply_rope(q, base=rope_base), apply_rope(k, base=rope_base)  # R_m q_m, R_n k_n
    out, weights = attention(q, k, v, bias=bias, causal=causal, scale=scale)
    return out, weights
