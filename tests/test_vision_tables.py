"""posviz.vision.tables: patch positions, MAE's 2-D sin-cos table, ViT's resized table.

Each is checked three ways: against ``transformers``' own code on random sizes (ViTMAE's
``build_2d_sinusoidal_position_embedding`` and its model initialisation; ViT's
``interpolate_pos_encoding``), against the paper's formula written out independently here (MAE's
original NumPy ``get_2d_sincos_pos_embed``; Keys' cubic convolution for bicubic resizing), and
against a defining property (sin-cos similarity depends on the offset only).
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import torch

from posviz import patch_positions, resize_position_table, sinusoidal_encoding_2d
from posviz._validate import round_once

transformers = pytest.importorskip("transformers", reason="the reference implementations come from transformers")
from transformers.models.vit.modeling_vit import ViTConfig, ViTEmbeddings  # noqa: E402
from transformers.models.vit_mae.modeling_vit_mae import (  # noqa: E402
    ViTMAEConfig,
    ViTMAEEmbeddings,
    build_2d_sinusoidal_position_embedding,
)

_RNG = random.Random(23)
SIZES = [(_RNG.randint(1, 9), _RNG.randint(1, 9), 4 * _RNG.randint(1, 12)) for _ in range(12)]


# --- patch positions ------------------------------------------------------------------------------


def test_patch_positions_row_major():
    pos = patch_positions(3, 5)
    assert pos.dtype == torch.long and pos.shape == (15, 2)
    for t in range(15):
        assert pos[t].tolist() == [t // 5, t % 5]  # (row, col), row-major


def test_patch_positions_device(device):
    assert patch_positions(2, 2, device=device).device == device


@pytest.mark.parametrize("bad", [0, -1])
def test_patch_positions_bad(bad):
    with pytest.raises(ValueError, match="height"):
        patch_positions(bad, 2)
    with pytest.raises(TypeError, match="width"):
        patch_positions(2, 1.5)


# --- 2-D sin-cos ----------------------------------------------------------------------------------


def mae_original(height: int, width: int, dim: int) -> np.ndarray:
    """MAE's get_2d_sincos_pos_embed (facebookresearch/mae, util/pos_embed.py), extended to h != w."""

    def one_d(d: int, pos: np.ndarray) -> np.ndarray:
        omega = np.arange(d // 2, dtype=np.float64) / (d / 2.0)
        omega = 1.0 / 10000**omega
        out = np.einsum("m,d->md", pos.reshape(-1), omega)
        return np.concatenate([np.sin(out), np.cos(out)], axis=1)

    grid = np.meshgrid(np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64))  # w goes first
    grid = np.stack(grid, axis=0).reshape(2, 1, height, width)
    emb_h = one_d(dim // 2, grid[0])  # the original's "h" half holds grid[0], the column
    emb_w = one_d(dim // 2, grid[1])
    return np.concatenate([emb_h, emb_w], axis=1)


@pytest.mark.parametrize("height,width,dim", SIZES)
@pytest.mark.parametrize("cls_token", [False, True])
def test_sincos_rows_first_equals_transformers_function(height, width, dim, cls_token):
    ref = build_2d_sinusoidal_position_embedding(height, width, dim, 10000.0, cls_token=cls_token, dtype=torch.float64)
    ours = sinusoidal_encoding_2d(height, width, dim, cls_token=cls_token, layout="rows_first", dtype=torch.float64)
    assert ours.shape == ref.shape == (int(cls_token) + height * width, dim)
    torch.testing.assert_close(ours, ref, rtol=0, atol=1e-12)
    ref32 = build_2d_sinusoidal_position_embedding(height, width, dim, 100.0, cls_token=cls_token)
    ours32 = sinusoidal_encoding_2d(height, width, dim, 100.0, cls_token=cls_token, layout="rows_first")
    assert ours32.dtype == torch.float32
    torch.testing.assert_close(ours32, ref32, rtol=0, atol=1e-7)


@pytest.mark.parametrize("height,width,dim", SIZES)
def test_sincos_mae_is_the_swapped_halves_and_the_original_code(height, width, dim):
    ref = build_2d_sinusoidal_position_embedding(height, width, dim, cls_token=True, dtype=torch.float64)
    swapped = torch.cat((ref[:, dim // 2:], ref[:, : dim // 2]), dim=-1)  # what ViTMAEModel stores
    ours = sinusoidal_encoding_2d(height, width, dim, cls_token=True, dtype=torch.float64)
    torch.testing.assert_close(ours, swapped, rtol=0, atol=1e-12)
    original = torch.from_numpy(mae_original(height, width, dim))
    torch.testing.assert_close(ours[1:], original, rtol=0, atol=1e-12)
    assert torch.equal(ours[0], torch.zeros(dim, dtype=torch.float64))  # the class row


@pytest.mark.parametrize("side,dim", [(2, 8), (3, 16), (5, 12), (4, 32)])
def test_sincos_mae_equals_vitmae_model_initialisation(side, dim):
    config = ViTMAEConfig(hidden_size=dim, num_attention_heads=1, intermediate_size=4, image_size=side * 2,
                          patch_size=2, num_channels=1)
    emb = ViTMAEEmbeddings(config)
    emb.initialize_weights()
    ours = sinusoidal_encoding_2d(side, side, dim, cls_token=True)
    torch.testing.assert_close(ours, emb.position_embeddings[0].detach(), rtol=0, atol=1e-7)


def test_sincos_layouts_put_the_column_where_they_say():
    dim = 8
    t = sinusoidal_encoding_2d(2, 3, dim, dtype=torch.float64)
    # patch (0, 2): the mae layout's first quarter is sin(2 * omega), sin of the column
    omega = torch.tensor([1.0, 10000.0 ** -0.5], dtype=torch.float64)
    torch.testing.assert_close(t[2, :2], torch.sin(2 * omega))
    torch.testing.assert_close(t[2, 4:6], torch.zeros(2, dtype=torch.float64))  # sin(0 * omega) of the row
    rows = sinusoidal_encoding_2d(2, 3, dim, layout="rows_first", dtype=torch.float64)
    torch.testing.assert_close(rows[2, 4:6], torch.sin(2 * omega))


@pytest.mark.parametrize("layout", ["mae", "rows_first"])
def test_sincos_similarity_depends_on_the_offset_only(layout):
    h, w, dim, base = 5, 7, 24, 100.0
    t = sinusoidal_encoding_2d(h, w, dim, base, layout=layout, dtype=torch.float64)
    pos = patch_positions(h, w).double()
    omega = base ** (-torch.arange(dim // 4, dtype=torch.float64) / (dim // 4))
    delta = pos[:, None, :] - pos[None, :, :]
    expected = torch.cos(delta[..., 0, None] * omega).sum(-1) + torch.cos(delta[..., 1, None] * omega).sum(-1)
    torch.testing.assert_close(t @ t.T, expected)


def test_sincos_extends_to_a_larger_grid_unchanged():
    small = sinusoidal_encoding_2d(4, 4, 16, dtype=torch.float64).reshape(4, 4, 16)
    big = sinusoidal_encoding_2d(8, 8, 16, dtype=torch.float64).reshape(8, 8, 16)
    assert torch.equal(big[:4, :4], small)


def test_sincos_device_and_dtype(device):
    t = sinusoidal_encoding_2d(3, 3, 8, device=device, dtype=torch.bfloat16)
    assert t.device == device and t.dtype == torch.bfloat16
    exact = sinusoidal_encoding_2d(3, 3, 8, device=device, dtype=torch.float64)
    assert torch.equal(t, round_once(exact, torch.bfloat16))  # rounded once from float64


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"dim": 6}, ValueError, "multiple of 4"),
        ({"dim": 0}, ValueError, "dim"),
        ({"height": 0}, ValueError, "height"),
        ({"width": 2.0}, TypeError, "width"),
        ({"base": -1.0}, ValueError, "base"),
        ({"layout": "timm"}, ValueError, "layout"),
        ({"cls_token": 1}, TypeError, "cls_token"),
    ],
)
def test_sincos_bad_input(kwargs, error, match):
    args = {"height": 2, "width": 3, "dim": 8} | kwargs
    with pytest.raises(error, match=match):
        sinusoidal_encoding_2d(**args)


# --- resizing a learned table ---------------------------------------------------------------------


def vit_resize(table: torch.Tensor, old: int, new: tuple[int, int]) -> torch.Tensor:
    """transformers' ViTEmbeddings.interpolate_pos_encoding on ``table`` [1 + old^2, dim]."""
    dim, patch = table.shape[-1], 2
    config = ViTConfig(hidden_size=dim, num_attention_heads=1, intermediate_size=4, image_size=old * patch,
                       patch_size=patch, num_channels=1)
    emb = ViTEmbeddings(config)
    with torch.no_grad():
        emb.position_embeddings.copy_(table[None])
    embeddings = torch.zeros(1, 1 + new[0] * new[1], dim)
    with torch.no_grad():
        return emb.interpolate_pos_encoding(embeddings, new[0] * patch, new[1] * patch)[0]


RESIZES = [(random.Random(s).randint(1, 8), (random.Random(s + 1).randint(1, 12), random.Random(s + 2).randint(1, 12)),
            random.Random(s + 3).choice([4, 6, 16])) for s in range(0, 60, 5)]


@pytest.mark.parametrize("old,new,dim", RESIZES)
def test_resize_equals_vit_interpolate_pos_encoding(old, new, dim):
    gen = torch.Generator().manual_seed(old * 100 + new[0] * 10 + new[1])
    table = torch.randn(1 + old * old, dim, generator=gen)
    ref = vit_resize(table, old, new)
    ours = resize_position_table(table, new)
    assert ours.shape == (1 + new[0] * new[1], dim)
    assert torch.equal(ours, ref)
    assert torch.equal(ours[0], table[0])  # the class row is kept
    assert torch.equal(resize_position_table(table[None], new)[0], ours)  # ViT's [1, 1 + N, dim] parameter


def keys_cubic(t: float, a: float = -0.75) -> float:
    t = abs(t)
    if t <= 1:
        return (a + 2) * t**3 - (a + 3) * t**2 + 1
    if t < 2:
        return a * t**3 - 5 * a * t**2 + 8 * a * t - 4 * a
    return 0.0


def bicubic_by_hand(grid: torch.Tensor, new: tuple[int, int]) -> torch.Tensor:
    """Keys' cubic convolution, align_corners=False, indices clamped at the border (as PyTorch)."""
    h, w, dim = grid.shape
    out = torch.zeros(new[0], new[1], dim, dtype=torch.float64)
    for i in range(new[0]):
        u = (i + 0.5) * h / new[0] - 0.5
        for j in range(new[1]):
            v = (j + 0.5) * w / new[1] - 0.5
            acc = torch.zeros(dim, dtype=torch.float64)
            for di in range(-1, 3):
                for dj in range(-1, 3):
                    ri, cj = math.floor(u) + di, math.floor(v) + dj
                    weight = keys_cubic(u - ri) * keys_cubic(v - cj)
                    acc += weight * grid[min(max(ri, 0), h - 1), min(max(cj, 0), w - 1)]
            out[i, j] = acc
    return out.reshape(-1, dim)


@pytest.mark.parametrize("old,new", [(3, (5, 4)), (4, (2, 7)), (2, (6, 6))])
def test_resize_is_keys_cubic_convolution(old, new):
    gen = torch.Generator().manual_seed(7)
    table = torch.randn(2 + old * old, 5, generator=gen, dtype=torch.float64)
    ours = resize_position_table(table, new, cls_tokens=2)
    torch.testing.assert_close(ours[2:], bicubic_by_hand(table[2:].reshape(old, old, 5), new))
    assert torch.equal(ours[:2], table[:2])


def test_resize_same_grid_returns_the_table_and_keeps_autograd():
    table = torch.randn(1 + 9, 4, requires_grad=True)
    assert resize_position_table(table, 3) is table
    resize_position_table(table, (5, 6)).sum().backward()
    assert table.grad is not None and table.grad.shape == table.shape


def test_resize_rectangular_old_grid_and_other_modes():
    table = torch.arange(6.0).reshape(6, 1)  # a 2 x 3 grid, no class row
    out = resize_position_table(table, (4, 6), cls_tokens=0, grid=(2, 3), mode="nearest")
    assert out.reshape(4, 6).tolist()[0] == [0, 0, 1, 1, 2, 2]
    lin = resize_position_table(table, (2, 5), cls_tokens=0, grid=(2, 3), mode="bilinear", align_corners=True)
    torch.testing.assert_close(lin.reshape(2, 5)[0], torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0]))


def test_resize_device_and_dtype(device):
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        table = torch.randn(1 + 4, 3, device=device).to(dtype)
        out = resize_position_table(table, 3)
        assert out.device == device and out.dtype == dtype


@pytest.mark.parametrize(
    "table,new_grid,kwargs,error,match",
    [
        (torch.randn(1 + 8, 4), 3, {}, ValueError, "not a square"),
        (torch.randn(2, 4), 3, {"cls_tokens": 2}, ValueError, "fewer than cls_tokens"),
        (torch.randn(1 + 4, 4), 0, {}, ValueError, "new_grid"),
        (torch.randn(1 + 4, 4), (2, 0), {}, ValueError, r"new_grid\[1\]"),
        (torch.randn(1 + 4, 4), (2, 2, 2), {}, ValueError, "pair"),
        (torch.randn(1 + 4, 4), 2.5, {}, TypeError, "new_grid"),
        (torch.randn(2, 1 + 4, 4), 3, {}, ValueError, "table must have shape"),
        (torch.randn(5), 3, {}, ValueError, "table"),
        (torch.arange(5 * 4).reshape(5, 4), 3, {}, TypeError, "floating"),
        (torch.randn(1 + 6, 4), 3, {"grid": (2, 2)}, ValueError, "grid"),
        (torch.randn(1 + 4, 4), 3, {"mode": "bicubic-antialias"}, ValueError, "mode"),
        (torch.randn(1 + 4, 4), 3, {"cls_tokens": -1}, ValueError, "cls_tokens"),
    ],
)
def test_resize_bad_input(table, new_grid, kwargs, error, match):
    with pytest.raises(error, match=match):
        resize_position_table(table, new_grid, **kwargs)
