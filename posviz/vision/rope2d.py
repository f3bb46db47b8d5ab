r"""2-D rotary position embedding for image patches: axial (Qwen2-VL, Llama 4) and mixed (RoPE-Mixed).

A patch at row :math:`r`, column :math:`c` rotates pair :math:`i` of its query and key by an angle
:math:`\alpha_i(r, c)` that is linear in the position. Because rotations compose,

.. math::

    \langle R(\alpha(p))\,q,\; R(\alpha(p'))\,k \rangle = \langle q,\; R(\alpha(p' - p))\,k \rangle ,

the score depends on the 2-D offset :math:`p' - p = (\Delta r, \Delta c)` only.

- **Axial** (:func:`axial_rope_2d`): half of the pairs rotate with the row, half with the column,
  each half on the ladder of ``dim/4`` frequencies :math:`\theta_j = \text{base}^{-4j/d}`.
- **Mixed** (:func:`apply_mixed_rope`, :class:`MixedRoPE`; Heo et al., 2024, *Rotary Position
  Embedding for Vision Transformer*): pair :math:`i` of head :math:`h` rotates by
  :math:`\theta^x_{h,i} c + \theta^y_{h,i} r`, a learnable direction in the plane, so a pair can
  follow diagonals too.

Positions are ``(row, col)`` pairs (:func:`~posviz.vision.patch_positions`).
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from .._validate import check_even_dim, check_int, check_positive, check_tensor, resolve, round_once, table_dtype
from ..frequencies import rope_frequencies
from ._rotate import check_positions_nd, check_rope_input, rotate_pairs

__all__ = ["MixedRoPE", "apply_mixed_rope", "axial_rope_2d", "mixed_rope_frequencies"]

AxialLayout = Literal["qwen2_vl", "llama4"]
_AXIAL_LAYOUTS = ("qwen2_vl", "llama4")


def axial_rope_2d(
    x: torch.Tensor,
    positions: torch.Tensor,
    base: float = 10000.0,
    *,
    layout: AxialLayout = "qwen2_vl",
) -> torch.Tensor:
    r"""Axial 2-D RoPE: the first quarter of the frequencies follow one axis, the second the other.

    With :math:`\theta_j = \text{base}^{-4j/d}` (:math:`j = 0, \dots, d/4 - 1`, the 1-D ladder of
    a ``d/2``-dimensional head) and the patch at row :math:`r`, column :math:`c`:

    - ``layout="qwen2_vl"`` (Qwen2-VL's and Qwen2.5-VL's vision tower: ``VisionRotaryEmbedding``
      and ``apply_rotary_pos_emb_vision``): half-split pairs :math:`(x_i, x_{i+d/2})` as
      ``rotate_half``; pair :math:`i < d/4` turns by :math:`r\,\theta_i` (the **row** first) and
      pair :math:`d/4 + j` by :math:`c\,\theta_j`;
    - ``layout="llama4"`` (Llama 4's ``Llama4VisionRotaryEmbedding`` with ``vision_apply_rotary_emb``,
      and RoPE-ViT's axial ``compute_axial_cis``): interleaved pairs :math:`(x_{2i}, x_{2i+1})` as
      complex numbers; pair :math:`i < d/4` turns by :math:`c\,\theta_i` (the **column** first) and
      pair :math:`d/4 + j` by :math:`r\,\theta_j`. Llama 4 numbers patches from 1
      (pass ``patch_positions(h, w) + 1``) and gives its class token (its *last* row) angle 0,
      i.e. position ``(0, 0)`` here.

    Every pair turns by :math:`\alpha \mapsto (a\cos\alpha - b\sin\alpha, a\sin\alpha + b\cos\alpha)`.

    Args:
        x: queries or keys ``[..., T, d]``, ``d`` a positive multiple of 4; the result keeps
            ``x``'s dtype and device (work in float32, or float64 for float64 inputs).
        positions: ``(row, col)`` of the ``T`` rows, ``[T, 2]`` or ``[..., T, 2]`` whose batch dims
            broadcast against ``x.shape[:-2]`` (integers or finite floats).
        base: frequency base, > 0 (10000 in Qwen2-VL and Llama 4; RoPE-ViT's axial uses 100).
        layout: ``"qwen2_vl"`` or ``"llama4"``.
    """
    x = check_rope_input(x, multiple=4)
    positions = check_positions_nd("positions", positions, x, 2)
    base = check_positive("base", base)
    if layout not in _AXIAL_LAYOUTS:
        raise ValueError(f"layout must be one of {_AXIAL_LAYOUTS}, got {layout!r}")
    exact = table_dtype(x.device)
    theta = rope_frequencies(x.shape[-1] // 2, base, device=x.device, dtype=exact)  # base^(-4j/d), [d/4]
    pos = positions.to(device=x.device, dtype=exact)
    rows, cols = pos[..., 0:1] * theta, pos[..., 1:2] * theta  # [..., T, d/4]
    if layout == "qwen2_vl":
        return rotate_pairs(x, torch.cat((rows, cols), dim=-1), "half")
    return rotate_pairs(x, torch.cat((cols, rows), dim=-1), "interleaved")


def mixed_rope_frequencies(
    n_heads: int,
    dim: int,
    base: float = 10.0,
    *,
    rotate: bool = True,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    r"""RoPE-Mixed's initial frequencies ``[n_heads, dim/2, 2]``: ``[..., 0]`` the column's, ``[..., 1]`` the row's.

    ``[..., 0]`` is :math:`\theta^x` (it multiplies the column :math:`c`), ``[..., 1]`` is
    :math:`\theta^y` (it multiplies the row :math:`r`).

    As the official ``init_2d_freqs`` (naver-ai/rope-vit): magnitudes from the 1-D ladder
    :math:`m_j = \text{base}^{-4j/d}` (:math:`j < d/4`) and one random angle
    :math:`a_h \sim U[0, 2\pi)` per head; the first ``d/4`` pairs point along :math:`a_h`, the
    other ``d/4`` along :math:`a_h + \pi/2`:

    .. math::

        (\theta^x_{h,j}, \theta^y_{h,j}) = m_j(\cos a_h, \sin a_h), \qquad
        (\theta^x_{h,d/4+j}, \theta^y_{h,d/4+j}) = m_j(-\sin a_h, \cos a_h)

    (the official code writes :math:`\cos(a_h + \pi/2)` and :math:`\sin(a_h + \pi/2)`, equal up
    to rounding). ``rotate=False`` sets :math:`a_h = 0`: the axis-aligned start, which is
    :func:`axial_rope_2d` with ``layout="llama4"`` (RoPE-ViT's axial form). The official tensor
    is stacked ``[2, n_heads, dim/2]``; this one is ``official.permute(1, 2, 0)``.

    Args:
        n_heads: heads, >= 1.
        dim: head dimension, a positive multiple of 4.
        base: the ladder's base, > 0 (RoPE-Mixed: 10).
        rotate: draw the per-head angles (True) or start axis-aligned (False).
        generator: a CPU ``torch.Generator`` for the angles (default: torch's global one). Each
            head draws ``torch.rand(1)`` in turn, as the official code does, so the same seed gives
            the official initialisation.
        device, dtype: of the result (torch's defaults); computed in float64, rounded once.
    """
    n_heads = check_int("n_heads", n_heads, minimum=1)
    dim = check_even_dim("dim", dim)
    if dim % 4:
        raise ValueError(f"dim must be a positive multiple of 4 (two directions of dim/4 pairs), got {dim}")
    base = check_positive("base", base)
    if not isinstance(rotate, bool):
        raise TypeError(f"rotate must be True or False, got {rotate!r}")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    device, dtype = resolve(device, dtype)
    work = table_dtype(device)
    mag = rope_frequencies(dim // 2, base, device=device, dtype=work)  # m_j = base^(-4j/d), [d/4]
    if rotate:
        draws = [torch.rand(1, generator=generator, device="cpu" if generator is None else generator.device)
                 for _ in range(n_heads)]
        angles = (torch.cat(draws) * 2 * torch.pi).to(device=device, dtype=work)  # float32 draw * 2 pi, as official
    else:
        angles = torch.zeros(n_heads, device=device, dtype=work)
    cos, sin = torch.cos(angles)[:, None], torch.sin(angles)[:, None]
    fx = torch.cat((mag * cos, -mag * sin), dim=-1)  # [H, d/2]
    fy = torch.cat((mag * sin, mag * cos), dim=-1)
    return round_once(torch.stack((fx, fy), dim=-1), dtype)


def _check_mixed_frequencies(frequencies: object, x: torch.Tensor) -> torch.Tensor:
    frequencies = check_tensor(
        "frequencies", frequencies, min_dim=2, shape_hint="[n_heads, dim/2, 2] or [dim/2, 2]"
    )
    half = x.shape[-1] // 2
    if frequencies.dim() > 3 or frequencies.shape[-1] != 2 or frequencies.shape[-2] != half:
        raise ValueError(
            f"frequencies must have shape [n_heads, dim/2, 2] or [dim/2, 2] with dim/2 = {half} "
            f"(x.shape[-1] = {x.shape[-1]}), got {list(frequencies.shape)}"
        )
    if frequencies.dim() == 3:
        if x.dim() < 3 or x.shape[-3] not in (1, frequencies.shape[0]):
            raise ValueError(
                f"frequencies hold {frequencies.shape[0]} heads, so x must be [..., n_heads, T, dim] with "
                f"n_heads = {frequencies.shape[0]}, got x {list(x.shape)}"
            )
    if not bool(torch.isfinite(frequencies.detach()).all()):
        raise ValueError("frequencies must be finite, got NaN or inf")
    return frequencies


def apply_mixed_rope(x: torch.Tensor, positions: torch.Tensor, frequencies: torch.Tensor) -> torch.Tensor:
    r"""RoPE-Mixed: rotate pair :math:`i` of head :math:`h` by :math:`\theta^x_{h,i}\,c + \theta^y_{h,i}\,r`.

    .. math::

        \alpha_{h,i}(r, c) = \theta^x_{h,i}\, c + \theta^y_{h,i}\, r, \qquad
        (x_{2i}, x_{2i+1}) \mapsto (x_{2i} + \mathrm{i}\,x_{2i+1})\, e^{\mathrm{i}\alpha_{h,i}}

    (Heo et al., 2024; :math:`x` is the column, :math:`y` the row; interleaved pairs as
    complex numbers, as the official ``compute_mixed_cis`` and ``apply_rotary_emb``). The angle is
    linear in the position, so scores depend on :math:`(\Delta r, \Delta c)` only, for any
    frequencies. Gradients flow to ``frequencies`` (they are learnable in :class:`MixedRoPE`).

    Args:
        x: queries or keys ``[..., n_heads, T, dim]`` (or ``[..., T, dim]`` with one set of
            frequencies ``[dim/2, 2]``), ``dim`` even; the result keeps ``x``'s dtype and device.
        positions: ``(row, col)`` ``[T, 2]`` or ``[..., T, 2]``; with per-head frequencies the batch
            dims broadcast against ``x``'s dims *before* the head dim (``[batch, T, 2]`` for ``x``
            ``[batch, heads, T, dim]``), otherwise against ``x.shape[:-2]``.
        frequencies: ``[n_heads, dim/2, 2]`` (:func:`mixed_rope_frequencies`) or ``[dim/2, 2]``,
            finite, on ``x``'s device; ``[..., 0]`` multiplies the column, ``[..., 1]`` the row.
    """
    x = check_rope_input(x)
    frequencies = _check_mixed_frequencies(frequencies, x)
    heads = frequencies.dim() == 3
    headless = x[..., 0, :, :] if heads else x  # positions' batch dims sit before the head dim
    positions = check_positions_nd("positions", positions, headless, 2)
    if frequencies.device != x.device:
        raise ValueError(f"frequencies must be on x's device {x.device}, got {frequencies.device}; move it with .to()")
    exact = table_dtype(x.device)
    pos = positions.to(device=x.device, dtype=exact)
    freq = frequencies.to(exact)
    rows, cols = pos[..., 0, None], pos[..., 1, None]  # [..., T, 1]
    if heads:  # angle [..., H, T, d/2]
        rows, cols = rows[..., None, :, :], cols[..., None, :, :]
        fx, fy = freq[:, None, :, 0], freq[:, None, :, 1]  # [H, 1, d/2]
    else:
        fx, fy = freq[..., 0], freq[..., 1]  # [d/2]
    angle = cols * fx + rows * fy
    return rotate_pairs(x, angle, "interleaved")


class MixedRoPE(nn.Module):
    r"""RoPE-Mixed with learnable frequencies ``frequencies`` ``[n_heads, dim/2, 2]`` (an ``nn.Parameter``).

    Initialised by :func:`mixed_rope_frequencies`; ``forward(x, positions)`` is
    :func:`apply_mixed_rope`. Apply it to queries and keys alike (not to values); the paper shares
    one set per layer between them and learns it with the rest of the network.

    Args:
        n_heads: heads, >= 1.
        dim: head dimension, a positive multiple of 4.
        base: the initial ladder's base, > 0 (10, as the paper).
        rotate: random per-head directions (True, the paper) or axis-aligned (False).
        generator: for the initial angles (default: torch's global generator).
        device, dtype: of the parameter (torch's defaults).
    """

    def __init__(
        self,
        n_heads: int,
        dim: int,
        base: float = 10.0,
        *,
        rotate: bool = True,
        generator: torch.Generator | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        init = mixed_rope_frequencies(
            n_heads, dim, base, rotate=rotate, generator=generator, device=device, dtype=dtype
        )
        self.n_heads, self.dim, self.base = n_heads, dim, float(base)
        self.frequencies = nn.Parameter(init)

    def forward(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Rotate ``x`` ``[..., n_heads, T, dim]`` by the ``(row, col)`` ``positions`` ``[T, 2]``."""
        return apply_mixed_rope(x, positions, self.frequencies)

    def extra_repr(self) -> str:
        return f"n_heads={self.n_heads}, dim={self.dim}, base={self.base:g}"

