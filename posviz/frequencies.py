r"""The frequency ladder shared by sinusoidal encoding and RoPE, and its context-extension rules.

Both methods use the same geometric sequence of angular frequencies
(Vaswani et al., 2017, §3.5; Su et al., 2024, *RoFormer*, eq. 15):

.. math::

    \theta_i = \text{base}^{-2i/d}, \qquad i = 0, 1, \dots, d/2 - 1 .

RoFormer counts :math:`i` from 1 and writes :math:`10000^{-2(i-1)/d}`; Vaswani et al. count from 0,
as the code does.
Pair :math:`i` has wavelength :math:`\lambda_i = 2\pi / \theta_i = 2\pi\,\text{base}^{2i/d}`, from
:math:`2\pi` (``i = 0``) to :math:`2\pi \cdot \text{base}^{(d-2)/d}` (``i = d/2 - 1``): growing
along the pairs for ``base > 1`` (every model's case, and just under :math:`2\pi\cdot\text{base}`
for large :math:`d`), all :math:`2\pi` for ``base = 1``, shrinking for ``base < 1``.

The scaling rules of released models (PI, NTK-aware, dynamic NTK, YaRN, llama3, LongRoPE) are
:mod:`posviz.rope_scaling`; :func:`rope_frequencies` applies them from a ``transformers``-style
mapping.

Derived in the book: *Sinusoidal encoding* (the Fourier-feature view) and *RoPE*.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

from ._rope_params import _check_seq_len, parse_scaling
from ._validate import check_even_dim, check_positive, resolve, round_once, table_dtype
from .rope_scaling import scaled_frequencies

__all__ = ["rope_frequencies", "wavelengths"]


def rope_frequencies(
    dim: int,
    base: float = 10000.0,
    *,
    scaling: Mapping | None = None,
    seq_len: int | None = None,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    r"""Angular frequencies :math:`\theta_i = \text{base}^{-2i/d}`, shape ``[dim // 2]``, optionally rescaled.

    .. math:: \theta_i = \text{base}^{-2i/d}, \quad i = 0, \dots, d/2 - 1

    The same ladder is used by :func:`posviz.sinusoidal_encoding` (Vaswani et al., 2017) and by
    every RoPE function (Su et al., 2024). With ``scaling``, the ladder of a context-extension
    rule, equal to ``transformers.modeling_rope_utils.ROPE_INIT_FUNCTIONS[rope_type]``'s
    ``inv_freq`` (to a few float32 ulp: posviz rounds a float64 value once, ``transformers``
    computes in float32). With :math:`s` = ``factor``, :math:`L` =
    ``original_max_position_embeddings``, :math:`L_{\max}` = ``max_position_embeddings``,
    :math:`\ell` = ``seq_len`` and :math:`d` = ``dim``:

    .. math::

        \theta'_i = \begin{cases}
        \theta_i & \text{default} \\
        \theta_i / s & \text{linear (PI: the same as positions } m/s) \\
        \big(b\, s_{\text{eff}}^{d/(d-2)}\big)^{-2i/d}, \quad
            s_{\text{eff}} = s\,\max(\ell, L_{\max})/L_{\max} - (s - 1) & \text{dynamic} \\
        (1 - \gamma_i)\,\theta_i/s + \gamma_i\,\theta_i & \text{yarn } (\gamma_i\text{: YaRN's ramp}) \\
        (1 - \mu_i)\,\theta_i/s + \mu_i\,\theta_i & \text{llama3 } (\mu_i\text{: Llama 3's ramp}) \\
        \theta_i / \lambda_i, \quad \lambda = \lambda^{\text{long}} \text{ if } \ell > L
            \text{ else } \lambda^{\text{short}} & \text{longrope}
        \end{cases}

    ``dynamic`` and ``longrope`` depend on ``seq_len``, the largest position plus one, which is
    what ``transformers``' ``dynamic_rope_update`` passes (``max(position_ids) + 1``) before each
    forward: ``longrope`` switches from ``short_factor`` (:math:`\lambda^{\text{short}}`) to
    ``long_factor`` (:math:`\lambda^{\text{long}}`) when it exceeds :math:`L` (no ``seq_len``:
    the short ones, as at initialisation); ``dynamic`` is the plain ladder up to :math:`L_{\max}`.
    Note that ``transformers`` recomputes dynamic NTK only when the sequence *grows* past the
    longest one seen so far, and goes back to the plain ladder when a sequence shorter than
    :math:`L_{\max}` arrives: after a 9000-token prompt a 5000-token one still uses the 9000-token
    frequencies, so pass the longest ``seq_len`` seen to reproduce a model in that state. During
    decoding ``seq_len`` grows by one every token, so the frequencies of every cached key change
    while their keys were rotated with older ones (the known dynamic-NTK cache mismatch).

    Args:
        dim: the rotated dimension :math:`d`, a positive even integer: the head size, or
            ``int(head_dim * partial_rotary_factor)`` for partial rotary (the mapping's
            ``partial_rotary_factor`` is not read: pass the rotated dimension itself).
        base: the frequency base (10000 in both papers; a config's ``rope_theta``), > 0; > 1 with
            ``scaling``. A ``rope_theta`` in ``scaling`` must equal it.
        scaling: ``None`` or a mapping as a ``transformers`` config's ``rope_parameters`` /
            ``rope_scaling``: ``rope_type`` (or the legacy ``type``) one of ``"default"``,
            ``"linear"``, ``"dynamic"``, ``"yarn"``, ``"llama3"``, ``"longrope"``, with that type's
            fields (``factor``; ``beta_fast``, ``beta_slow``, ``truncate``, ``mscale``,
            ``mscale_all_dim``, ``attention_factor``; ``low_freq_factor``, ``high_freq_factor``;
            ``short_factor``, ``long_factor``), ``original_max_position_embeddings`` (defaults
            to ``max_position_embeddings``, as ``transformers`` does) and the config's
            ``max_position_embeddings``, which dynamic NTK needs. Unknown keys are refused. The
            matching cos/sin factor is :func:`posviz.rope_attention_factor`. Qwen2-VL's legacy
            ``"mrope"`` is read as ``"default"``, as ``transformers`` does (its ``mrope_section``
            splits the pairs among position axes and is not read here).
        seq_len: the current sequence length (largest position + 1), a positive integer, or
            ``None``; read by ``dynamic`` and ``longrope`` only.
        device, dtype: where and in which floating dtype to return :math:`\theta`; computed in
            float64 and rounded once.
    """
    dim = check_even_dim("dim", dim)
    base = check_positive("base", base)
    params = parse_scaling(scaling)
    seq_len = _check_seq_len(seq_len)
    if params is not None and params["rope_type"] != "default" and base <= 1:
        raise ValueError(
            f"base must be > 1 with a scaling rule (they assume wavelengths grow along the pairs), got {base}"
        )
    if params is not None and params["rope_theta"] is not None and params["rope_theta"] != base:
        raise ValueError(
            f"scaling['rope_theta'] = {params['rope_theta']} but base = {base}: pass base=scaling['rope_theta']"
        )
    device, dtype = resolve(device, dtype)
    work = table_dtype(device)  # built in float64, then cast
    exponent = torch.arange(0, dim, 2, device=device, dtype=work) / dim  # 2i/d
    theta = torch.exp(-math.log(base) * exponent)  # base^(-2i/d)
    if params is not None:
        theta = scaled_frequencies(theta, dim, base, params, seq_len)
    return round_once(theta, dtype)  # float64, rounded once (torch's cast from float64 rounds twice)


def wavelengths(
    dim: int,
    base: float = 10000.0,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    r"""Wavelength of each pair, :math:`\lambda_i = 2\pi / \theta_i = 2\pi\,\text{base}^{2i/d}`.

    Shape ``[dim // 2]``; from :math:`\lambda_0 = 2\pi` to :math:`\lambda_{d/2-1} =
    2\pi\,\text{base}^{(d-2)/d}`: increasing for ``base > 1`` (then just under
    :math:`2\pi\cdot\text{base}`), constant :math:`2\pi` for ``base = 1``, decreasing for
    ``base < 1``.
    """
    device, dtype = resolve(device, dtype)
    theta = rope_frequencies(dim, base, device=device, dtype=table_dtype(device))
    return round_once(2 * math.pi / theta, dtype)
