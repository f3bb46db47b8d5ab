"""posviz.vision.rope2d: axial 2-D RoPE (Qwen2-VL, Llama 4) and RoPE-Mixed.

Three ways: against ``transformers``' own vision rotary code on random sizes (Qwen2-VL's
``Qwen2VLVisionRotaryEmbedding`` + ``apply_rotary_pos_emb_vision`` on the positions of
``get_vision_position_ids``; Llama 4's ``Llama4VisionRotaryEmbedding`` + ``vision_apply_rotary_emb``);
against the papers' formulas written out pair by pair here (and RoPE-Mixed's initialisation as the
official naver-ai/rope-vit ``init_2d_freqs`` defines it); and against the defining property, scores
that depend on the 2-D offset only.
"""

from __future__ import annotations

import math
import random

import pytest
import torch

from posviz import MixedRoPE, apply_mixed_rope, axial_rope_2d, mixed_rope_frequencies, patch_positions

transformers = pytest.importorskip("transformers", reason="the reference implementations come from transformers")
from transformers.models.llama4.configuration_llama4 import Llama4VisionConfig  # noqa: E402
from transformers.models.llama4.modeling_llama4 import (  # noqa: E402
    Llama4VisionRotaryEmbedding,
    vision_apply_rotary_emb,
)
from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLVisionConfig  # noqa: E402
from transformers.models.qwen2_vl.modeling_qwen2_vl import (  # noqa: E402
    Qwen2VLVisionRotaryEmbedding,
    apply_rotary_pos_emb_vision,
)
from transformers.vision_utils import get_vision_position_ids  # noqa: E402


def _cases(n: int, seed: int) -> list[tuple[int, ...]]:
    rng = random.Random(seed)
    return [(rng.randint(1, 3), 4 * rng.randint(1, 8), rng.randint(1, 4), rng.randint(1, 4), rng.choice([1, 2]),
             rng.choice([10000.0, 100.0, 10.0])) for _ in range(n)]


# --- axial: Qwen2-VL ------------------------------------------------------------------------------


@pytest.mark.parametrize("heads,dim,bh,bw,merge,base", _cases(12, 1))
def test_axial_equals_qwen2_vl_vision_tower(heads, dim, bh, bw, merge, base):
    grid = torch.tensor([[random.Random(dim).randint(1, 2), bh * merge, bw * merge]])  # (t, h, w), h, w multiples
    positions = get_vision_position_ids(grid, merge)  # [T, 2] (row, col), merge-block order, repeated over t
    config = Qwen2VLVisionConfig(embed_dim=heads * dim, num_heads=heads,
                                 rope_parameters={"rope_type": "axial", "rope_theta": base})
    rotary = Qwen2VLVisionRotaryEmbedding(config)
    seq = positions.shape[0]
    gen = torch.Generator().manual_seed(dim + seq)
    q, k = torch.randn(seq, heads, dim, generator=gen), torch.randn(seq, heads, dim, generator=gen)
    cos, sin = rotary(q, positions)
    ref_q, ref_k = apply_rotary_pos_emb_vision(q, k, cos, sin)
    ours_q = axial_rope_2d(q.transpose(0, 1), positions, base).transpose(0, 1)  # [heads, T, dim]
    ours_k = axial_rope_2d(k.transpose(0, 1), positions, base).transpose(0, 1)
    torch.testing.assert_close(ours_q, ref_q, rtol=0, atol=2e-5)
    torch.testing.assert_close(ours_k, ref_k, rtol=0, atol=2e-5)


# --- axial: Llama 4 -------------------------------------------------------------------------------


@pytest.mark.parametrize("heads,dim,side,_w,_m,base", _cases(10, 2))
def test_axial_llama4_equals_llama4_vision_rotary(heads, dim, side, _w, _m, base):
    side += 1
    config = Llama4VisionConfig(hidden_size=heads * dim, num_attention_heads=heads, image_size=side * 2, patch_size=2,
                                rope_parameters={"rope_type": "default", "rope_theta": base})
    freqs_ci = Llama4VisionRotaryEmbedding(config).freqs_ci  # patches, then the class token last
    seq = side * side + 1
    gen = torch.Generator().manual_seed(seq * dim)
    q, k = torch.randn(2, seq, heads, dim, generator=gen), torch.randn(2, seq, heads, dim, generator=gen)
    ref_q, ref_k = vision_apply_rotary_emb(q, k, freqs_ci)
    positions = torch.cat((patch_positions(side, side) + 1, torch.zeros(1, 2, dtype=torch.long)))  # 1-based; cls (0, 0)
    ours_q = axial_rope_2d(q.transpose(1, 2), positions, base, layout="llama4").transpose(1, 2)
    ours_k = axial_rope_2d(k.transpose(1, 2), positions, base, layout="llama4").transpose(1, 2)
    torch.testing.assert_close(ours_q, ref_q, rtol=0, atol=2e-5)
    torch.testing.assert_close(ours_k, ref_k, rtol=0, atol=2e-5)


# --- the formula, pair by pair --------------------------------------------------------------------


def rotate_by_hand(x: torch.Tensor, angle: torch.Tensor, pairs: list[tuple[int, int]]) -> torch.Tensor:
    out = x.clone()
    for i, (a, b) in enumerate(pairs):
        c, s = torch.cos(angle[..., i]), torch.sin(angle[..., i])
        out[..., a], out[..., b] = x[..., a] * c - x[..., b] * s, x[..., a] * s + x[..., b] * c
    return out


@pytest.mark.parametrize("layout", ["qwen2_vl", "llama4"])
def test_axial_formula_pair_by_pair(layout):
    dim, base = 12, 50.0
    pos = torch.tensor([[0, 0], [2, 5], [3, 1], [7, 7]])
    x = torch.randn(4, dim, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    theta = base ** (-4 * torch.arange(dim // 4, dtype=torch.float64) / dim)
    row, col = pos[:, 0:1].double() * theta, pos[:, 1:2].double() * theta
    if layout == "qwen2_vl":  # half-split pairs, rows first
        pairs, angle = [(i, i + dim // 2) for i in range(dim // 2)], torch.cat((row, col), -1)
    else:  # interleaved pairs, columns first
        pairs, angle = [(2 * i, 2 * i + 1) for i in range(dim // 2)], torch.cat((col, row), -1)
    torch.testing.assert_close(axial_rope_2d(x, pos, base, layout=layout), rotate_by_hand(x, angle, pairs))


def _offset_groups(pos: torch.Tensor) -> dict[tuple[int, int], list[tuple[int, int]]]:
    groups: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for a in range(pos.shape[0]):
        for b in range(pos.shape[0]):
            groups.setdefault(tuple((pos[a] - pos[b]).tolist()), []).append((a, b))
    return groups


def _assert_offset_only(scores: torch.Tensor, pos: torch.Tensor) -> None:
    spread = []
    for members in _offset_groups(pos).values():
        values = torch.stack([scores[..., a, b] for a, b in members])
        assert float((values.max(0).values - values.min(0).values).abs().max()) < 1e-9
        spread.append(values[0])
    assert float(torch.stack(spread).std(0).min()) > 1e-3  # different offsets do score differently


@pytest.mark.parametrize("layout", ["qwen2_vl", "llama4"])
def test_axial_scores_depend_on_the_offset_only(layout):
    pos = patch_positions(4, 5)
    gen = torch.Generator().manual_seed(11)
    q, k = torch.randn(2, 1, 16, dtype=torch.float64, generator=gen), torch.randn(2, 1, 16, dtype=torch.float64,
                                                                                  generator=gen)
    rq = axial_rope_2d(q.expand(2, 20, 16), pos, 100.0, layout=layout)
    rk = axial_rope_2d(k.expand(2, 20, 16), pos, 100.0, layout=layout)
    _assert_offset_only(rq @ rk.transpose(-1, -2), pos)


def test_axial_rows_and_columns_are_different_axes():
    x = torch.randn(1, 3, 8, dtype=torch.float64)
    pos = torch.tensor([[0, 1], [2, 0], [1, 3]])
    for layout in ("qwen2_vl", "llama4"):
        assert not torch.allclose(axial_rope_2d(x, pos, layout=layout), axial_rope_2d(x, pos.flip(-1), layout=layout))


def test_axial_dtype_device_and_batched_positions(device):
    x = torch.randn(2, 3, 6, 8, device=device, dtype=torch.bfloat16)
    pos = patch_positions(2, 3, device=device)
    out = axial_rope_2d(x, pos)
    assert out.dtype == torch.bfloat16 and out.device == device
    batched = axial_rope_2d(x, pos[None, None].expand(2, 1, 6, 2))  # [batch, 1, T, 2]
    assert torch.equal(out, batched)


@pytest.mark.parametrize(
    "x,pos,kwargs,error,match",
    [
        (torch.randn(3, 6), patch_positions(1, 3), {}, ValueError, "multiple of 4"),
        (torch.randn(3), patch_positions(1, 3), {}, ValueError, "x must have shape"),
        (torch.arange(24).reshape(3, 8), patch_positions(1, 3), {}, TypeError, "floating"),
        (torch.randn(3, 8), patch_positions(1, 4), {}, ValueError, "T=3"),
        (torch.randn(3, 8), torch.zeros(3), {}, ValueError, "positions must have shape"),
        (torch.randn(3, 8), torch.zeros(3, 3), {}, ValueError, "positions must have shape"),
        (torch.randn(3, 8), torch.zeros(3, 2, dtype=torch.bool), {}, TypeError, "real numbers"),
        (torch.randn(3, 8), torch.full((3, 2), float("nan")), {}, ValueError, "finite"),
        (torch.randn(2, 3, 8), torch.zeros(4, 3, 2), {}, ValueError, "broadcast"),
        (torch.randn(3, 8), [[0, 0]] * 3, {}, TypeError, "torch.Tensor"),
        (torch.randn(3, 8), patch_positions(1, 3), {"layout": "half"}, ValueError, "layout"),
        (torch.randn(3, 8), patch_positions(1, 3), {"base": 0.0}, ValueError, "base"),
    ],
)
def test_axial_bad_input(x, pos, kwargs, error, match):
    with pytest.raises(error, match=match):
        axial_rope_2d(x, pos, **kwargs)


# --- RoPE-Mixed -----------------------------------------------------------------------------------


def official_init(dim: int, heads: int, base: float) -> torch.Tensor:
    """naver-ai/rope-vit init_2d_freqs, written out: [2, heads, dim/2] (x first, then y)."""
    mag = 1 / (base ** (torch.arange(0, dim, 4)[: dim // 4].float() / dim))
    xs, ys = [], []
    for _ in range(heads):
        a = torch.rand(1) * 2 * torch.pi
        xs.append(torch.cat([mag * torch.cos(a), mag * torch.cos(torch.pi / 2 + a)]))
        ys.append(torch.cat([mag * torch.sin(a), mag * torch.sin(torch.pi / 2 + a)]))
    return torch.stack([torch.stack(xs), torch.stack(ys)])


@pytest.mark.parametrize("heads,dim,seed", [(1, 4, 0), (3, 16, 1), (6, 64, 2), (4, 8, 3)])
def test_mixed_init_matches_the_official_formula(heads, dim, seed):
    torch.manual_seed(seed)
    ref = official_init(dim, heads, 10.0).permute(1, 2, 0)
    torch.manual_seed(seed)
    ours = mixed_rope_frequencies(heads, dim)
    assert ours.shape == (heads, dim // 2, 2) and ours.dtype == torch.float32
    torch.testing.assert_close(ours, ref, rtol=0, atol=1e-6)
    with_generator = mixed_rope_frequencies(heads, dim, generator=torch.Generator().manual_seed(seed))
    assert torch.equal(with_generator, ours)
    # magnitudes from the ladder, two orthogonal directions per head
    exact = mixed_rope_frequencies(heads, dim, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    mag = 10.0 ** (-4 * torch.arange(dim // 4, dtype=torch.float64) / dim)
    torch.testing.assert_close(exact.norm(dim=-1), torch.cat((mag, mag)).expand(heads, -1))
    first, second = exact[:, : dim // 4], exact[:, dim // 4:]
    torch.testing.assert_close((first * second).sum(-1), torch.zeros(heads, dim // 4, dtype=torch.float64))


def official_apply(x: torch.Tensor, freqs: torch.Tensor, width: int, height: int) -> torch.Tensor:
    """RoPE-Mixed's compute_mixed_cis + apply_rotary_emb written out: x [B, H, N, d], freqs [2, H, d/2]."""
    t = torch.arange(width * height, dtype=torch.float32)
    tx, ty = t % width, torch.div(t, width, rounding_mode="floor")  # column, row
    angle = tx[None, :, None] * freqs[0][:, None, :] + ty[None, :, None] * freqs[1][:, None, :]  # [H, N, d/2]
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xc * torch.polar(torch.ones_like(angle), angle)).flatten(3)


@pytest.mark.parametrize("heads,dim,h,w", [(2, 8, 3, 4), (4, 16, 5, 5), (1, 4, 2, 7)])
def test_mixed_equals_the_official_rotation(heads, dim, h, w):
    gen = torch.Generator().manual_seed(h * w)
    freqs = torch.randn(2, heads, dim // 2, generator=gen)  # learned values, any
    x = torch.randn(2, heads, h * w, dim, generator=gen)
    ours = apply_mixed_rope(x, patch_positions(h, w), freqs.permute(1, 2, 0))
    torch.testing.assert_close(ours, official_apply(x, freqs, w, h), rtol=0, atol=2e-5)


def test_mixed_axis_aligned_is_axial_llama4_layout():
    heads, dim, base = 3, 16, 10.0
    freqs = mixed_rope_frequencies(heads, dim, base, rotate=False, dtype=torch.float64)
    x = torch.randn(2, heads, 12, dim, dtype=torch.float64)
    pos = patch_positions(3, 4)
    assert torch.equal(apply_mixed_rope(x, pos, freqs), axial_rope_2d(x, pos, base, layout="llama4"))


def test_mixed_scores_depend_on_the_offset_only():
    pos = patch_positions(4, 4)
    freqs = mixed_rope_frequencies(2, 8, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    gen = torch.Generator().manual_seed(6)
    q = torch.randn(2, 1, 8, dtype=torch.float64, generator=gen).expand(2, 16, 8)
    k = torch.randn(2, 1, 8, dtype=torch.float64, generator=gen).expand(2, 16, 8)
    rq, rk = apply_mixed_rope(q, pos, freqs), apply_mixed_rope(k, pos, freqs)
    _assert_offset_only(rq @ rk.transpose(-1, -2), pos)


def test_mixed_rotated_directions_follow_diagonals():
    # a head turned by 45 degrees: pair 0's angle is m_0 (c + r) / sqrt 2, constant along anti-diagonals
    freqs = torch.tensor([[[math.cos(math.pi / 4), math.sin(math.pi / 4)], [0.0, 0.0]]], dtype=torch.float64)
    x = torch.tensor([[[1.0, 0.0, 1.0, 0.0]]], dtype=torch.float64).expand(1, 3, 4)
    pos = torch.tensor([[0, 2], [2, 0], [1, 1]])
    out = apply_mixed_rope(x, pos, freqs)
    assert torch.allclose(out[0, 0], out[0, 1]) and torch.allclose(out[0, 1], out[0, 2])
    torch.testing.assert_close(out[0, 0, :2], torch.tensor([math.cos(math.sqrt(2)), math.sin(math.sqrt(2))],
                                                           dtype=torch.float64))


def test_mixed_module_learns_its_frequencies():
    torch.manual_seed(0)
    module = MixedRoPE(2, 8)
    assert isinstance(module.frequencies, torch.nn.Parameter) and module.frequencies.shape == (2, 4, 2)
    torch.manual_seed(0)
    assert torch.equal(module.frequencies.detach(), mixed_rope_frequencies(2, 8))
    x = torch.randn(1, 2, 6, 8)
    module(x, patch_positions(2, 3)).square().sum().backward()
    assert module.frequencies.grad is not None and float(module.frequencies.grad.abs().sum()) > 0
    assert "n_heads=2" in repr(module)


def test_mixed_batched_positions_are_per_example():
    freqs = mixed_rope_frequencies(3, 8, generator=torch.Generator().manual_seed(2))
    x = torch.randn(2, 3, 6, 8)
    pos = torch.stack((patch_positions(2, 3), patch_positions(3, 2)))  # [batch, T, 2]: two grids
    out = apply_mixed_rope(x, pos, freqs)
    for b in range(2):
        assert torch.equal(out[b], apply_mixed_rope(x[b], pos[b], freqs))
    with pytest.raises(ValueError, match="broadcast"):
        apply_mixed_rope(x, torch.zeros(4, 6, 2), freqs)


def test_mixed_single_set_of_frequencies_and_device(device):
    freqs = mixed_rope_frequencies(1, 8, device=device)[0]  # [d/2, 2], no heads
    x = torch.randn(5, 6, 8, device=device)
    out = apply_mixed_rope(x, patch_positions(2, 3, device=device), freqs)
    assert out.shape == x.shape and out.device == device


@pytest.mark.parametrize(
    "x,freqs,error,match",
    [
        (torch.randn(2, 6, 8), torch.zeros(2, 3, 2), ValueError, "dim/2 = 4"),
        (torch.randn(2, 6, 8), torch.zeros(3, 4, 2), ValueError, "n_heads = 3"),
        (torch.randn(2, 6, 8), torch.zeros(2, 4, 3), ValueError, "frequencies must have shape"),
        (torch.randn(2, 6, 8), torch.full((2, 4, 2), float("inf")), ValueError, "finite"),
        (torch.randn(2, 6, 8), torch.zeros(4, 2, dtype=torch.long), TypeError, "floating"),
        (torch.randn(2, 6, 7), torch.zeros(2, 4, 2), ValueError, "multiple of 2"),
    ],
)
def test_mixed_bad_input(x, freqs, error, match):
    with pytest.raises(error, match=match):
        apply_mixed_rope(x, patch_positions(2, 3), freqs)


@pytest.mark.parametrize(
    "args,kwargs,error,match",
    [
        ((0, 8), {}, ValueError, "n_heads"),
        ((2, 6), {}, ValueError, "multiple of 4"),
        ((2, 8, -1.0), {}, ValueError, "base"),
        ((2, 8), {"rotate": 1}, TypeError, "rotate"),
        ((2, 8), {"generator": 3}, TypeError, "generator"),
    ],
)
def test_mixed_frequencies_bad_input(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        mixed_rope_frequencies(*args, **kwargs)
