r"""Randomized positional encodings (Ruoss et al., 2023, "Randomized Positional Encodings Boost
Length Generalization of Transformers", ACL).

At training time a sequence of :math:`n` tokens does not get the positions :math:`0..n-1` but a
**sorted random subset** of :math:`\{0, \dots, L-1\}` of size :math:`n`, drawn without
replacement, with :math:`L` larger than any test length; the encoding (a table, a sinusoid,
RoPE) is then read at those positions. So the model sees position values up to :math:`L - 1`
during training and only their *order* carries information. At test time the paper uses the
ordinary positions :math:`0..n-1`.
"""

from __future__ import annotations

import torch

from ._validate import check_device_available, check_int

__all__ = ["random_positions"]


def random_positions(
    length: int,
    max_position: int,
    *,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    r"""``length`` sorted, distinct positions drawn uniformly from :math:`\{0, \dots, \text{max\_position}-1\}`.

    .. math::

        p_1 < p_2 < \dots < p_n, \qquad \{p_1, \dots, p_n\} \sim
        \operatorname{Uniform}\big(\{S \subseteq \{0, \dots, L-1\} : |S| = n\}\big)

    with :math:`n` = ``length`` and :math:`L` = ``max_position`` (Ruoss et al. 2023, §3: a sorted
    subsample without replacement). Every subset of size :math:`n` is equally likely: the first
    :math:`n` entries of a uniform random permutation of :math:`0..L-1`, sorted.

    Args:
        length: :math:`n \ge 0`, the number of tokens.
        max_position: :math:`L \ge n` (the paper takes :math:`L` above every test length).
        generator: a CPU ``torch.Generator`` for a repeatable draw (default: torch's global one).
        device: where the result goes (default: the CPU, where it is drawn).

    Returns:
        An int64 tensor ``[length]``, strictly increasing, inside ``[0, max_position)``.
    """
    length = check_int("length", length, minimum=0)
    max_position = check_int("max_position", max_position, minimum=1)
    if max_position < length:
        raise ValueError(
            f"max_position must be >= length (a draw without replacement of {length} distinct positions), "
            f"got max_position={max_position} < length={length}"
        )
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    if generator is not None and generator.device.type != "cpu":
        raise ValueError(f"generator must be a CPU torch.Generator (the draw runs on the CPU), got {generator.device}")
    if device is not None:
        try:
            device = check_device_available(torch.device(device))
        except (RuntimeError, TypeError) as err:
            raise ValueError(f"device must be a torch device such as 'cpu' or 'cuda', got {device!r}") from err
    subset = torch.randperm(max_position, generator=generator, dtype=torch.int64)[:length]  # n distinct of 0..L-1
    positions = torch.sort(subset).values  # p_1 < ... < p_n
    return positions if device is None else positions.to(device)
