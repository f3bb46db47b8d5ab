r"""The position plug-ins of the lab's model: one :class:`PositionMethod` per method.

A method does one of three things (see :mod:`posviz.lab.model`): adds to the input, rotates q
and k, or biases the scores; each calls the ``posviz`` function its chapter teaches, and
attention is :func:`posviz.attention` with ``causal=True`` (Shaw's module computes its own
scores and applies the same mask rule), or PyTorch's SDPA after :meth:`posviz.lab.GPT.set_attention`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn
from torch.nn import functional as F

from posviz import (
    LearnedPositionalEmbedding,
    ShawRelativePosition,
    T5RelativeBias,
    alibi_bias,
    alibi_slopes,
    apply_rope,
    attention,
    rope_attention_factor,
    rope_frequencies,
    sinusoidal_encoding,
)

if TYPE_CHECKING:
    from .model import GPTConfig

__all__ = [
    "DYNAMIC_FACTOR",
    "LLAMA3_FREQ_FACTORS",
    "ROPE_SCALINGS",
    "ALiBiPosition",
    "BeyondLearnedTable",
    "LearnedPosition",
    "NoPosition",
    "PositionMethod",
    "RotaryPosition",
    "ShawPosition",
    "SinusoidalPosition",
    "T5Position",
    "check_ntk_head_size",
    "make_position",
    "rope_scaling_config",
]


class BeyondLearnedTable(IndexError):
    """The input is longer than the learned position table: the model *cannot run* at that length.

    The only exception :mod:`posviz.lab.evaluate` reports as "cannot run"; any other error
    propagates.
    """


class PositionMethod(nn.Module):
    """The plug-in surface. The defaults do nothing (NoPE); each method overrides one hook.

    ``supports_sdpa``: the method's attention is softmax(q k^T/sqrt(d) + B) v with a bias that
    does not depend on q (so SDPA can compute it); ``use_sdpa``: set by :meth:`GPT.set_attention`.
    """

    supports_sdpa: bool = True
    use_sdpa: bool = False

    @torch.no_grad()
    def init_parameters(self, generator: torch.Generator) -> None:
        r"""Draw the method's parameters from ``generator`` (the model's "position" stream,
        :class:`posviz.lab.GPT`): every parameter :math:`\mathcal{N}(0, 0.02^2)`, in registration
        order (the learned table, T5 buckets, Shaw vectors). A method whose parameters need another
        start (FIRE, KERPLE) overrides it."""
        for p in self.parameters():
            p.normal_(0.0, 0.02, generator=generator)

    def add_to_input(self, length: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor | None:
        """``p_m`` for ``m = 0..length-1``, ``(T, C)``, added to the token embeddings; or None."""
        return None

    def rotate(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``q, k``: ``(B, nh, T, hs)`` -> rotated ``(B, nh, T, hs)``."""
        return q, k

    def bias(self, length: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor | None:
        """Score bias ``(nh, T, T)`` shared by all layers; or None."""
        return None

    def attend(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None, layer: int
    ) -> torch.Tensor:
        r""":math:`\operatorname{softmax}(q k^\top/\sqrt{d} + B)\,v` with the causal mask, ``(B, nh, T, hs)``.

        With ``use_sdpa``, ``bias`` already holds the causal mask (:meth:`GPT.forward` adds it
        once for all layers) and is SDPA's float ``attn_mask``; None: SDPA's fused causal path."""
        if self.use_sdpa:
            if bias is None:
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, nh, T, hs)
            return F.scaled_dot_product_attention(q, k, v, attn_mask=bias.to(q.dtype))  # (B, nh, T, hs)
        out, _ = attention(q, k, v, bias=bias, causal=True)
        return out


class NoPosition(PositionMethod):
    """NoPE: no position signal beyond the causal mask."""


class SinusoidalPosition(PositionMethod):
    """Vaswani et al.'s fixed table, :func:`posviz.sinusoidal_encoding`, added to the input."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.dim = cfg.n_embd

    def add_to_input(self, length: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        return sinusoidal_encoding(length, self.dim, device=device, dtype=dtype)  # (T, C)


class LearnedPosition(PositionMethod):
    """A learned table, :class:`posviz.LearnedPositionalEmbedding`, with ``block_size`` rows.

    Lengths past the table raise :class:`BeyondLearnedTable` (an ``IndexError``): such an
    evaluation "cannot run".
    """

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.table = LearnedPositionalEmbedding(cfg.block_size, cfg.n_embd)

    def add_to_input(self, length: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        if length > self.table.max_len:
            raise BeyondLearnedTable(
                f"length {length} is past the learned table: max_len={self.table.max_len} has rows for "
                f"positions 0..{self.table.max_len - 1} only (a learned table cannot extrapolate)"
            )
        return self.table.rows(length).to(dtype)  # (T, C)


def check_ntk_head_size(head_dim: int) -> None:
    """NTK-aware scaling's exponent :math:`d/(d-2)` needs a head size :math:`d > 2`: ``ValueError`` otherwise."""
    if head_dim <= 2:
        raise ValueError(
            f"rope-ntk needs a head size --d-model/--heads above 2 (its base exponent is d/(d-2)), got {head_dim}"
        )


ROPE_SCALINGS: tuple[str, ...] = ("none", "pi", "ntk", "yarn", "yarn-no-temp", "dynamic", "llama3")
"""The evaluation-time rules :class:`RotaryPosition` knows (``"none"``: the trained ladder)."""
DYNAMIC_FACTOR = 2.0
r"""The ``factor`` of the lab's dynamic-NTK row. Factor 1 is the lab's ``rope-ntk`` row already
(:func:`posviz.rope_scaling.ntk_aware_base`), so the ``rope-dynamic`` row takes factor 2, a setting
found in released configs (``{"type": "dynamic", "factor": 2.0}``: the InternLM2-based InternVL2
models, m42-health/med42-70b)."""
LLAMA3_FREQ_FACTORS = (1.0, 4.0)
"""``(low_freq_factor, high_freq_factor)`` of the lab's llama3 row: Llama 3.1's released values."""


def rope_scaling_config(scaling: str, length: int, train_len: int) -> dict | None:
    r"""The ``transformers``-style ``rope_parameters`` mapping of the lab's rule ``scaling`` for
    windows of ``length`` tokens of a model trained at ``train_len``; None for the trained ladder.

    With :math:`s = \text{length}/L_{\text{train}}` (None when :math:`s \le 1`: every row is the
    trained model at the training length):

    * ``"pi"``: ``linear`` with factor :math:`s` (the lab computes it as positions :math:`m/s`);
    * ``"ntk"``: ``dynamic`` with factor 1 and ``max_position_embeddings`` :math:`= L_{\text{train}}`,
      i.e. the NTK-aware base :math:`b\,s^{d/(d-2)}` (the lab computes that base directly);
    * ``"yarn"``: ``yarn`` with factor :math:`s`, original context :math:`L_{\text{train}}`, the
      default :math:`\beta_{\text{fast}} = 32`, :math:`\beta_{\text{slow}} = 1` and its temperature
      (cos and sin times :math:`0.1 \ln s + 1`); ``"yarn-no-temp"``: the same with
      ``attention_factor`` 1;
    * ``"dynamic"``: ``dynamic`` with factor :data:`DYNAMIC_FACTOR` (2) and
      ``max_position_embeddings`` :math:`= L_{\text{train}}`: base :math:`b\,s_{\text{eff}}^{d/(d-2)}`,
      :math:`s_{\text{eff}} = 2s - 1`;
    * ``"llama3"``: ``llama3`` with factor :math:`s`, original context :math:`L_{\text{train}}`,
      low and high frequency factors 1 and 4 (:data:`LLAMA3_FREQ_FACTORS`).

    Like ``rope-pi``, YaRN and llama3 are configured per evaluated length (factor :math:`s`), as a
    deployment configured for exactly that context would be.
    """
    if scaling not in ROPE_SCALINGS:
        raise ValueError(f"RoPE scaling must be one of {ROPE_SCALINGS}, got {scaling!r}")
    s = length / train_len
    if scaling == "none" or s <= 1:
        return None
    if scaling == "pi":
        return {"rope_type": "linear", "factor": s}
    if scaling in ("ntk", "dynamic"):
        factor = 1.0 if scaling == "ntk" else DYNAMIC_FACTOR
        return {"rope_type": "dynamic", "factor": factor, "max_position_embeddings": train_len}
    if scaling == "llama3":
        low, high = LLAMA3_FREQ_FACTORS
        return {
            "rope_type": "llama3", "factor": s, "original_max_position_embeddings": train_len,
            "low_freq_factor": low, "high_freq_factor": high,
        }
    config = {"rope_type": "yarn", "factor": s, "original_max_position_embeddings": train_len}
    if scaling == "yarn-no-temp":
        config["attention_factor"] = 1.0
    return config


class RotaryPosition(PositionMethod):
    r"""RoPE on q and k (:func:`posviz.apply_rope`, interleaved pairs), with optional scaling.

    ``scaling`` (set at evaluation time, default ``"none"``), for :math:`s = T / L_{\text{train}} > 1`:

    * ``"pi"``: positions :math:`m / s` (position interpolation);
    * ``"ntk"``: base :math:`b\,s^{d/(d-2)}` (NTK-aware scaling), :math:`d` the head size;
    * ``"yarn"``, ``"yarn-no-temp"``, ``"dynamic"``, ``"llama3"``: the frequencies
      :func:`posviz.rope_frequencies` gives for :func:`rope_scaling_config`'s mapping, and cos and
      sin times :func:`posviz.rope_attention_factor` (YaRN's temperature; 1 for the others).
    """

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.base = cfg.rope_base
        self.train_len = cfg.block_size
        self.head_dim = cfg.head_dim
        self.scaling = "none"

    def rotate(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        length = q.shape[-2]
        s = length / self.train_len
        if self.scaling == "none" or s <= 1:
            return apply_rope(q, base=self.base), apply_rope(k, base=self.base)  # (B, nh, T, hs)
        if self.scaling == "pi":
            positions = torch.arange(length, device=q.device, dtype=torch.float64) / s  # m / s
            return apply_rope(q, positions, base=self.base), apply_rope(k, positions, base=self.base)
        if self.scaling == "ntk":
            check_ntk_head_size(self.head_dim)
            base = self.base * s ** (self.head_dim / (self.head_dim - 2))  # b s^(d/(d-2))
            return apply_rope(q, base=base), apply_rope(k, base=base)
        config = rope_scaling_config(self.scaling, length, self.train_len)  # ValueError for an unknown rule
        theta = rope_frequencies(
            self.head_dim, self.base, scaling=config, seq_len=length, device="cpu", dtype=torch.float64
        )
        factor = rope_attention_factor(config, seq_len=length)  # cos, sin times this: scores times its square
        return (
            apply_rope(q, frequencies=theta, attention_factor=factor),  # (B, nh, T, hs)
            apply_rope(k, frequencies=theta, attention_factor=factor),
        )

    def extra_repr(self) -> str:
        return f"base={self.base}, scaling={self.scaling!r}"


class ALiBiPosition(PositionMethod):
    r"""ALiBi: :math:`B_{h,mn} = -m_h (m - n)` (:func:`posviz.alibi_bias`), the paper's slopes."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.n_head = cfg.n_head
        self.register_buffer("slopes", alibi_slopes(cfg.n_head, device="cpu"), persistent=False)  # (nh,)

    def bias(self, length: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        return alibi_bias(self.n_head, length, slopes=self.slopes, device=device, dtype=dtype)  # (nh, T, T)


class T5Position(PositionMethod):
    r"""T5's learned bucket bias :math:`b_{h,\text{bucket}(n-m)}` (:class:`posviz.T5RelativeBias`).

    Causal buckets (``bidirectional=False``), one table shared by all layers as in T5.
    """

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.rel = T5RelativeBias(
            cfg.n_head, num_buckets=cfg.t5_num_buckets, max_distance=cfg.t5_max_distance, bidirectional=False
        )

    def bias(self, length: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        return self.rel(length).to(dtype)  # (nh, T, T)


class ShawPosition(PositionMethod):
    r"""Shaw et al.'s clipped relative keys and values (:class:`posviz.ShawRelativePosition`).

    One module per layer (its tables are shared by that layer's heads), clip :math:`k` =
    ``shaw_max_distance``. Its bias depends on the query and it adds to the values, so it always
    runs :func:`posviz.attention` (never SDPA).
    """

    supports_sdpa = False

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            ShawRelativePosition(cfg.head_dim, cfg.shaw_max_distance) for _ in range(cfg.n_layer)
        )

    def attend(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None, layer: int
    ) -> torch.Tensor:
        out, _ = self.layers[layer](q, k, v, causal=True, bias=bias)  # (B, nh, T, hs)
        return out


_POSITION_CLASSES: dict[str, type[PositionMethod]] = {
    "none": NoPosition,
    "sinusoidal": SinusoidalPosition,
    "learned": LearnedPosition,
    "shaw": ShawPosition,
    "t5": T5Position,
    "rope": RotaryPosition,
    "alibi": ALiBiPosition,
}


from .positions_round3 import ROUND3_CLASSES  # noqa: E402  (it subclasses PositionMethod, defined above)

_POSITION_CLASSES.update(ROUND3_CLASSES)


def make_position(cfg: GPTConfig) -> PositionMethod:
    """The :class:`PositionMethod` for ``cfg.method``."""
    cls = _POSITION_CLASSES[cfg.method]
    return cls() if cls is NoPosition else cls(cfg)  # type: ignore[call-arg]


