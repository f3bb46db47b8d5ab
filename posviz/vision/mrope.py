r"""M-RoPE (Qwen2-VL; Wang et al., 2024): RoPE over (time, height, width) ids of a mixed text/image/video sequence.

Every token gets three position ids :math:`(t, h, w)`. The head's :math:`d/2` frequencies are cut
into three sections (``mrope_section``, e.g. ``[16, 24, 24]`` for a 128-dim head): the first
section's pairs rotate with :math:`t`, the second's with :math:`h`, the third's with :math:`w`.

- A **text** token at running position :math:`p` has :math:`t = h = w = p`: every pair turns by
  :math:`p\,\theta_i`, which is ordinary 1-D RoPE (half-split pairs, :func:`posviz.apply_rope`
  with ``layout="half"``).
- An **image** of :math:`h \times w` patches, merged ``spatial_merge_size`` :math:`m` at a time
  into :math:`(h/m)(w/m)` tokens, starting at :math:`p`: token :math:`(i, j)` gets
  :math:`(p,\; p + i,\; p + j)`; the text after it continues at :math:`p + \max(h, w)/m`
  (not at :math:`p` + the number of image tokens).
- A **video** of :math:`T` temporal patches adds a time step: Qwen2-VL gives temporal patch
  :math:`k` time :math:`p + k`; Qwen2.5-VL spaces it by wall-clock time,
  :math:`p + \lfloor k \cdot \text{tokens\_per\_second} \cdot \text{second\_per\_grid\_t} \rfloor`
  (``second_per_grid_t`` = ``temporal_patch_size / fps``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .._validate import check_int, check_positive, check_real, resolve, table_dtype
from ..frequencies import rope_frequencies
from ._rotate import check_positions_nd, check_rope_input, rotate_pairs

__all__ = ["apply_mrope", "mrope_position_ids"]


def _segment(item: object, index: int) -> tuple[str, tuple[int, ...], float]:
    """(kind, sizes, second_per_grid_t) of one segment."""
    name = f"segments[{index}]"
    if isinstance(item, bool):
        raise TypeError(f"{name} must be an int (text length) or a tuple ('text', n) / ('image', (t, h, w)) / "
                        f"('video', (t, h, w)[, second_per_grid_t]), got {item!r}")
    if not isinstance(item, (tuple, list)):
        try:
            return "text", (check_int(f"{name} (a text length)", item, minimum=0),), 1.0
        except TypeError:
            raise TypeError(f"{name} must be an int (text length) or a tuple ('text', n) / ('image', (t, h, w)) / "
                            f"('video', (t, h, w)[, second_per_grid_t]), got {item!r}") from None
    if not item or item[0] not in ("text", "image", "video"):
        raise ValueError(f"{name} must start with 'text', 'image' or 'video', got {item!r}")
    kind = item[0]
    if kind == "text":
        if len(item) != 2:
            raise ValueError(f"{name} must be ('text', n), got {item!r}")
        return "text", (check_int(f"{name} text length", item[1], minimum=0),), 1.0
    if len(item) not in (2, 3) or (kind == "image" and len(item) != 2):
        form = "('image', (t, h, w))" if kind == "image" else "('video', (t, h, w)[, second_per_grid_t])"
        raise ValueError(f"{name} must be {form}, got {item!r}")
    grid = item[1]
    if not isinstance(grid, (tuple, list)) or len(grid) != 3:
        raise ValueError(f"{name}'s grid must be (t, h, w), three ints (patches before merging), got {grid!r}")
    sizes = tuple(check_int(f"{name} grid {axis}", v, minimum=1) for axis, v in zip("thw", grid))
    second = check_real(f"{name} second_per_grid_t", item[2]) if len(item) == 3 else 1.0
    if second < 0:
        raise ValueError(f"{name} second_per_grid_t must be >= 0, got {second}")
    return kind, sizes, second


def mrope_position_ids(
    segments: Sequence[int | tuple],
    *,
    spatial_merge_size: int = 2,
    tokens_per_second: float | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    r"""The ``(time, height, width)`` ids of a mixed sequence, ``[3, T]`` long, as Qwen2-VL's ``get_rope_index``.

    Walking the segments with a running position :math:`p` (from 0):

    - text of :math:`n` tokens: ids :math:`(p + k, p + k, p + k)`, :math:`k < n`; then :math:`p \mathrel{+}= n`;
    - an image or video with patch grid :math:`(g_t, g_h, g_w)` (``image_grid_thw``, before
      merging) gives :math:`g_t (g_h/m)(g_w/m)` tokens in (time, row, column) order, token
      :math:`(k, i, j)` with ids

      .. math:: (p + \lfloor k\,\delta \rfloor,\; p + i,\; p + j),

      then :math:`p \mathrel{+}= \max(g_h, g_w)/m`. The time step :math:`\delta` is 1 for images and,
      for videos, 1 with ``tokens_per_second=None`` (Qwen2-VL) or
      ``tokens_per_second * second_per_grid_t`` (Qwen2.5-VL), computed in float32 and truncated, as
      ``transformers`` does.

    This follows ``transformers`` 5.x (``Qwen2VLModel.get_rope_index``,
    ``Qwen2_5_VLModel.get_rope_index``): the text after a vision segment starts at
    :math:`p + \max(g_h, g_w)/m`, whatever the time ids reached (a long Qwen2.5-VL video's time ids
    can pass it). In a real prompt each image sits between ``<|vision_start|>`` and
    ``<|vision_end|>`` text tokens; ``transformers`` groups adjacent tokens of one kind, so two
    vision segments with no text between them are *one* segment there.

    Args:
        segments: in order, each an int ``n`` or ``("text", n)`` (``n`` >= 0 text tokens),
            ``("image", (t, h, w))`` or ``("video", (t, h, w))`` / ``("video", (t, h, w),
            second_per_grid_t)`` (``second_per_grid_t`` >= 0: seconds per temporal patch,
            ``temporal_patch_size / fps``; default 1, as ``transformers`` without
            ``second_per_grid_ts``). ``h`` and ``w`` must be multiples of ``spatial_merge_size``.
        spatial_merge_size: :math:`m`, patches merged per axis into one token (2 in Qwen2-VL), >= 1.
        tokens_per_second: ``None`` for Qwen2-VL's time ids, or Qwen2.5-VL's
            ``vision_config.tokens_per_second`` (> 0; 2 in the released Qwen2.5-VL configs,
            ``transformers``' default 4).
        device: where to build the ids (torch's default device).
    """
    if isinstance(segments, (str, bytes)) or not isinstance(segments, Sequence):
        raise TypeError(f"segments must be a list of segments, got {type(segments).__name__}")
    m = check_int("spatial_merge_size", spatial_merge_size, minimum=1)
    tps = None if tokens_per_second is None else check_positive("tokens_per_second", tokens_per_second)
    device, _ = resolve(device, None)
    parts, pos = [], 0
    for index, item in enumerate(segments):
        kind, sizes, second = _segment(item, index)
        if kind == "text":
            ids = torch.arange(sizes[0], device=device) + pos
            parts.append(ids[None].expand(3, -1))
            pos += sizes[0]
            continue
        t, h, w = sizes
        if h % m or w % m:
            raise ValueError(
                f"segments[{index}] grid (t, h, w) = {sizes}: h and w must be multiples of spatial_merge_size = {m}"
            )
        lt, lh, lw = t, h // m, w // m
        if kind == "video" and tps is not None:
            interval = torch.tensor(second, dtype=torch.float32) * tps  # float32, as transformers
            times = (torch.arange(lt) * interval).long().to(device)
        else:
            times = torch.arange(lt, device=device)
        tt, hh, ww = torch.meshgrid(
            times + pos, torch.arange(lh, device=device) + pos, torch.arange(lw, device=device) + pos, indexing="ij"
        )
        parts.append(torch.stack((tt, hh, ww)).reshape(3, -1))
        pos += max(h, w) // m
    if not parts:
        return torch.zeros(3, 0, dtype=torch.long, device=device)
    return torch.cat(parts, dim=1)


def _check_section(mrope_section: object, dim: int) -> list[int]:
    if isinstance(mrope_section, (str, bytes)) or not isinstance(mrope_section, Sequence):
        raise TypeError(f"mrope_section must be a list of three ints (t, h, w pairs), got {mrope_section!r}")
    if len(mrope_section) != 3:
        raise ValueError(f"mrope_section must hold three ints (time, height, width), got {list(mrope_section)}")
    sections = [check_int(f"mrope_section[{i}]", s, minimum=0) for i, s in enumerate(mrope_section)]
    if sum(sections) != dim // 2:
        raise ValueError(
            f"mrope_section must sum to dim/2 = {dim // 2} (one section entry per rotation pair of "
            f"x.shape[-1] = {dim}), got {sections} summing to {sum(sections)}"
        )
    return sections


def apply_mrope(
    x: torch.Tensor,
    position_ids: torch.Tensor,
    mrope_section: Sequence[int],
    base: float = 10000.0,
) -> torch.Tensor:
    r"""Sectioned M-RoPE: pair :math:`i` turns by :math:`p_{s(i)}\,\theta_i`, :math:`s(i)` its section's axis.

    .. math::

        \theta_i = \text{base}^{-2i/d}, \qquad
        s(i) = \begin{cases} t & i < S_0 \\ h & S_0 \le i < S_0 + S_1 \\ w & \text{otherwise} \end{cases}
        \qquad (S_0, S_1, S_2) = \texttt{mrope\_section}

    on half-split pairs :math:`(x_i, x_{i+d/2})`, as ``transformers``' ``Qwen2VLRotaryEmbedding``
    with ``mrope_section`` (its cos/sin picked section by section from the three ids) and
    ``apply_rotary_pos_emb`` (``apply_multimodal_rotary_pos_emb`` in ``transformers`` 4.x). When the
    three ids are equal (text) this is ``apply_rope(x, p, base, layout="half")`` exactly, bit for bit.

    Args:
        x: queries or keys ``[..., T, d]``, ``d`` even; the result keeps ``x``'s dtype and device.
        position_ids: ``[3, T]`` or ``[3, ..., T]`` (:func:`mrope_position_ids`; the batch dims
            broadcast against ``x.shape[:-2]``, e.g. ``[3, batch, 1, T]`` for ``x`` ``[batch,
            heads, T, d]``), integers or finite floats.
        mrope_section: three ints >= 0 summing to ``d/2`` (Qwen2-VL: ``[16, 24, 24]`` for ``d = 128``).
        base: frequency base, > 0 (Qwen2-VL: ``rope_theta`` 1,000,000).
    """
    x = check_rope_input(x)
    positions = check_positions_nd("position_ids", position_ids, x, 3, axis_first=True, what="(time, height, width)")
    sections = _check_section(mrope_section, x.shape[-1])
    base = check_positive("base", base)
    exact = table_dtype(x.device)
    theta = rope_frequencies(x.shape[-1], base, device=x.device, dtype=exact)  # [d/2]
    axis = torch.repeat_interleave(torch.arange(3, device=x.device), torch.tensor(sections, device=x.device))
    pos = positions.to(device=x.device, dtype=exact)[..., axis]  # [..., T, d/2]: each pair's id
    return rotate_pairs(x, pos * theta, "half")
