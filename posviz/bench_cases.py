r"""The benchmark's operations (:mod:`posviz.bench`): each posviz function at realistic sizes, beside
the widely used implementation it is timed against (imported lazily, inside each case's setup:
they are test-only dependencies) and the size of its output (for the copy floor)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

import posviz

__all__ = ["Case", "Fn", "all_cases"]

Fn = Callable[[], Any]


@dataclass
class Case:
    """One operation at one size: posviz, an optional reference, and the copy floor."""

    op: str
    size: str
    setup: Callable[[torch.device], tuple[Fn, Fn | None, int]]  # -> (posviz, reference, output numel)
    reference: str = ""
    elementwise: bool = False


def _rope_cases(shapes: list[tuple[int, int, int, int]]) -> list[Case]:
    cases = []
    for shape in shapes:
        _b, h, n, d = shape

        def inter(device: torch.device, shape=shape, d=d):
            from rotary_embedding_torch import RotaryEmbedding

            x = torch.randn(shape, device=device)
            rot = RotaryEmbedding(dim=d).to(device)
            rot.rotate_queries_or_keys(x)  # let it fill its own cache, as posviz does
            return (lambda: posviz.apply_rope(x)), (lambda: rot.rotate_queries_or_keys(x)), x.numel()

        def half(device: torch.device, shape=shape, h=h, n=n, d=d):
            from transformers import LlamaConfig
            from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

            x = torch.randn(shape, device=device)
            config = LlamaConfig(hidden_size=h * d, num_attention_heads=h, head_dim=d)
            emb = LlamaRotaryEmbedding(config).to(device)
            pos = torch.arange(n, device=device)[None]

            def ref():  # what a LLaMA layer does for q and k: cos/sin for the positions, then rotate both
                cos, sin = emb(x, pos)
                return apply_rotary_pos_emb(x, x, cos, sin)

            def ours():
                return posviz.apply_rope(x, layout="half"), posviz.apply_rope(x, layout="half")

            return ours, ref, 2 * x.numel()

        label = "x".join(map(str, shape))
        cases.append(Case("apply_rope interleaved", label, inter, "rotary-embedding-torch", elementwise=True))
        cases.append(Case("apply_rope half (q and k)", label, half, "transformers LLaMA", elementwise=True))
    return cases


def _sinusoidal_cases(sizes: list[tuple[int, int]]) -> list[Case]:
    cases = []
    for length, dim in sizes:

        def setup(device: torch.device, length=length, dim=dim):
            from transformers.models.distilbert.modeling_distilbert import _create_sinusoidal_embeddings

            def ref():
                return _create_sinusoidal_embeddings(length, dim, torch.empty(length, dim)).to(device)

            return (lambda: posviz.sinusoidal_encoding(length, dim, device=device)), ref, length * dim

        cases.append(Case("sinusoidal_encoding", f"{length}x{dim}", setup, "transformers DistilBERT", elementwise=True))
    return cases


def _alibi_cases(sizes: list[tuple[int, int]]) -> list[Case]:
    cases = []
    for heads, length in sizes:

        def setup(device: torch.device, heads=heads, length=length):
            from x_transformers.x_transformers import AlibiPositionalBias

            mod = AlibiPositionalBias(heads=heads, total_heads=heads).to(device)

            def ref():
                mod.bias = None  # time the computation, not its cache
                return mod(length, length)

            return (lambda: posviz.alibi_bias(heads, length, device=device)), ref, heads * length * length

        cases.append(Case("alibi_bias", f"{heads}x{length}x{length}", setup, "x-transformers", elementwise=True))
    return cases


def _t5_cases(lengths: list[int]) -> list[Case]:
    cases = []
    for length in lengths:

        def setup(device: torch.device, length=length):
            from transformers.models.t5.modeling_t5 import T5Attention

            rel = -posviz.relative_positions(length, device=device)  # key - query, T5's sign
            return (
                (lambda: posviz.t5_relative_bucket(rel)),
                (lambda: T5Attention._relative_position_bucket(rel)),
                length * length,
            )

        cases.append(Case("t5_relative_bucket", f"{length}x{length}", setup, "transformers T5", elementwise=True))
    return cases


def _relative_cases(lengths: list[int]) -> list[Case]:
    cases = []
    for length in lengths:

        def setup(device: torch.device, length=length):
            return (lambda: posviz.relative_positions(length, max_distance=16, device=device)), None, length * length

        cases.append(Case("relative_positions", f"{length}x{length}", setup, "", elementwise=True))
    return cases


def _attention_cases(shapes: list[tuple[int, int, int, int]]) -> list[Case]:
    cases = []
    for shape in shapes:

        def setup(device: torch.device, shape=shape):
            from transformers.models.llama.modeling_llama import eager_attention_forward

            q, k, v = (torch.randn(shape, device=device) for _ in range(3))
            module = torch.nn.Module()
            module.num_key_value_groups = 1
            module.eval()
            scale = 1.0 / math.sqrt(shape[-1])
            return (
                (lambda: posviz.attention(q, k, v)),
                (lambda: eager_attention_forward(module, q, k, v, None, scale)),
                shape[0] * shape[1] * shape[2] * shape[2],
            )

        cases.append(Case("attention (output + weights)", "x".join(map(str, shape)), setup, "transformers eager"))
    return cases


def all_cases(quick: bool) -> list[Case]:
    if quick:
        return (
            _rope_cases([(1, 8, 512, 64)])
            + _sinusoidal_cases([(512, 768)])
            + _alibi_cases([(8, 512)])
            + _t5_cases([512])
            + _relative_cases([512])
            + _attention_cases([(1, 8, 512, 64)])
        )
    return (
        _rope_cases([(1, 8, 512, 64), (4, 16, 2048, 64), (8, 32, 4096, 128)])
        + _sinusoidal_cases([(512, 768), (2048, 1024)])
        + _alibi_cases([(8, 512), (16, 2048), (32, 2048)])
        + _t5_cases([512, 2048, 4096])
        + _relative_cases([512, 2048, 4096])
        + _attention_cases([(1, 8, 512, 64), (1, 8, 2048, 64), (2, 16, 2048, 128)])
    )
