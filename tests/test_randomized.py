"""posviz.randomized: Ruoss et al. 2023's training positions, a sorted subset drawn without replacement."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from posviz.randomized import random_positions


@pytest.mark.parametrize(("length", "max_position"), [(1, 1), (5, 5), (7, 100), (64, 1024), (0, 3)])
def test_draws_are_sorted_distinct_and_inside_the_range(length, max_position):
    g = torch.Generator().manual_seed(3)
    for _ in range(20):
        p = random_positions(length, max_position, generator=g)
        assert p.dtype == torch.int64 and p.shape == (length,)
        assert bool((p[1:] > p[:-1]).all())  # strictly increasing: sorted and distinct
        assert len(set(p.tolist())) == length
        if length:
            assert int(p.min()) >= 0 and int(p.max()) < max_position
    if length == max_position:  # the whole range: 0..n-1, as at test time
        assert random_positions(length, max_position, generator=g).tolist() == list(range(length))


def test_every_subset_is_equally_likely():
    """n = 2 of L = 4: the six subsets, each about 1/6 of 6,000 draws (the paper's uniform subsample)."""
    g = torch.Generator().manual_seed(0)
    counts = dict.fromkeys(itertools.combinations(range(4), 2), 0)
    draws = 6000
    for _ in range(draws):
        counts[tuple(random_positions(2, 4, generator=g).tolist())] += 1
    assert set(counts) == set(itertools.combinations(range(4), 2))  # only sorted pairs ever come out
    for subset, c in counts.items():
        assert abs(c - draws / 6) < 5 * math.sqrt(draws / 6), (subset, c)


def test_order_statistics_have_the_uniform_subsets_means():
    r"""The k-th smallest of n distinct values drawn from {0..L-1}: mean k(L+1)/(n+1) - 1 (k = 1..n)."""
    g = torch.Generator().manual_seed(1)
    n, L, draws = 5, 40, 4000
    total = torch.zeros(n, dtype=torch.float64)
    for _ in range(draws):
        total += random_positions(n, L, generator=g).double()
    mean = total / draws
    for k in range(1, n + 1):
        expected = k * (L + 1) / (n + 1) - 1
        spread = math.sqrt(k * (n - k + 1) * (L + 1) * (L - n) / ((n + 1) ** 2 * (n + 2)))  # sd of the k-th
        assert abs(float(mean[k - 1]) - expected) < 5 * spread / math.sqrt(draws), (k, float(mean[k - 1]), expected)


def test_a_seeded_generator_repeats_and_devices_follow():
    a = random_positions(16, 256, generator=torch.Generator().manual_seed(7))
    b = random_positions(16, 256, generator=torch.Generator().manual_seed(7))
    c = random_positions(16, 256, generator=torch.Generator().manual_seed(8))
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert random_positions(3, 9, device="cpu").device.type == "cpu"


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((-1, 4), {}, ValueError, "length must be >= 0"),
        ((5, 4), {}, ValueError, "max_position must be >= length"),
        ((2, 0), {}, ValueError, "max_position must be >= 1"),
        ((2.5, 4), {}, TypeError, "length must be an integer"),
        ((2, "8"), {}, TypeError, "max_position must be an integer"),
        ((2, 8), {"generator": 3}, TypeError, "generator must be a torch.Generator"),
        ((2, 8), {"device": "nonsense"}, ValueError, "device must be a torch device"),
    ],
)
def test_bad_input_names_the_argument(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        random_positions(*args, **kwargs)
