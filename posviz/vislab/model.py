r"""The tiny ViT: patch tokens, a class token, pre-LN blocks, a linear head on the class token.

Input: token ids ``(B, H, W)`` (:mod:`posviz.vislab.task`; a patch is a token), flattened row-major
behind a learned class token: ``x = [c, \sqrt{d}\,E[t_{0,0}], \sqrt{d}\,E[t_{0,1}], \dots]``, plus the
method's table when it adds one (:mod:`posviz.vislab.positions`). Blocks: pre-LN, GELU MLP,
bidirectional attention :func:`posviz.attention` (no mask) with the method's rotation of q and k
and its score bias. Output: ``Linear(LN(x_cls))``, one logit per class.

**Why a class token, not mean pooling.** The answer sits in two patches of :math:`H W`. Under mean
pooling their share of the pooled vector falls as :math:`1/(HW)` (from 1/64 at 8 x 8 to 1/256 at
16 x 16) and the background's mean takes over, so an accuracy drop at a larger grid would be the
pooling's, not the positions'. A class token reads the patches through attention, by content, with
the same query at every grid size.

**Paired seeds** (as :class:`posviz.lab.GPT`): ``TinyViT(cfg, seed=s)`` draws everything the methods
share (token embedding, class token, blocks, head) from one generator derived from ``s``
(:func:`posviz.lab.model.derive_seed`, stream ``"vislab-shared"``) in a method-independent order,
and the position parameters from a second (``"vislab-position"``), so with one seed every method
starts from the same shared weights.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch import nn
from torch.nn import functional as F

from ..dot_product import attention
from ..lab.model import derive_seed
from .positions import METHODS, PositionMethod2D, make_position
from .task import N_CLASSES, VOCAB_SIZE, check_grid

__all__ = ["TinyViT", "ViTConfig"]


@dataclass
class ViTConfig:
    """The tiny ViT's shape. ``grid``: the training grid (rows of the learned table, Swin's window)."""

    method: str = "none"
    grid: int = 8
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64
    mlp_ratio: int = 4
    vocab_size: int = VOCAB_SIZE
    n_classes: int = N_CLASSES

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method (--methods) must be one of {METHODS}, got {self.method!r}")
        check_grid(self.grid, "grid (--train-grid)")
        for name, flag in (("n_layer", "--layers"), ("n_head", "--heads"), ("n_embd", "--d-model")):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} ({flag}) must be a positive int, got {value!r}")
        if self.n_embd % self.n_head:
            raise ValueError(f"--heads {self.n_head} must divide --d-model {self.n_embd}")
        if (self.n_embd // self.n_head) % 4:
            raise ValueError(
                f"the head size --d-model/--heads = {self.n_embd // self.n_head} must be a multiple of 4 "
                "(2-D RoPE rotates pairs, half of them with the row and half with the column)"
            )
        if self.n_embd % 4:
            raise ValueError(f"--d-model {self.n_embd} must be a multiple of 4 (2-D sin-cos: sin and cos per axis)")

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head

    def to_dict(self) -> dict:
        return asdict(self)


class _Attention(nn.Module):
    def __init__(self, cfg: ViTConfig, layer: int, position: PositionMethod2D) -> None:
        super().__init__()
        self.n_head, self.layer = cfg.n_head, layer
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self._position = [position]  # shared, owned by TinyViT (a list keeps it out of this module's children)

    def forward(self, x: torch.Tensor, height: int, width: int) -> torch.Tensor:
        B, T, C = x.shape  # (B, 1 + H W, C)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in self.qkv(x).split(C, dim=2))
        position = self._position[0]
        q, k = position.rotate(q, k, height, width, self.layer)  # (B, nh, T, hs)
        bias = position.bias(height, width, self.layer, x.device, x.dtype)  # (nh, T, T) or None
        y, _ = attention(q, k, v, bias=bias)  # (B, nh, T, hs)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class _Block(nn.Module):
    def __init__(self, cfg: ViTConfig, layer: int, position: PositionMethod2D) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.attn = _Attention(cfg, layer, position)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.fc = nn.Linear(cfg.n_embd, cfg.mlp_ratio * cfg.n_embd)
        self.out = nn.Linear(cfg.mlp_ratio * cfg.n_embd, cfg.n_embd)

    def forward(self, x: torch.Tensor, height: int, width: int) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x), height, width)
        return x + self.out(F.gelu(self.fc(self.ln_2(x))))


class TinyViT(nn.Module):
    """``forward(tokens)``: ids ``(B, H, W)`` -> logits ``(B, n_classes)``, on any ``H, W >= 2``."""

    def __init__(self, cfg: ViTConfig, seed: int = 0) -> None:
        super().__init__()
        self.config, self.seed = cfg, int(seed)
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.cls = nn.Parameter(torch.zeros(1, cfg.n_embd))
        self.position = make_position(
            cfg.method, grid=cfg.grid, dim=cfg.n_embd, n_layer=cfg.n_layer, n_head=cfg.n_head
        )
        self.blocks = nn.ModuleList(_Block(cfg, i, self.position) for i in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.head = nn.Linear(cfg.n_embd, cfg.n_classes)
        self._init_weights()

    def shared_parameters(self) -> list[tuple[str, nn.Parameter]]:
        """``(name, parameter)`` of everything but the position module, in a method-independent order."""
        return [(n, p) for n, p in self.named_parameters() if not n.startswith("position.")]

    @torch.no_grad()
    def _init_weights(self) -> None:
        cfg = self.config
        shared = torch.Generator().manual_seed(derive_seed(self.seed, "vislab-shared"))
        for name, p in self.shared_parameters():
            if name == "wte.weight":
                p.normal_(0.0, cfg.n_embd**-0.5, generator=shared)  # times sqrt(d) in forward: unit size
            elif name == "cls" or (name.endswith(".weight") and p.dim() == 2):
                p.normal_(0.0, 0.02, generator=shared)
            elif "ln_" in name and name.endswith(".weight"):
                p.fill_(1.0)
            else:
                p.zero_()
        self.position.reset_parameters(torch.Generator().manual_seed(derive_seed(self.seed, "vislab-position")))

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if tokens.dim() != 3:
            raise ValueError(f"tokens must have shape (B, H, W), got {tuple(tokens.shape)}")
        B, H, W = tokens.shape
        x = self.wte(tokens.reshape(B, H * W)) * math.sqrt(self.config.n_embd)  # (B, H W, C)
        x = torch.cat([self.cls.expand(B, 1, -1).to(x.dtype), x], dim=1)  # (B, 1 + H W, C)
        p = self.position.add_to_input(H, W, x.device, x.dtype)  # (1 + H W, C) or None
        if p is not None:
            x = x + p
        for block in self.blocks:
            x = block(x, H, W)
        return self.head(self.ln_f(x[:, 0]))  # (B, n_classes)
