r"""The additive score biases (ALiBi, T5) and learned-table positions of a family's card.

**Why BLOOM's row-constant ALiBi is ALiBi.** BLOOM (and Falcon) do not add
:math:`-\mu_h\,|i - j|`; they add :math:`+\mu_h\,j` (the key's position, the same in every row).
Within row :math:`i` the two differ by :math:`\mu_h\,i`, a constant of that row, and the softmax
is unchanged by adding a constant to a whole row:

.. math::

    \operatorname{softmax}_j(s_{ij} + \mu_h j) = \operatorname{softmax}_j(s_{ij} + \mu_h j - \mu_h i)
    = \operatorname{softmax}_j(s_{ij} - \mu_h (i - j)),

and under the causal mask (:math:`j \le i`) :math:`-\mu_h(i - j) = -\mu_h|i - j|`. MPT adds
:math:`\mu_h\,(j - (L_k - 1))`, the same up to another row constant. Before a softmax the forms
are interchangeable; the bias values themselves are not.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch

from .._validate import check_int, check_real, exact_dtype, resolve
from ..absolute import sinusoidal_encoding
from ..alibi import alibi_bias, alibi_slopes
from ..relative import t5_relative_bucket
from ..rope import rope_layout_permutation

if TYPE_CHECKING:
    from .card import PositionCard

__all__ = ["card_bias", "mpt_alibi_slopes", "sinusoidal_table", "table_positions"]


def mpt_alibi_slopes(
    num_heads: int,
    alibi_bias_max: float = 8.0,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    r"""MPT's ALiBi slopes, shape ``[num_heads]`` (MosaicML ``attention.py``, ``build_mpt_alibi_tensor``).

    With :math:`P = 2^{\lceil \log_2 H \rceil}` and :math:`B` = ``alibi_bias_max``:

    .. math:: \mu_j = 2^{-jB/P}, \quad j = 1, \dots, P

    all of them when :math:`H = P`; otherwise the odd-indexed then the even-indexed ones,
    :math:`(\mu_2, \mu_4, \dots, \mu_P, \mu_1, \mu_3, \dots)`, cut to :math:`H`. With
    :math:`B = 8` this is Press et al.'s rule (:func:`posviz.alibi_slopes`) for every :math:`H`.
    """
    num_heads = check_int("num_heads", num_heads, minimum=1)
    alibi_bias_max = check_real("alibi_bias_max", alibi_bias_max, positive=True)
    device, dtype = resolve(device, dtype)
    p = 2 ** math.ceil(math.log2(num_heads))
    j = torch.arange(1, p + 1, dtype=torch.float64, device=device)
    mu = torch.pow(2.0, -j * (alibi_bias_max / p))
    if p != num_heads:
        mu = torch.cat((mu[1::2], mu[::2]))[:num_heads]
    return mu.to(dtype)


def _mask(attention_mask: object, key_len: int | None) -> torch.Tensor:
    if not isinstance(attention_mask, torch.Tensor) or attention_mask.dim() != 2:
        raise ValueError("attention_mask must be a [batch, key_len] tensor of 0/1 (1 = a real token)")
    if attention_mask.is_floating_point() or attention_mask.is_complex():
        raise TypeError(f"attention_mask must hold integers or bools, got {attention_mask.dtype}")
    if key_len is not None and attention_mask.shape[1] != key_len:
        raise ValueError(f"attention_mask has {attention_mask.shape[1]} keys, but key_len is {key_len}")
    return attention_mask.long()


def _alibi(
    card: PositionCard,
    query_len: int,
    key_len: int,
    attention_mask: torch.Tensor | None,
    form: str,
    device: torch.device,
    dtype: torch.dtype,
) -> torch.Tensor:
    rule = card.alibi
    assert rule is not None
    heads = card.num_heads
    work = exact_dtype(device)
    if rule.slopes == "mpt":
        slopes = mpt_alibi_slopes(heads, rule.alibi_bias_max or 8.0, device=device, dtype=work)
    else:
        slopes = alibi_slopes(heads, device=device, dtype=work)
    if rule.slope_dtype is not None:
        slopes = slopes.to(getattr(torch, rule.slope_dtype)).to(work)
    if form == "distance":
        if attention_mask is not None:
            raise ValueError("form='distance' takes no attention_mask (it is -m|i - j| for i, j from 0)")
        out = alibi_bias(heads, query_len, key_len, slopes=slopes, device=device, dtype=work)[None]
    else:
        if attention_mask is not None:
            mask = _mask(attention_mask, key_len).to(device)
            j = (mask.cumsum(-1) - 1) * mask  # key position among the unpadded tokens; padding at 0
        else:
            j = torch.arange(key_len, device=device)[None]
        if rule.form == "key-minus-last":
            j = j - (key_len - 1)  # MPT: arange(1 - L, 1)
        j = j.to(work)
        if rule.slope_dtype is not None:  # Falcon multiplies in bfloat16: j too is rounded (exact below 257)
            j = j.to(getattr(torch, rule.slope_dtype)).to(work)
        out = slopes[None, :, None, None] * j[:, None, None, :]  # mu_h * j, [b, h, 1, k]
        if rule.slope_dtype is not None:  # ... and so is the product
            out = out.to(getattr(torch, rule.slope_dtype)).to(work)
        out = out.expand(-1, -1, query_len, -1)
    if rule.bias_scaled:
        out = out / math.sqrt(rule.head_dim or 1)
    return out.to(dtype)


def _t5(
    card: PositionCard, query_len: int, key_len: int, table: object, stack: str, past_length: int,
    dtype: torch.dtype | None,
) -> torch.Tensor:
    spec = card.t5
    assert spec is not None
    if stack not in spec.bidirectional:
        raise ValueError(f"stack must be one of {tuple(spec.bidirectional)}, got {stack!r}")
    if not isinstance(table, torch.Tensor):
        raise TypeError(
            "T5's bias is learned: pass table=, the owner layer's relative_attention_bias.weight "
            f"[num_buckets={spec.num_buckets}, num_heads={card.num_heads}], got {type(table).__name__}"
        )
    if tuple(table.shape) != (spec.num_buckets, card.num_heads):
        raise ValueError(f"table must be [{spec.num_buckets}, {card.num_heads}], got {list(table.shape)}")
    context = torch.arange(query_len, device=table.device)[:, None] + past_length
    memory = torch.arange(key_len, device=table.device)[None, :]
    buckets = t5_relative_bucket(
        memory - context,  # T5's sign: key minus query
        bidirectional=spec.bidirectional[stack], num_buckets=spec.num_buckets, max_distance=spec.max_distance,
    )
    out = table.detach()[buckets].permute(2, 0, 1)[None]  # [1, heads, q, k]
    return out if dtype is None else out.to(dtype)


def card_bias(
    card: PositionCard,
    query_len: int,
    key_len: int | None = None,
    *,
    attention_mask: torch.Tensor | None = None,
    table: torch.Tensor | None = None,
    stack: str = "encoder",
    past_length: int = 0,
    form: str = "native",
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    r"""The bias the family adds to its attention scores, ``[batch, heads, query_len, key_len]``.

    - BLOOM (``form="native"``): :math:`B_{h,ij} = \mu_h\,j` with :math:`j` the key's position
      among the unpadded tokens of ``attention_mask`` (``[batch, key_len]``; default all ones),
      as ``build_alibi_tensor``; added to the scaled scores. Falcon: the same with slopes, key
      positions and products rounded to bfloat16 (its ``build_alibi_tensor`` multiplies in
      bfloat16), divided by :math:`\sqrt{d}` (it is added before the scale). MPT:
      :math:`\mu_h\,(j - (L_k - 1))` with MPT's slopes (``build_mpt_alibi_tensor``).
      ``form="distance"`` gives :math:`-\mu_h|i - j|` (:func:`posviz.alibi_bias`) with the same
      slopes: equal after a causal softmax (module docstring).
    - T5: :math:`B_{h,ij} = W[\operatorname{bucket}(j - i - p), h]` with the owner layer's table
      ``table`` = ``relative_attention_bias.weight`` (``[num_buckets, heads]``), ``stack``
      ``"encoder"`` (bidirectional) or ``"decoder"`` (causal buckets), and ``past_length`` =
      :math:`p` cached positions before the first query (``compute_bias``); added to unscaled
      scores.
    """
    query_len = check_int("query_len", query_len, minimum=0)
    key_len = query_len if key_len is None else check_int("key_len", key_len, minimum=0)
    past_length = check_int("past_length", past_length, minimum=0)
    if form not in ("native", "distance"):
        raise ValueError(f"form must be 'native' or 'distance', got {form!r}")
    if card.method == "t5-bucket":
        return _t5(card, query_len, key_len, table, stack, past_length, dtype)
    if card.method != "alibi":
        raise ValueError(f"bias is for ALiBi and T5 families; {card.family} ({card.model_type}) uses {card.method}")
    dev, dt = resolve(device, dtype)
    return _alibi(card, query_len, key_len, attention_mask, form, dev, dt)


def table_positions(
    card: PositionCard,
    attention_mask: torch.Tensor | None = None,
    *,
    seq_len: int | None = None,
    past_length: int = 0,
) -> torch.Tensor:
    r"""Rows of the learned position table that the ``seq_len`` new tokens read, ``[batch, seq_len]``.

    - BERT, GPT-2, Marian: :math:`\text{row}_t = p + t` for cached length :math:`p`
      (``past_length``), whatever the mask says.
    - OPT: :math:`\text{row}_t = \big(\sum_{u \le t} a_u\big) a_t - 1 + 2` over the mask
      :math:`a` of the past and new tokens (``[batch, past_length + seq_len]``), the last
      ``seq_len`` of them: unpadded tokens count from 0, padding reads row 1, and the table's
      first two rows are the offset (``OPTLearnedPositionalEmbedding``).
    """
    spec = card.learned
    if spec is None and card.sinusoidal is not None:  # a fixed table read like BERT's
        from .card import LearnedTable

        spec = LearnedTable(rows=card.sinusoidal.rows)
    if spec is None:
        raise ValueError(
            f"positions is for learned and sinusoidal tables; {card.family} ({card.model_type}) uses {card.method}"
        )
    past_length = check_int("past_length", past_length, minimum=0)
    if attention_mask is not None:
        mask = _mask(attention_mask, None)
        new = mask.shape[1] - past_length
        if seq_len is not None and seq_len != new:
            raise ValueError(
                f"seq_len {seq_len} disagrees with the attention_mask ({mask.shape[1]} keys - past {past_length})"
            )
        seq_len = new
    if seq_len is None:
        raise ValueError("positions needs attention_mask or seq_len")
    seq_len = check_int("seq_len", seq_len, minimum=0)
    if spec.from_mask:
        if attention_mask is None:
            mask = torch.ones(1, past_length + seq_len, dtype=torch.long)
        rows = (mask.cumsum(1) * mask - 1)[:, past_length:] + spec.offset
    else:
        batch = 1 if attention_mask is None else attention_mask.shape[0]
        device: Any = None if attention_mask is None else attention_mask.device
        rows = (torch.arange(seq_len, device=device) + past_length + spec.offset).expand(batch, -1)
    if rows.numel() and int(rows.max()) >= spec.rows:
        raise ValueError(f"positions reach row {int(rows.max())}, past the table's {spec.rows} rows")
    return rows


def sinusoidal_table(
    card: PositionCard, *, device: torch.device | str | None = None, dtype: torch.dtype | None = None
) -> torch.Tensor:
    r"""A sinusoidal family's fixed table, ``[rows, dim]``.

    Vaswani et al.'s table (:func:`posviz.sinusoidal_encoding`) with its columns permuted to
    ``[sin | cos]`` when the family keeps halves (Marian):

    .. math:: T_{p,\,i} = \sin(p\,\theta_i), \quad T_{p,\,d/2 + i} = \cos(p\,\theta_i),
              \qquad \theta_i = \text{base}^{-2i/d}

    (the permutation :func:`posviz.rope_layout_permutation` of the interleaved table).
    """
    spec = card.sinusoidal
    if spec is None:
        raise ValueError(f"table is for sinusoidal families; {card.family} ({card.model_type}) uses {card.method}")
    device, dtype = resolve(device, dtype)
    table = sinusoidal_encoding(spec.rows, spec.dim, spec.base, device=device, dtype=dtype)
    return table[:, rope_layout_permutation(spec.dim, device=device)] if spec.halves else table
