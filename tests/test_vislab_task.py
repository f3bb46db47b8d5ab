"""posviz.vislab.task: labels correct by construction, determinism per seed, any grid size, clear errors."""

from __future__ import annotations

import pytest
import torch

from posviz.vislab.task import (
    CLASSES,
    MARK_A,
    MARK_B,
    N_BACKGROUND,
    check_grid,
    labels_of,
    make_examples,
    stream,
)


@pytest.mark.parametrize("grid", [2, 3, 8, 12, 16])
def test_labels_are_the_quadrant_of_b_seen_from_a_read_back_from_the_tokens(grid: int) -> None:
    """The marks are found where the generator says, exactly once each, and the label is recomputed
    from the token grid itself (not from the generator's own bookkeeping)."""
    tokens, labels, a, b = make_examples(300, grid, stream("heldout", grid))
    assert tokens.shape == (300, grid, grid) and labels.shape == (300,)
    for i in range(300):
        (ra, ca), = (tokens[i] == MARK_A).nonzero().tolist()
        (rb, cb), = (tokens[i] == MARK_B).nonzero().tolist()
        assert [ra, ca] == a[i].tolist() and [rb, cb] == b[i].tolist()
        assert ra != rb and ca != cb  # every example has one answer
        name = ("down" if rb > ra else "up") + "-" + ("right" if cb > ca else "left")
        assert CLASSES[int(labels[i])] == name
    background = tokens[(tokens != MARK_A) & (tokens != MARK_B)]
    assert int(background.min()) >= 0 and int(background.max()) < N_BACKGROUND


def test_labels_of_on_hand_made_offsets() -> None:
    a = torch.tensor([[3, 3], [3, 3], [3, 3], [3, 3]])
    b = torch.tensor([[0, 0], [0, 7], [7, 0], [7, 7]])  # up-left, up-right, down-left, down-right
    assert labels_of(a, b).tolist() == [0, 1, 2, 3]


def test_the_label_ignores_where_a_is() -> None:
    """Translating both marks changes nothing: absolute position is irrelevant."""
    _, labels, a, b = make_examples(500, 8, stream("train", 0))
    for shift in ([1, 2], [-3, 5], [20, -7]):
        s = torch.tensor(shift)
        assert torch.equal(labels_of(a + s, b + s), labels)


@pytest.mark.parametrize("grid", [8, 16])
def test_the_four_labels_are_balanced_and_every_offset_occurs(grid: int) -> None:
    _, labels, a, b = make_examples(8000, grid, stream("heldout", grid))
    counts = torch.bincount(labels, minlength=4).double() / 8000
    assert torch.all((counts - 0.25).abs() < 0.02), counts
    offsets = (b - a)[:, 0]
    assert set(offsets.tolist()) == set(range(-(grid - 1), grid)) - {0}


def test_examples_are_deterministic_per_seed_and_streams_differ() -> None:
    one = make_examples(64, 8, stream("train", 3))
    two = make_examples(64, 8, stream("train", 3))
    assert all(torch.equal(x, y) for x, y in zip(one, two))
    other_seed = make_examples(64, 8, stream("train", 4))[0]
    validation = make_examples(64, 8, stream("validation", 3))[0]
    heldout = make_examples(64, 8, stream("heldout", 8))[0]
    for x in (other_seed, validation, heldout):
        assert not torch.equal(one[0], x)


def test_bad_grids_and_sizes_name_the_argument() -> None:
    with pytest.raises(ValueError, match="grid must be an int >= 2"):
        make_examples(4, 1, stream("train", 0))
    with pytest.raises(TypeError, match="--eval-grids must be an int"):
        check_grid(8.0, "--eval-grids")
    with pytest.raises(ValueError, match="n must be a positive int"):
        make_examples(0, 8, stream("train", 0))
    with pytest.raises(ValueError, match="stream must be"):
        stream("test", 0)
