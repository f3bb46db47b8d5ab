r"""What relative position costs at run time: plain attention against Shaw's and T5's.

A measurement, not a formula: :func:`relative_attention_cost` times the three kinds of attention
of the relative-encoding chapter on the reader's own machine (its table is *The cost*).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ._runtime import median_seconds
from ._validate import check_int, resolve
from .dot_product import attention
from .relative import ShawRelativePosition, T5RelativeBias

__all__ = ["relative_attention_cost"]


def relative_attention_cost(
    lengths: Sequence[int] = (128, 256, 512, 1024),
    *,
    num_heads: int = 8,
    head_dim: int = 64,
    max_distance: int = 16,
    num_buckets: int = 32,
    repeats: int = 5,
    num_threads: int | None = 1,
    device: torch.device | str | None = None,
) -> list[dict[str, float]]:
    r"""Median wall-clock seconds of one attention call (batch 1), plain and with a relative term.

    For each length :math:`L`, with random ``q, k, v`` of shape ``[1, num_heads, L, head_dim]``
    and no gradients:

    * ``plain``: :func:`posviz.attention`, the :math:`H \times L \times L` scores and softmax;
    * ``shaw``: :class:`ShawRelativePosition` (keys and values, clip ``max_distance``), which
      gathers :math:`a^K_{r}` and :math:`a^V_{r}` for every pair: two :math:`L \times L \times d`
      tensors, shared by the heads;
    * ``t5``: :class:`T5RelativeBias` (bidirectional, ``num_buckets``, max distance 128) computed
      for the :math:`L \times L` pairs, then :func:`posviz.attention` with that
      :math:`H \times L \times L` bias.

    Each is run once to warm up, then ``repeats`` times, or more (up to 50) until the runs add up
    to 0.1 s; the median is reported (``time.perf_counter``; CUDA is synchronised). ``device``
    defaults to torch's default device, like every posviz function. CPU timings
    use ``num_threads`` PyTorch threads (restored afterwards; ``None`` keeps the current
    setting): one thread is the least disturbed by other programs on a shared machine. Timings
    depend on the machine and its load: they are not reproducible.

    Returns:
        A list with one dict per length,
        ``{"length": L, "plain": s, "shaw": s, "t5": s, "threads": n}`` (seconds; ``threads`` is
        the number of CPU threads used).
    """
    if isinstance(lengths, (str, bytes)) or not isinstance(lengths, Sequence):
        raise TypeError(f"lengths must be a sequence of integers >= 1, got {lengths!r}")
    if not lengths:
        raise ValueError(f"lengths must be a non-empty sequence of integers >= 1, got {lengths!r}")
    lengths = [check_int("lengths[i]", length, minimum=1) for length in lengths]
    num_heads = check_int("num_heads", num_heads, minimum=1)
    head_dim = check_int("head_dim", head_dim, minimum=1)
    repeats = check_int("repeats", repeats, minimum=1)
    if num_threads is not None:
        num_threads = check_int("num_threads", num_threads, minimum=1)
    device, dtype = resolve(device, None)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)  # the modules' random initialisation
        shaw = ShawRelativePosition(head_dim, max_distance).to(device)
        t5 = T5RelativeBias(num_heads, num_buckets=num_buckets).to(device)
    previous_threads = torch.get_num_threads()
    if num_threads is not None:
        torch.set_num_threads(num_threads)
    try:
        rows = _time_lengths(lengths, shaw, t5, num_heads, head_dim, repeats, device, dtype)
    finally:
        torch.set_num_threads(previous_threads)
    return rows


def _time_lengths(
    lengths: list[int],
    shaw: ShawRelativePosition,
    t5: T5RelativeBias,
    num_heads: int,
    head_dim: int,
    repeats: int,
    device: torch.device,
    dtype: torch.dtype,
) -> list[dict[str, float]]:
    generator = torch.Generator().manual_seed(0)
    threads = torch.get_num_threads()
    rows = []
    with torch.no_grad():
        for length in lengths:
            q, k, v = (
                torch.randn(1, num_heads, length, head_dim, generator=generator, dtype=dtype).to(device)
                for _ in range(3)
            )
            rows.append(
                {
                    "length": length,
                    "plain": median_seconds(lambda: attention(q, k, v), repeats, device),  # noqa: B023
                    "shaw": median_seconds(lambda: shaw(q, k, v), repeats, device),  # noqa: B023
                    "t5": median_seconds(lambda: attention(q, k, v, bias=t5(length)), repeats, device),  # noqa: B023
                    "threads": threads,
                }
            )
    return rows
