"""posviz.vision.mrope: M-RoPE's (time, height, width) ids and its sectioned rotation.

Three ways: against ``transformers`` on random mixed text/image/video sequences
(``Qwen2VLModel.get_rope_index`` and ``Qwen2_5_VLModel.get_rope_index`` with its fps-spaced time
axis, given fake ``input_ids`` / ``mm_token_type_ids`` / grids; ``Qwen2VLRotaryEmbedding`` with
``mrope_section`` and ``apply_rotary_pos_emb``); against the formula written out on the
chapter's example; and against the defining property, that a text token (three equal ids) gets
ordinary 1-D RoPE exactly.
"""

from __future__ import annotations

import random
import types

import pytest
import torch

from posviz import apply_mrope, apply_rope, mrope_position_ids

transformers = pytest.importorskip("transformers", reason="the reference implementations come from transformers")
from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VLModel  # noqa: E402
from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLTextConfig  # noqa: E402
from transformers.models.qwen2_vl.modeling_qwen2_vl import (  # noqa: E402
    Qwen2VLModel,
    Qwen2VLRotaryEmbedding,
    apply_rotary_pos_emb,
)


def random_sequence(rng: random.Random, merge: int, fps_spaced: bool) -> list:
    """Text, then vision segments each followed by text (the vision_end / next text tokens)."""
    segments: list = [rng.randint(1, 5)]
    for _ in range(rng.randint(1, 4)):
        grid = (rng.randint(1, 3), merge * rng.randint(1, 4), merge * rng.randint(1, 4))
        if rng.random() < 0.5:
            segments.append(("image", (1, grid[1], grid[2])))
        elif fps_spaced:
            segments.append(("video", grid, rng.choice([0.5, 1.0, 2.0 / 3.0, 0.25, 2.0])))
        else:
            segments.append(("video", grid))
        segments.append(rng.randint(1, 4))
    return segments


def hf_inputs(segments: list, merge: int) -> dict:
    types_, images, videos, seconds = [], [], [], []
    for item in segments:
        if isinstance(item, int):
            types_ += [0] * item
            continue
        t, h, w = item[1]
        n = t * (h // merge) * (w // merge)
        types_ += [1 if item[0] == "image" else 2] * n
        (images if item[0] == "image" else videos).append(item[1])
        if item[0] == "video" and len(item) == 3:
            seconds.append(item[2])
    length = len(types_)
    inputs = {
        "input_ids": torch.randint(10, 1000, (1, length)),
        "mm_token_type_ids": torch.tensor([types_]),
        "image_grid_thw": torch.tensor(images) if images else None,
        "video_grid_thw": torch.tensor(videos) if videos else None,
    }
    if seconds:
        inputs["second_per_grid_ts"] = torch.tensor(seconds, dtype=torch.float32)
    return inputs


def fake_model(cls: type, merge: int, tokens_per_second: float | None = None) -> types.SimpleNamespace:
    vision = types.SimpleNamespace(spatial_merge_size=merge, tokens_per_second=tokens_per_second)
    fake = types.SimpleNamespace(config=types.SimpleNamespace(vision_config=vision))
    fake.get_vision_position_ids = types.MethodType(cls.get_vision_position_ids, fake)
    return fake


@pytest.mark.parametrize("seed", range(12))
def test_ids_equal_qwen2_vl_get_rope_index(seed):
    rng = random.Random(seed)
    merge = rng.choice([1, 2, 3])
    segments = random_sequence(rng, merge, fps_spaced=False)
    ref, _ = Qwen2VLModel.get_rope_index(fake_model(Qwen2VLModel, merge), **hf_inputs(segments, merge))
    ours = mrope_position_ids(segments, spatial_merge_size=merge)
    assert ours.dtype == torch.long and torch.equal(ours, ref[:, 0])


@pytest.mark.parametrize("seed", range(12))
def test_ids_equal_qwen2_5_vl_fps_spaced_time(seed):
    rng = random.Random(100 + seed)
    merge, tps = rng.choice([1, 2]), rng.choice([2, 4, 25])
    segments = random_sequence(rng, merge, fps_spaced=True)
    model = fake_model(Qwen2_5_VLModel, merge, tps)
    ref, _ = Qwen2_5_VLModel.get_rope_index(model, **hf_inputs(segments, merge))
    ours = mrope_position_ids(segments, spatial_merge_size=merge, tokens_per_second=tps)
    assert torch.equal(ours, ref[:, 0])


def test_ids_of_text_an_image_of_3x4_patches_and_text():
    ids = mrope_position_ids([2, ("image", (1, 6, 8)), 3], spatial_merge_size=2)  # 3 x 4 merged tokens
    t, h, w = ids.tolist()
    assert t == [0, 1] + [2] * 12 + [6, 7, 8]
    assert h == [0, 1] + [2] * 4 + [3] * 4 + [4] * 4 + [6, 7, 8]
    assert w == [0, 1] + [2, 3, 4, 5] * 3 + [6, 7, 8]  # text resumes at 2 + max(3, 4), not at 2 + 12


def test_video_time_axis():
    qwen2 = mrope_position_ids([1, ("video", (3, 2, 2), 0.5)], spatial_merge_size=2)
    assert qwen2[0].tolist() == [0, 1, 2, 3]  # one step per temporal patch
    # Qwen2.5-VL: 2 frames per temporal patch at 4 fps = 0.5 s; 25 tokens per second -> 12.5 per patch
    spaced = mrope_position_ids([1, ("video", (3, 2, 2), 0.5)], spatial_merge_size=2, tokens_per_second=25)
    assert spaced[0].tolist() == [0, 1, 13, 26]  # 1 + floor(k * 12.5)
    assert spaced[1:, 1:].tolist() == [[1, 1, 1], [1, 1, 1]]
    image = mrope_position_ids([("image", (1, 2, 2))], tokens_per_second=25)
    assert image.tolist() == [[0], [0], [0]]


def test_text_only_ids_are_1d_positions():
    ids = mrope_position_ids([4, ("text", 3)])
    assert torch.equal(ids, torch.arange(7).expand(3, 7))
    assert mrope_position_ids([]).shape == (3, 0)


# --- the rotation ---------------------------------------------------------------------------------


def _sections(rng: random.Random, half: int) -> list[int]:
    a = rng.randint(0, half)
    b = rng.randint(0, half - a)
    return [a, b, half - a - b]


@pytest.mark.parametrize("seed", range(10))
def test_rotation_equals_qwen2_vl_rotary(seed):
    rng = random.Random(seed)
    heads, dim, base = rng.randint(1, 3), 2 * rng.randint(1, 16), rng.choice([10000.0, 1e6, 100.0])
    section = _sections(rng, dim // 2)
    config = Qwen2VLTextConfig(hidden_size=heads * dim, num_attention_heads=heads, num_key_value_heads=heads,
                               rope_parameters={"rope_type": "default", "rope_theta": base, "mrope_section": section})
    rotary = Qwen2VLRotaryEmbedding(config)
    ids = torch.stack([mrope_position_ids([*random_sequence(rng, 2, fps_spaced=False), 12])[:, :12]
                       for _ in range(2)], 1)  # two sequences of 12 tokens, [3, 2, 12]
    seq = ids.shape[-1]
    gen = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, heads, seq, dim, generator=gen), torch.randn(2, heads, seq, dim, generator=gen)
    cos, sin = rotary(q, ids)
    ref_q, ref_k = apply_rotary_pos_emb(q, k, cos, sin)
    ours_q, ours_k = (apply_mrope(x, ids[:, :, None, :], section, base) for x in (q, k))  # ids [3, batch, 1, T]
    torch.testing.assert_close(ours_q, ref_q, rtol=0, atol=3e-5)
    torch.testing.assert_close(ours_k, ref_k, rtol=0, atol=3e-5)


def test_released_qwen2_vl_section():
    x = torch.randn(1, 2, 5, 128, dtype=torch.float64)
    ids = mrope_position_ids([1, ("image", (1, 4, 4))])
    rope = {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [16, 24, 24]}
    config = Qwen2VLTextConfig(hidden_size=256, num_attention_heads=2, num_key_value_heads=2, rope_parameters=rope)
    cos, sin = Qwen2VLRotaryEmbedding(config)(x.float(), ids[:, None])
    ref, _ = apply_rotary_pos_emb(x.float(), x.float(), cos, sin)
    torch.testing.assert_close(apply_mrope(x, ids, [16, 24, 24], 1e6).float(), ref, rtol=0, atol=3e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_text_tokens_get_ordinary_rope_exactly(dtype, device):
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(2, 3, 9, 16, generator=gen).to(device=device, dtype=dtype)
    p = torch.tensor([0, 1, 2, 5, 6, 7, 8, 20, 21], device=device)
    ids = p.expand(3, -1)
    for section in ([2, 3, 3], [8, 0, 0], [0, 4, 4]):
        assert torch.equal(apply_mrope(x, ids, section, 500.0), apply_rope(x, p, 500.0, layout="half"))


def test_each_section_follows_its_own_axis():
    dim = 12
    x = torch.randn(1, dim, dtype=torch.float64)
    section = [1, 2, 3]
    for axis in range(3):
        ids = torch.zeros(3, 1, dtype=torch.long)
        ids[axis] = 5  # only this axis moves
        out = apply_mrope(x, ids, section, 10.0)
        start, stop = sum(section[:axis]), sum(section[: axis + 1])
        moved = torch.zeros(dim // 2, dtype=torch.bool)
        moved[start:stop] = True
        pair_changed = (out - x).abs().reshape(2, dim // 2).amax(0) > 1e-12
        assert torch.equal(pair_changed, moved)


def test_rotation_is_differentiable():
    x = torch.randn(4, 8, dtype=torch.float64, requires_grad=True)
    ids = mrope_position_ids([("image", (1, 4, 4))])
    assert torch.autograd.gradcheck(lambda v: apply_mrope(v, ids, [2, 1, 1]), (x,))


@pytest.mark.parametrize(
    "section,ids,error,match",
    [
        ([2, 2, 2], torch.zeros(3, 4), ValueError, "sum to dim/2 = 4"),
        ([2, 2], torch.zeros(3, 4), ValueError, "three ints"),
        ([2, -1, 3], torch.zeros(3, 4), ValueError, r"mrope_section\[1\]"),
        ("224", torch.zeros(3, 4), TypeError, "mrope_section"),
        ([2, 1, 1], torch.zeros(2, 4), ValueError, "position_ids must have shape"),
        ([2, 1, 1], torch.zeros(3, 5), ValueError, "T=4"),
        ([2, 1, 1], torch.zeros(3, 4, dtype=torch.bool), TypeError, "real numbers"),
        ([2, 1, 1], torch.full((3, 4), float("nan")), ValueError, "finite"),
    ],
)
def test_rotation_bad_input(section, ids, error, match):
    with pytest.raises(error, match=match):
        apply_mrope(torch.randn(4, 8), ids, section)


@pytest.mark.parametrize(
    "segments,kwargs,error,match",
    [
        ([("image", (1, 3, 4))], {}, ValueError, "multiples of spatial_merge_size = 2"),
        ([("audio", (1, 2, 2))], {}, ValueError, "'text', 'image' or 'video'"),
        ([("image", (1, 2))], {}, ValueError, r"\(t, h, w\)"),
        ([("image", (1, 2, 2), 0.5)], {}, ValueError, "image"),
        ([("video", (0, 2, 2))], {}, ValueError, "grid t"),
        ([("video", (1, 2, 2), -1.0)], {}, ValueError, "second_per_grid_t"),
        ([-1], {}, ValueError, "text length"),
        ([True], {}, TypeError, r"segments\[0\]"),
        ([1.5], {}, TypeError, r"segments\[0\]"),
        ("text", {}, TypeError, "list of segments"),
        ([1], {"spatial_merge_size": 0}, ValueError, "spatial_merge_size"),
        ([1], {"tokens_per_second": 0}, ValueError, "tokens_per_second"),
    ],
)
def test_ids_bad_input(segments, kwargs, error, match):
    with pytest.raises(error, match=match):
        mrope_position_ids(segments, **kwargs)


def test_ids_device(device):
    ids = mrope_position_ids([2, ("video", (2, 2, 2), 0.5)], tokens_per_second=2, device=device)
    assert ids.device == device and ids.dtype == torch.long
