"""posviz.distance_bias: KERPLE's log bias (Chi et al. 2022) and FIRE (Li et al. 2024)."""

from __future__ import annotations

import math

import pytest
import torch

from posviz.distance_bias import FIRE, KerpleLogBias, fire_normalized_distance, kerple_log_bias

# --- KERPLE (log) ------------------------------------------------------------------------------


def test_kerple_log_matches_the_papers_formula_on_a_hand_case():
    r1 = torch.tensor([1.0, 2.0], dtype=torch.float64)
    r2 = torch.tensor([0.5, 3.0], dtype=torch.float64)
    b = kerple_log_bias(r1, r2, 4)
    assert b.shape == (2, 4, 4) and b.dtype == torch.float64
    for h in range(2):
        for m in range(4):
            for n in range(4):
                expected = -float(r1[h]) * math.log(1 + float(r2[h]) * abs(m - n))
                assert float(b[h, m, n]) == pytest.approx(expected, abs=1e-15)
    assert float(b[0, 3, 1]) == pytest.approx(-math.log(2.0))  # -1 * log(1 + 0.5 * 2)


def test_kerple_log_is_zero_on_the_diagonal_symmetric_and_falls_with_distance():
    b = kerple_log_bias(torch.rand(3) + 0.1, torch.rand(3) + 0.1, 9)
    assert torch.equal(torch.diagonal(b, dim1=-2, dim2=-1), torch.zeros(3, 9))
    assert torch.equal(b, b.transpose(-1, -2))
    row = b[:, 8, :]  # query 8, keys 8, 7, ..., 0 going back
    assert bool((row[:, :-1] < row[:, 1:]).all())  # further back: more negative


def test_kerple_module_keeps_its_parameters_positive_and_learns():
    g = torch.Generator().manual_seed(0)
    module = KerpleLogBias(4)
    module.reset_parameters(g)
    assert bool((module.r1 >= module.eps).all() and (module.r1 <= 2).all())
    assert bool((module.r2 >= module.eps).all() and (module.r2 <= 1).all())
    with torch.no_grad():
        module.r1[0] = -3.0  # an optimiser step past zero
    bias = module(6)
    assert float(module.r1[0].detach()) == pytest.approx(module.eps)  # projected back before use
    assert torch.allclose(bias, kerple_log_bias(module.r1.detach(), module.r2.detach(), 6))
    bias.sum().backward()
    assert module.r1.grad is not None and bool((module.r1.grad != 0).all())
    assert module.r2.grad is not None and bool((module.r2.grad != 0).all())


@pytest.mark.parametrize(
    ("r1", "r2", "length", "error", "match"),
    [
        (torch.tensor([1.0, 0.0]), torch.tensor([1.0, 1.0]), 3, ValueError, "r1 must hold finite numbers > 0"),
        (torch.tensor([1.0]), torch.tensor([-1.0]), 3, ValueError, "r2 must hold finite numbers > 0"),
        (torch.tensor([1.0]), torch.tensor([1.0, 2.0]), 3, ValueError, "same shape"),
        (torch.tensor([1.0]), torch.tensor([1.0]), 0, ValueError, "length must be >= 1"),
        (torch.tensor([[1.0]]), torch.tensor([1.0]), 3, ValueError, "r1 must have 1 dimension"),
        ([1.0], torch.tensor([1.0]), 3, TypeError, "r1 must be a torch.Tensor"),
        (torch.tensor([1.0]), torch.tensor([1.0], dtype=torch.float64), 3, TypeError, "r2 must have r1's dtype"),
    ],
)
def test_kerple_bad_input(r1, r2, length, error, match):
    with pytest.raises(error, match=match):
        kerple_log_bias(r1, r2, length)


# --- FIRE ----------------------------------------------------------------------------------------


def _psi(x: float, c: float) -> float:
    return math.log(abs(c * x) + 1)


def test_fire_normalized_distance_matches_the_papers_formula_on_a_hand_case():
    c, L, eps = 0.1, 2.0, 1e-6
    u = fire_normalized_distance(6, c, L, eps=eps, dtype=torch.float64)
    for i in range(6):
        for j in range(i + 1):
            expected = _psi(i - j, c) / (_psi(max(L, i), c) + eps)  # psi(i - j) / psi(max(L, i))
            assert float(u[i, j]) == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert float(u[4, 1]) == pytest.approx(math.log(1.3) / (math.log(1.4) + eps))


def test_fire_normalized_distance_stays_in_the_unit_interval_at_any_length():
    """Progressive interpolation: for a causal model u lies in [0, 1] however long the input."""
    for length in (8, 64, 1024):
        u = fire_normalized_distance(length, 0.1, 16.0, eps=0.0, dtype=torch.float64)
        lower = torch.tril(torch.ones(length, length, dtype=torch.bool))
        assert float(u[lower].min()) == 0.0 and float(u[lower].max()) <= 1.0 + 1e-12
        assert torch.equal(torch.diagonal(u), torch.zeros(length, dtype=torch.float64))  # i = j
        # the first key of a query past the threshold (L = 16) is at distance i: u = psi(i)/psi(i) = 1
        assert float(u[length - 1, 0]) == pytest.approx(1.0) if length > 16 else float(u[length - 1, 0]) < 1


def test_fire_threshold_keeps_short_contexts_unstretched():
    u = fire_normalized_distance(10, 0.5, 6.0, eps=0.0, dtype=torch.float64)
    for i in range(1, 6):  # i < L: normaliser psi(L), so u(i, 0) < 1 and grows with i
        assert float(u[i, 0]) == pytest.approx(_psi(i, 0.5) / _psi(6.0, 0.5))
    assert float(u[5, 0]) < 1.0 and float(u[7, 0]) == pytest.approx(1.0)


def _fire(length_threshold: float = 4.0) -> FIRE:
    torch.manual_seed(0)
    fire = FIRE(3, hidden=8, init_threshold=length_threshold).double()
    fire.reset_parameters(torch.Generator().manual_seed(5))
    return fire.double()


def test_fire_bias_depends_only_on_the_distance_and_the_query_position():
    """b(i, j) = F(i - j, max(L, i)): equal for queries under the threshold at one distance; a query
    past it reads its distance in units of its own position."""
    fire = _fire(4.0)
    with torch.no_grad():
        b = fire(12)  # (heads, 12, 12)
    for d in range(4):
        under = [b[:, i, i - d] for i in range(d, 4)]  # i < L = 4: the same normaliser psi(L)
        for other in under[1:]:
            assert torch.equal(other, under[0])
    # past the threshold, one distance at two query positions gives two inputs of the MLP:
    u = fire.normalized_distance(12).detach()
    assert float(u[6, 4]) != float(u[10, 8])
    for i in range(12):
        for j in range(i + 1):
            # an independent MLP evaluation at u(i, j) reproduces every entry
            hidden = torch.relu(fire.mlp[0].weight[:, 0] * u[i, j] + fire.mlp[0].bias)
            expected = fire.mlp[2].weight @ hidden + fire.mlp[2].bias
            assert torch.allclose(b[:, i, j], expected.detach(), rtol=0, atol=1e-13)


def test_fire_matches_the_papers_pseudo_code():
    """A direct transcription of the paper's pseudo-code (threshold |lambda L_0|, log(|c x| + 1), eps)."""
    fire = _fire(5.0)
    with torch.no_grad():
        fire.c.fill_(0.3)
        fire.threshold_scale.fill_(-1.2)  # |lambda L_0| = 6
        length = 9
        positions = torch.arange(length, dtype=torch.float64)
        rel = (positions[:, None] - positions[None, :]).clamp(min=0)
        threshold = torch.abs(fire.threshold_scale * fire.init_threshold)
        normaliser = torch.log(torch.abs(fire.c * torch.max(positions, threshold)) + 1) + fire.eps
        normalized = torch.log(torch.abs(fire.c * rel) + 1) / normaliser[:, None]
        expected = fire.mlp(normalized.unsqueeze(-1)).permute(2, 0, 1)
        assert torch.allclose(fire(length), expected, rtol=0, atol=1e-14)
        assert float(fire.threshold) == pytest.approx(6.0)


def test_fire_gradients_reach_c_the_threshold_and_the_mlp():
    fire = _fire(4.0)
    fire(10).pow(2).sum().backward()
    for name, p in fire.named_parameters():
        assert p.grad is not None and bool(torch.isfinite(p.grad).all()), name
        assert float(p.grad.abs().sum()) > 0, name


def test_fire_reset_is_seeded():
    a, b = FIRE(2), FIRE(2)
    a.reset_parameters(torch.Generator().manual_seed(1))
    b.reset_parameters(torch.Generator().manual_seed(1))
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))
    assert float(a.c.detach()) == pytest.approx(0.1) and float(a.threshold.detach()) == pytest.approx(512.0)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: fire_normalized_distance(0, 0.1, 4.0), ValueError, "length must be >= 1"),
        (lambda: fire_normalized_distance(4, torch.ones(2), 4.0), ValueError, "c must have 0 dimension"),
        (lambda: fire_normalized_distance(4, 0.1, 4.0, eps=-1.0), ValueError, "eps must be >= 0"),
        (lambda: fire_normalized_distance(4, "a", 4.0), TypeError, "c must be a real number"),
        (lambda: FIRE(0), ValueError, "n_heads must be >= 1"),
        (lambda: FIRE(2, init_threshold=0.0), ValueError, "init_threshold must be a finite number > 0"),
        (lambda: FIRE(2, hidden=1.5), TypeError, "hidden must be an integer"),
    ],
)
def test_fire_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
