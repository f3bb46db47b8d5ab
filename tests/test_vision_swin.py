"""posviz.vision.swin: Swin's relative position index and bias, and the clipped index for larger grids.

Three ways: against ``transformers``' Swin (``SwinRelativePositionBias``'s ``relative_position_index``
and forward, and the ``SwinAttention`` a ``SwinConfig`` builds) on random windows; against
the paper's formula written out; and against the defining property (the index is a function of the
2-D offset alone, one table row per offset).
"""

from __future__ import annotations

import random

import pytest
import torch

from posviz import SwinRelativeBias, patch_positions, relative_position_index_2d, swin_relative_position_index

transformers = pytest.importorskip("transformers", reason="the reference implementations come from transformers")
from transformers import SwinConfig  # noqa: E402
from transformers.models.swin.modeling_swin import SwinAttention, SwinRelativePositionBias  # noqa: E402

_RNG = random.Random(7)
WINDOWS = [(_RNG.randint(1, 9), _RNG.randint(1, 9)) for _ in range(10)]


@pytest.mark.parametrize("mh,mw", WINDOWS)
def test_index_equals_transformers_swin(mh, mw):
    ref = SwinRelativePositionBias(2, (mh, mw)).relative_position_index.view(mh * mw, mh * mw)
    ours = swin_relative_position_index((mh, mw))
    assert ours.dtype == torch.long and torch.equal(ours, ref)
    if mh == mw:
        assert torch.equal(swin_relative_position_index(mh), ref)


@pytest.mark.parametrize("window", [1, 2, 4, 7])
def test_index_equals_the_attention_layer_of_a_swin_config(window):
    config = SwinConfig(embed_dim=8, depths=[1], num_heads=[2], window_size=window)
    attention = SwinAttention(config, 8, 2, window)
    ref = attention.relative_position_bias.relative_position_index.view(window**2, window**2)
    assert torch.equal(swin_relative_position_index(window), ref)


@pytest.mark.parametrize("mh,mw", WINDOWS[:5])
def test_bias_equals_transformers_forward(mh, mw):
    heads = 3
    ref_module = SwinRelativePositionBias(heads, (mh, mw))
    ours = SwinRelativeBias(heads, (mh, mw), generator=torch.Generator().manual_seed(mh * mw))
    with torch.no_grad():
        ref_module.relative_position_bias_table.copy_(ours.table)
    bias = ours()
    assert bias.shape == (heads, mh * mw, mh * mw)
    assert torch.equal(bias, ref_module()[0])


def test_index_formula_by_hand():
    mh, mw = 3, 4
    pos = patch_positions(mh, mw)
    idx = swin_relative_position_index((mh, mw))
    for i in range(mh * mw):
        for j in range(mh * mw):
            dr, dc = (pos[i] - pos[j]).tolist()  # query minus key
            assert idx[i, j] == (dr + mh - 1) * (2 * mw - 1) + dc + mw - 1
    assert idx[0, 0] == (mh - 1) * (2 * mw - 1) + mw - 1  # the centre row


@pytest.mark.parametrize("mh,mw", [(3, 3), (2, 5), (5, 1)])
def test_index_is_one_row_per_offset(mh, mw):
    pos = patch_positions(mh, mw)
    idx = swin_relative_position_index((mh, mw))
    seen: dict[tuple[int, int], int] = {}
    for i in range(mh * mw):
        for j in range(mh * mw):
            offset = tuple((pos[i] - pos[j]).tolist())
            assert seen.setdefault(offset, int(idx[i, j])) == int(idx[i, j])  # a function of the offset
    assert len(set(seen.values())) == len(seen) == (2 * mh - 1) * (2 * mw - 1)  # and one row each
    assert sorted(seen.values()) == list(range((2 * mh - 1) * (2 * mw - 1)))


def test_grid_index_without_clipping_is_the_window_index():
    assert torch.equal(relative_position_index_2d(4, 6), swin_relative_position_index((4, 6)))


@pytest.mark.parametrize("h,w,k", [(16, 16, 7), (12, 9, (3, 2)), (5, 5, 0)])
def test_grid_index_clips_offsets(h, w, k):
    kh, kw = (k, k) if isinstance(k, int) else k
    idx = relative_position_index_2d(h, w, max_offset=k)
    pos = patch_positions(h, w)
    delta = pos[:, None] - pos[None]
    dr, dc = delta[..., 0].clamp(-kh, kh), delta[..., 1].clamp(-kw, kw)
    assert torch.equal(idx, (dr + kh) * (2 * kw + 1) + dc + kw)
    assert int(idx.max()) == (2 * kh + 1) * (2 * kw + 1) - 1 and int(idx.min()) == 0


def test_bias_on_a_larger_grid_reuses_the_table():
    bias = SwinRelativeBias(2, 8, generator=torch.Generator().manual_seed(0))
    small, big = bias(), bias((16, 16))
    assert big.shape == (2, 256, 256)
    sub = patch_positions(16, 16)
    inside = ((sub[:, 0] >= 4) & (sub[:, 0] < 12) & (sub[:, 1] >= 5) & (sub[:, 1] < 13)).nonzero()[:, 0]
    assert torch.equal(big[:, inside][:, :, inside], small)  # any 8 x 8 block sees the window's bias
    far = bias.table[swin_relative_position_index(8)[63, 0]]  # offset (7, 7): the clipped corner row
    assert torch.equal(big[:, 255, 0], far)  # offset (15, 15) reads it too
    assert torch.equal(bias(8), small)


def test_bias_inits_and_autograd():
    zeros = SwinRelativeBias(4, 3, init="zeros")
    assert zeros.table.shape == (25, 4) and float(zeros.table.detach().abs().max()) == 0.0
    a = SwinRelativeBias(4, 7, generator=torch.Generator().manual_seed(1))
    b = SwinRelativeBias(4, 7, generator=torch.Generator().manual_seed(1))
    assert torch.equal(a.table, b.table) and 0.015 < float(a.table.detach().std()) < 0.025
    a((9, 9)).sum().backward()
    assert a.table.grad is not None and float(a.table.grad.abs().sum()) > 0
    assert "window=(7, 7)" in repr(a)


def test_devices(device):
    assert swin_relative_position_index(3, device=device).device == device
    assert relative_position_index_2d(3, 3, max_offset=1, device=device).device == device
    bias = SwinRelativeBias(2, 3, device=device, dtype=torch.float64)
    assert bias().device == device and bias((5, 5)).dtype == torch.float64


@pytest.mark.parametrize(
    "call,error,match",
    [
        (lambda: swin_relative_position_index(0), ValueError, "window"),
        (lambda: swin_relative_position_index((2, 0)), ValueError, r"window\[1\]"),
        (lambda: swin_relative_position_index(2.5), TypeError, "window"),
        (lambda: swin_relative_position_index((1, 2, 3)), ValueError, "pair"),
        (lambda: relative_position_index_2d(0, 3), ValueError, "height"),
        (lambda: relative_position_index_2d(3, 3, max_offset=-1), ValueError, "max_offset"),
        (lambda: SwinRelativeBias(0, 3), ValueError, "n_heads"),
        (lambda: SwinRelativeBias(2, 3, init="normal"), ValueError, "init"),
        (lambda: SwinRelativeBias(2, 3)(0), ValueError, "grid"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
