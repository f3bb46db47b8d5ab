r"""The miniature's image task: where is patch B relative to patch A?

An image is a ``grid`` :math:`\times` ``grid`` array of patches, and a patch is a token (no pixels):
every patch holds a background id drawn uniformly from ``0 .. N_BACKGROUND - 1`` (noise that
carries no answer), except two marked patches, ``MARK_A`` at :math:`(r_A, c_A)` and ``MARK_B`` at
:math:`(r_B, c_B)` (row, column; row 0 at the top, column 0 at the left). The label is B's
quadrant as seen from A,

.. math::

    y = 2\,[r_B > r_A] + [c_B > c_A] \in \{0, 1, 2, 3\}
    \quad (\text{up-left}, \text{up-right}, \text{down-left}, \text{down-right}),

with :math:`r_A \ne r_B` and :math:`c_A \ne c_B` by construction (so every example has exactly
one answer). The answer depends on the signs of the 2-D offset :math:`(r_B - r_A, c_B - c_A)` only,
never on where A is, so the task is the same at any grid size: a model that read offsets right
at 8 :math:`\times` 8 has nothing new to learn at 16 :math:`\times` 16, only larger offsets
(up to :math:`\pm 15` instead of :math:`\pm 7`) and more background.

Placement: :math:`r_A` uniform on the rows, :math:`r_B = (r_A + s) \bmod G` with :math:`s` uniform
on :math:`1 .. G-1` (so :math:`r_B` is uniform on the other rows), the same for columns; the four
labels are equally likely. Everything is drawn from the ``torch.Generator`` the caller passes, so a
seed fixes every example (:func:`make_examples`); :func:`stream` names the independent streams
(training batches per seed, one validation set, one held-out set per grid).
"""

from __future__ import annotations

import torch

from ..lab.model import derive_seed

__all__ = [
    "CLASSES",
    "MARK_A",
    "MARK_B",
    "N_BACKGROUND",
    "N_CLASSES",
    "VOCAB_SIZE",
    "check_grid",
    "labels_of",
    "make_examples",
    "stream",
]

N_BACKGROUND = 16
"""Background ids ``0 .. 15``: noise patches."""
MARK_A = N_BACKGROUND
"""The id of marked patch A."""
MARK_B = N_BACKGROUND + 1
"""The id of marked patch B."""
VOCAB_SIZE = N_BACKGROUND + 2
CLASSES = ("up-left", "up-right", "down-left", "down-right")
"""B's quadrant as seen from A, by label."""
N_CLASSES = len(CLASSES)


def check_grid(grid: object, name: str = "grid") -> int:
    """``grid`` as an int >= 2 (two distinct rows and columns are needed); ``TypeError`` /
    ``ValueError`` naming ``name`` otherwise."""
    if isinstance(grid, bool) or not isinstance(grid, int):
        raise TypeError(f"{name} must be an int >= 2, got {type(grid).__name__} {grid!r}")
    if grid < 2:
        raise ValueError(f"{name} must be an int >= 2 (A and B need distinct rows and columns), got {grid}")
    return grid


def stream(name: str, key: int) -> torch.Generator:
    """An independent CPU generator for one data stream: ``"train"`` (key: the run's seed),
    ``"validation"`` (key: the training grid), ``"heldout"`` (key: the grid)."""
    if name not in ("train", "validation", "heldout"):
        raise ValueError(f"stream must be 'train', 'validation' or 'heldout', got {name!r}")
    return torch.Generator().manual_seed(derive_seed(int(key), f"vislab-{name}"))


def labels_of(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The label of each example from A's and B's ``(row, col)``, shapes ``(n, 2)``: ``(n,)`` long."""
    return 2 * (b[:, 0] > a[:, 0]).long() + (b[:, 1] > a[:, 1]).long()


def make_examples(
    n: int, grid: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``n`` examples on a ``grid`` x ``grid`` image: ``tokens`` ``(n, grid, grid)`` long, ``labels``
    ``(n,)`` long, and A's and B's ``(row, col)``, ``(n, 2)`` each. Deterministic given ``generator``'s
    state (which it advances)."""
    grid = check_grid(grid)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    tokens = torch.randint(0, N_BACKGROUND, (n, grid, grid), generator=generator)
    a = torch.randint(0, grid, (n, 2), generator=generator)  # (row, col) of A
    shift = torch.randint(1, grid, (n, 2), generator=generator)  # 1 .. grid-1: another row, another column
    b = (a + shift) % grid
    rows = torch.arange(n)
    tokens[rows, a[:, 0], a[:, 1]] = MARK_A
    tokens[rows, b[:, 0], b[:, 1]] = MARK_B
    return tokens, labels_of(a, b), a, b
