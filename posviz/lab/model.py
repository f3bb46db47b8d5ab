r"""A small causal Transformer language model whose position method is one argument.

nanoGPT-shaped (pre-LN blocks, GELU MLP, tied input/output embedding), with one plug-in surface
for position. A method does one of three things (see :mod:`posviz.attention`):

* **adds to the input** :math:`x_m \mapsto x_m + p_m`: ``sinusoidal``
  (:func:`posviz.sinusoidal_encoding`), ``learned`` (:class:`posviz.LearnedPositionalEmbedding`);
* **rotates q and k** :math:`q_m \mapsto R_{\Theta,m} q_m`: ``rope`` (:func:`posviz.apply_rope`);
* **biases the scores** :math:`s_{mn} \mapsto s_{mn} + B_{mn}`: ``alibi``
  (:func:`posviz.alibi_bias`), ``t5`` (:class:`posviz.T5RelativeBias`, causal buckets) and ``shaw``
  (:class:`posviz.ShawRelativePosition`, whose bias :math:`q_m^\top a^K_{m-n}/\sqrt{d}` depends on
  the query and which also adds :math:`a^V_{m-n}` to the values);
* ``none`` (NoPE) does nothing: the causal mask alone lets the model infer position.

Round three (:data:`ROUND3_METHODS`, :mod:`posviz.lab.positions_round3`): ``learned-random`` and
``rope-random`` (randomized positions, Ruoss et al. 2023: add to the input / rotate q and k at
sorted random positions in training), ``fire`` and ``kerple-log`` (learned functions of distance
that bias the scores), ``cope`` (contextual positions: a q-dependent score bias) and ``xpos``
(rotates and scales q and k).

Attention itself is :func:`posviz.attention` with ``causal=True`` (Shaw's module applies its mask rule);
:meth:`GPT.set_attention` switches a model to PyTorch's fused
:func:`~torch.nn.functional.scaled_dot_product_attention` (the lab does so on CUDA), with the
method's bias plus the causal mask as its float ``attn_mask``, or ``is_causal=True`` when the
method has no bias; Shaw (a query-dependent bias and a value term) always keeps
:func:`posviz.attention`. Both compute the same function (tested in float64).
Six evaluation-time variants reuse a trained ``rope`` model unchanged
(:data:`ROPE_VARIANTS`), with :math:`s = L/L_{\text{train}}` when :math:`L > L_{\text{train}}`:
``rope-pi`` (position interpolation, Chen et al. 2023: positions :math:`m/s`), ``rope-ntk``
("NTK-aware" base scaling, bloc97 2023: :math:`b' = b\, s^{d/(d-2)}`, :math:`d` the head size),
``rope-yarn`` and ``rope-yarn-no-temp`` (YaRN, Peng et al. 2024, factor :math:`s`, with and without
its temperature), ``rope-dynamic`` (``transformers``' dynamic NTK with factor 2) and ``rope-llama3``
(Llama 3.1's by-parts rule, factor :math:`s`, frequency factors 1 and 4): see
:func:`posviz.lab.positions.rope_scaling_config`.

**Paired seeds.** ``GPT(cfg, seed=s)`` draws its weights from separate generators derived from
``s`` (:func:`derive_seed`): one for everything the methods share (token embedding, blocks, final
LayerNorm), in a fixed order that does not depend on the method, and one for the position module.
So with one seed every method starts from *the same* token embeddings and blocks, and differs
only in its position parameters (the training batches come from a third stream, in
:mod:`posviz.lab.train`).

Token embeddings are scaled by :math:`\sqrt{d_{\text{model}}}` (Vaswani et al. §3.4, and fairseq,
which the ALiBi paper used) and initialised :math:`\mathcal{N}(0, 1/d_{\text{model}})`, so a token
vector and a sinusoid have comparable size at the input; the output layer reuses the embedding.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch import nn
from torch.nn import functional as F

from .positions import (
    ROPE_SCALINGS,
    BeyondLearnedTable,
    PositionMethod,
    RotaryPosition,
    check_ntk_head_size,
    make_position,
)

__all__ = [
    "ALL_METHODS",
    "CLASSIC_METHODS",
    "BeyondLearnedTable",
    "GPT",
    "METHODS",
    "METHOD_KIND",
    "NOT_YET_PUBLISHED",
    "ROPE_VARIANTS",
    "ROUND3_METHODS",
    "GPTConfig",
    "PositionMethod",
    "check_ntk_head_size",
    "derive_seed",
    "make_position",
]

CLASSIC_METHODS: tuple[str, ...] = ("none", "sinusoidal", "learned", "shaw", "t5", "rope", "alibi")
"""The trained methods of the first two rounds."""
ROUND3_METHODS: tuple[str, ...] = ("learned-random", "rope-random", "fire", "kerple-log", "cope", "xpos")
"""Issue 24's methods (:mod:`posviz.lab.positions_round3`): randomized positions, learned functions
of distance, contextual positions, xPos."""
METHODS: tuple[str, ...] = CLASSIC_METHODS + ROUND3_METHODS
"""Trained methods, in the order figures and tables list them."""
NOT_YET_PUBLISHED: tuple[str, ...] = ()
"""Methods the published run (``posviz/lab/published/extrapolation.json``) has no rows for: none
since the round-three republish (``--publish`` runs every method, :data:`ALL_METHODS`). A method
added later goes here until the next full republish (``tests/test_lab_round3.py`` checks that the
tuple names exactly the methods the published file lacks)."""
ROPE_VARIANTS: dict[str, str] = {
    "rope-pi": "pi",
    "rope-ntk": "ntk",
    "rope-yarn": "yarn",
    "rope-yarn-no-temp": "yarn-no-temp",
    "rope-dynamic": "dynamic",
    "rope-llama3": "llama3",
}
"""Evaluation-only variants of a trained ``rope`` model: name -> RoPE scaling."""
ALL_METHODS: tuple[str, ...] = CLASSIC_METHODS + tuple(ROPE_VARIANTS) + ROUND3_METHODS
"""Every row, in display order: the classic trained methods, the rope-* evaluation rows, round three."""
METHOD_KIND: dict[str, str] = {
    "none": "none",
    "sinusoidal": "adds to the input",
    "learned": "adds to the input",
    "shaw": "biases the scores (and values)",
    "t5": "biases the scores",
    "rope": "rotates q and k",
    "rope-pi": "rotates q and k",
    "rope-ntk": "rotates q and k",
    "rope-yarn": "rotates q and k",
    "rope-yarn-no-temp": "rotates q and k",
    "rope-dynamic": "rotates q and k",
    "rope-llama3": "rotates q and k",
    "alibi": "biases the scores",
    "learned-random": "adds to the input",
    "rope-random": "rotates q and k",
    "fire": "biases the scores",
    "kerple-log": "biases the scores",
    "cope": "biases the scores",
    "xpos": "rotates q and k",
}


@dataclass
class GPTConfig:
    """Model hyperparameters (nanoGPT style). ``block_size`` is the training length."""

    method: str = "alibi"
    vocab_size: int = 256
    block_size: int = 64  # training length; rows of the learned table
    n_layer: int = 3
    n_head: int = 4
    n_embd: int = 128
    mlp_ratio: int = 4
    shaw_max_distance: int = 16  # Shaw et al.'s clip k
    t5_num_buckets: int = 32  # T5 defaults
    t5_max_distance: int = 128
    rope_base: float = 10000.0

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd", "mlp_ratio"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.n_embd % self.n_head:  # the one check of the model's shape (the CLI's flags in brackets)
            raise ValueError(
                f"n_head={self.n_head} (--heads {self.n_head}) must divide n_embd={self.n_embd} "
                f"(--d-model {self.n_embd})"
            )
        if (self.n_embd // self.n_head) % 2:
            raise ValueError(
                f"the head size n_embd/n_head (--d-model/--heads) = {self.n_embd}/{self.n_head} = "
                f"{self.n_embd // self.n_head} must be even (RoPE rotates pairs of coordinates)"
            )

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head

    def to_dict(self) -> dict:
        return asdict(self)


def derive_seed(seed: int, stream: str) -> int:
    """A 63-bit seed for one random stream (``"shared"``, ``"position"``, ``"data"``) of run ``seed``."""
    import hashlib

    digest = hashlib.sha256(f"posviz.lab:{int(seed)}:{stream}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


class CausalSelfAttention(nn.Module):
    r"""Multi-head causal self-attention through the position plug-in.

    .. math:: o = \operatorname{softmax}\!\big(f_q(q) f_k(k)^\top/\sqrt{d_h} + B + M\big)\, v, \qquad
              M_{mn} = -\infty \text{ for } n > m

    per head, with :math:`f_q, f_k` the method's rotation (identity unless RoPE) and :math:`B`
    its score bias (zero unless ALiBi, T5 or Shaw).
    """

    def __init__(self, cfg: GPTConfig, layer: int, position: PositionMethod) -> None:
        super().__init__()
        self.n_head = cfg.n_head
        self.layer = layer
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self._position = [position]  # shared module, owned by GPT (a list keeps it out of this module's children)

    def forward(self, x: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        B, T, C = x.shape  # (B, T, C)
        q, k, v = self.c_attn(x).split(C, dim=2)  # 3 x (B, T, C)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        position = self._position[0]
        q, k = position.rotate(q, k)  # (B, nh, T, hs)
        y = position.attend(q, k, v, bias, self.layer)  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    r""":math:`W_2\,\operatorname{GELU}(W_1 x + b_1) + b_2`, hidden size ``mlp_ratio * n_embd``."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, cfg.mlp_ratio * cfg.n_embd)
        self.c_proj = nn.Linear(cfg.mlp_ratio * cfg.n_embd, cfg.n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(F.gelu(self.c_fc(x)))  # (B, T, C)


class Block(nn.Module):
    r"""Pre-LN block: :math:`x \leftarrow x + \text{attn}(\text{LN}(x))`, then
    :math:`x \leftarrow x + \text{MLP}(\text{LN}(x))`."""

    def __init__(self, cfg: GPTConfig, layer: int, position: PositionMethod) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg, layer, position)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x), bias)  # (B, T, C)
        return x + self.mlp(self.ln_2(x))  # (B, T, C)


class GPT(nn.Module):
    """Causal byte-level language model; ``forward(idx)`` returns logits ``(B, T, vocab)``."""

    def __init__(self, cfg: GPTConfig, seed: int | None = None) -> None:
        super().__init__()
        if seed is None:
            # drawn from torch's global generator (torch.manual_seed makes it repeatable) *before* any
            # module is built: building consumes that generator by an amount that depends on the method
            seed = int(torch.randint(0, 2**62, (), dtype=torch.long))
        self.seed = int(seed)
        self.config = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.position = make_position(cfg)
        self.blocks = nn.ModuleList(Block(cfg, i, self.position) for i in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self._init_weights()

    def shared_parameters(self) -> list[tuple[str, nn.Parameter]]:
        """``(name, parameter)`` of everything but the position module, in a method-independent order."""
        return [(n, p) for n, p in self.named_parameters() if not n.startswith("position.")]

    @torch.no_grad()
    def _init_weights(self) -> None:
        cfg = self.config
        shared = torch.Generator().manual_seed(derive_seed(self.seed, "shared"))
        position = torch.Generator().manual_seed(derive_seed(self.seed, "position"))
        for name, p in self.shared_parameters():
            if name == "wte.weight":
                p.normal_(0.0, cfg.n_embd**-0.5, generator=shared)
            elif name.endswith(".weight") and p.dim() == 2:
                # GPT-2: N(0, 0.02^2), residual projections scaled by 1/sqrt(2 n_layer)
                std = 0.02 / math.sqrt(2 * cfg.n_layer) if name.endswith("c_proj.weight") else 0.02
                p.normal_(0.0, std, generator=shared)
            elif "ln_" in name and name.endswith(".weight"):
                p.fill_(1.0)
            else:  # linear and LayerNorm biases
                p.zero_()
        self.position.init_parameters(position)  # learned table, T5 buckets, Shaw vectors: N(0, 0.02^2)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def set_rope_scaling(self, scaling: str) -> None:
        """Switch a ``rope`` model to one of :data:`posviz.lab.positions.ROPE_SCALINGS` (evaluation only)."""
        if not isinstance(self.position, RotaryPosition):
            raise ValueError(f"RoPE scaling needs a rope model, this one is {self.config.method!r}")
        if scaling not in ROPE_SCALINGS:
            raise ValueError(f"scaling must be one of {ROPE_SCALINGS}, got {scaling!r}")
        if scaling == "ntk":
            check_ntk_head_size(self.config.head_dim)
        self.position.scaling = scaling

    def set_attention(self, backend: str) -> str:
        """``"posviz"`` (:func:`posviz.attention`, the default) or ``"sdpa"``
        (:func:`torch.nn.functional.scaled_dot_product_attention` where the method allows it);
        returns the backend the model now uses (``"posviz"`` for Shaw whatever is asked)."""
        if backend not in ("posviz", "sdpa"):
            raise ValueError(f"attention must be 'posviz' or 'sdpa', got {backend!r}")
        self.position.use_sdpa = backend == "sdpa" and self.position.supports_sdpa
        return "sdpa" if self.position.use_sdpa else "posviz"

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        T = idx.shape[1]  # idx: (B, T)
        x = self.wte(idx) * math.sqrt(self.config.n_embd)  # sqrt(d) E[x_m], (B, T, C)
        p = self.position.add_to_input(T, x.device, x.dtype)  # (T, C) or None
        if p is not None:
            x = x + p  # x_m + p_m
        bias = self.position.bias(T, x.device, x.dtype)  # (nh, T, T) or None
        if bias is not None and self.position.use_sdpa:  # SDPA's float mask: B_mn, -inf above the diagonal
            future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)  # (T, T), n > m
            bias = bias.masked_fill(future, float("-inf"))  # (nh, T, T)
        for block in self.blocks:
            x = block(x, bias)  # (B, T, C)
        x = self.ln_f(x)
        return x @ self.wte.weight.T  # (B, T, vocab), tied output embedding

