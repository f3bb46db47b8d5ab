r"""A RoPE family's position step, as its attention module applies it: :func:`rotate`.

Conventions: ``q`` and ``k`` are ``[batch, heads, seq, head_dim]`` (the layout Hugging Face
modules hand to the score; GPT-J, Llama 4 and DeepSeek-V2 rotate ``[batch, seq, heads, head_dim]``
tensors internally, which is the same rotation), after the projections and any norm that comes
before the rotation (Qwen3's and Gemma 3's ``q_norm``/``k_norm``). ``position_ids`` are
``[seq]`` or ``[batch, seq]``, shared by the queries and the keys of the call (as in the module,
which rotates both before the cache update).

For layer :math:`\ell` with base :math:`b_\ell` and scaling :math:`\sigma_\ell` the step is

.. math::

    q' = a \cdot R^{\text{layout}}_{\Theta,m}\, q_{[o:o+r]} \,\Vert\, q_{\text{rest}}, \qquad
    \Theta = \texttt{rope\_frequencies}(r, b_\ell, \sigma_\ell), \quad
    a = \texttt{rope\_attention\_factor}(\sigma_\ell)

(the same for :math:`k`), with :math:`r` the rotated width and :math:`o` its offset: the
rotation of :func:`posviz.apply_rope` on coordinates :math:`o .. o+r-1` only, the others passed
through, and :math:`a` the factor the module multiplies cos and sin by (YaRN, LongRoPE; 1
otherwise). In a NoPE layer nothing rotates; Llama 4 multiplies the query by
:func:`nope_query_temperature` there, at ``position_ids`` (the module uses the cache positions
``past + arange(seq)``, the same numbers unless the batch is padded).

Left to the module: the projections, norms (Llama 4's L2 ``qk_norm`` *after* RoPE included, see
``card.rope.qk_norm_after_rope``), the score scale (DeepSeek's ``card.rope.softmax_scale_factor``)
and the cache.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from .._validate import table_dtype
from ..frequencies import rope_frequencies
from ..rope import apply_rope, rope_layout_permutation
from ..rope_scaling import rope_attention_factor

if TYPE_CHECKING:
    from .card import PositionCard

__all__ = ["nope_query_temperature", "rotate"]


def nope_query_temperature(positions: torch.Tensor, floor_scale: float, attn_scale: float) -> torch.Tensor:
    r"""Llama 4's query temperature in NoPE layers (Nakanishi, *Scalable-Softmax*, arXiv:2501.19399).

    .. math:: \tau_m = 1 + s\,\ln\!\big(1 + \lfloor (m + 1)/F \rfloor\big)

    for the query at position :math:`m`, with ``attn_scale`` :math:`s` (0.1 in Llama 4) and
    ``floor_scale`` :math:`F` (8192): 1 for the first :math:`F - 1` positions, then growing with
    :math:`\ln m`, which keeps the softmax from flattening as a position-free layer sees more keys.
    Computed in float64, returned in torch's default dtype, same shape as ``positions``.
    """
    if not isinstance(positions, torch.Tensor):
        raise TypeError(f"positions must be a torch.Tensor, got {type(positions).__name__}")
    if not floor_scale > 0:
        raise ValueError(f"floor_scale must be > 0, got {floor_scale}")
    m = positions.to(table_dtype(positions.device))
    tau = torch.log1p(torch.floor((m + 1.0) / floor_scale)) * attn_scale + 1.0
    return tau.to(torch.get_default_dtype())


def _frequencies(dim: int, base: float, scaling: dict[str, Any] | None, seq_len: int, device: torch.device):
    """theta_i of the layer: posviz.rope_frequencies, with the layer's scaling mapping."""
    return rope_frequencies(dim, base, scaling=scaling, seq_len=seq_len, device=device, dtype=table_dtype(device))


def _check(name: str, x: object, head_dim: int) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() != 4 or not x.is_floating_point():
        raise ValueError(
            f"{name} must be a floating tensor [batch, heads, seq, head_dim], got {x.dtype} of shape {list(x.shape)}"
        )
    if x.shape[-1] != head_dim:
        raise ValueError(f"{name}.shape[-1] must be this card's head_dim {head_dim}, got {x.shape[-1]}")
    return x


def _positions(position_ids: object, seq: int) -> torch.Tensor:
    if not isinstance(position_ids, torch.Tensor):
        raise TypeError(f"position_ids must be a torch.Tensor, got {type(position_ids).__name__}")
    if position_ids.is_floating_point() or position_ids.is_complex() or position_ids.dtype == torch.bool:
        raise TypeError(f"position_ids must be an integer tensor, got {position_ids.dtype}")
    if position_ids.dim() not in (1, 2) or position_ids.shape[-1] != seq:
        raise ValueError(f"position_ids must be [seq] or [batch, seq] with seq={seq}, got {list(position_ids.shape)}")
    if position_ids.numel() and int(position_ids.min()) < 0:
        raise ValueError(f"position_ids must be >= 0, got min {int(position_ids.min())}")
    return position_ids if position_ids.dim() == 1 else position_ids[:, None, :]  # [b, 1, s] against [b, h, s]


def rotate(
    card: PositionCard, q: torch.Tensor, k: torch.Tensor, position_ids: torch.Tensor, *, layer: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(q, k)`` after layer ``layer``'s position step (see the module docstring for the formula).

    Returns new tensors in the dtype and on the device of ``q`` and ``k``. Dynamic NTK and LongRoPE
    pick their frequencies from ``seq_len = max(position_ids) + 1``, as the Hugging Face rotary
    modules do on each call.
    """
    rope = card.rope
    assert rope is not None
    q = _check("q", q, rope.head_dim)
    k = _check("k", k, rope.head_dim)
    if q.shape[-2] != k.shape[-2]:
        raise ValueError(f"q and k must have the same seq length (dim -2), got {q.shape[-2]} and {k.shape[-2]}")
    pos = _positions(position_ids, q.shape[-2]).to(q.device)

    if layer in rope.nope_layers:
        if rope.temperature is None:
            return q.clone(), k.clone()
        tau = nope_query_temperature(pos, rope.temperature.floor_scale, rope.temperature.attn_scale)
        return (q * tau[..., None].to(q.dtype)).to(q.dtype), k.clone()

    seq_len = int(pos.max()) + 1 if pos.numel() else 1
    scaling = card.scaling(layer)
    theta = _frequencies(rope.rotary_dim, card.base(layer), scaling, seq_len, q.device)
    factor = 1.0 if scaling is None else float(rope_attention_factor(scaling, seq_len=seq_len))
    lo, width = rope.rotary_offset, rope.rotary_dim
    perm = rope_layout_permutation(width, device=q.device) if rope.deinterleave_output else None

    def step(x: torch.Tensor) -> torch.Tensor:
        out = apply_rope(
            x[..., lo:], pos, layout=rope.layout, rotary_dim=width, frequencies=theta, attention_factor=factor
        )
        if perm is not None:  # [rotated evens | rotated odds]
            out = torch.cat((out[..., :width][..., perm], out[..., width:]), dim=-1)
        return torch.cat((x[..., :lo], out), dim=-1) if lo else out

    return step(q), step(k)

