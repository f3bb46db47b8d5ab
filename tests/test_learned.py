"""posviz.learned: table cost, similarity readings, the toy task and the tiny training loop."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import posviz
from posviz.learned import (
    OneLayerModel,
    WindowMaxConfig,
    cosine_similarity_matrix,
    explained_variance,
    learned_table_parameters,
    mean_by_offset,
    positional_attention,
    principal_coordinates,
    sliding_window_max,
    train_grid,
    train_window_max,
)

SMALL = WindowMaxConfig(max_len=12, dim=8, steps=30, checkpoints=(0, 10, 30), probe=32)


# --- cost -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("max_len", "dim", "count"),
    [(512, 768, 393_216), (1024, 768, 786_432), (1024, 1600, 1_638_400), (2048, 12288, 25_165_824), (1, 1, 1)],
)
def test_parameters_are_rows_times_width(max_len, dim, count):
    assert learned_table_parameters(max_len, dim) == count


def test_parameters_match_the_module():
    emb = posviz.LearnedPositionalEmbedding(37, 11)
    assert learned_table_parameters(37, 11) == sum(p.numel() for p in emb.parameters())


@pytest.mark.parametrize(
    ("args", "error", "name"),
    [((0, 8), ValueError, "max_len"), ((8, 0), ValueError, "dim"), ((8.0, 8), TypeError, "max_len")],
)
def test_parameters_bad_arguments(args, error, name):
    with pytest.raises(error, match=name):
        learned_table_parameters(*args)


# --- cosine similarity --------------------------------------------------------------------------


def _cosine_loop(table: torch.Tensor) -> torch.Tensor:
    rows = table.tolist()
    out = torch.empty(len(rows), len(rows), dtype=torch.float64)
    for m, a in enumerate(rows):
        for n, b in enumerate(rows):
            dot = sum(x * y for x, y in zip(a, b))
            out[m, n] = dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))
    return out


def test_cosine_matches_the_formula():
    table = torch.randn(7, 5, dtype=torch.float64)
    sim = cosine_similarity_matrix(table)
    torch.testing.assert_close(sim, _cosine_loop(table), rtol=0, atol=1e-12)
    torch.testing.assert_close(sim, sim.T)
    torch.testing.assert_close(sim.diagonal(), torch.ones(7, dtype=torch.float64))


def test_cosine_ignores_the_scale_of_each_row():
    table = torch.randn(6, 4)
    scaled = table * torch.tensor([1.0, 2.0, 0.5, 10.0, 3.0, 7.0])[:, None]
    torch.testing.assert_close(cosine_similarity_matrix(scaled), cosine_similarity_matrix(table))


def test_cosine_of_the_sinusoidal_table_depends_on_the_offset_only():
    """Every sinusoidal row has norm sqrt(d/2), so S_mn = PE(m).PE(n) / (d/2) = sum_i cos((m-n) theta_i) / (d/2)."""
    length, dim = 20, 16
    sim = cosine_similarity_matrix(posviz.sinusoidal_encoding(length, dim, device="cpu", dtype=torch.float64))
    r = torch.arange(length)[:, None] - torch.arange(length)[None, :]
    expected = posviz.sinusoidal_offset_similarity(r.to(torch.float64), dim) / (dim / 2)
    torch.testing.assert_close(sim, expected, rtol=0, atol=1e-12)


def test_cosine_of_a_zero_row_is_zero():
    table = torch.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 2.0]])
    sim = cosine_similarity_matrix(table)
    assert torch.equal(sim[1], torch.zeros(3)) and torch.equal(sim[:, 1], torch.zeros(3))
    assert sim[0, 0] == 1 and sim[0, 2] == 0


@pytest.mark.parametrize(
    ("table", "error", "match"),
    [
        ([[1.0]], TypeError, "torch.Tensor"),
        (torch.ones(3, 2, dtype=torch.long), TypeError, "floating-point"),
        (torch.ones(3), ValueError, "shape"),
    ],
)
def test_cosine_bad_input(table, error, match):
    with pytest.raises(error, match=match):
        cosine_similarity_matrix(table)


# --- mean by offset ---------------------------------------------------------------------------


def test_mean_by_offset_matches_a_loop():
    matrix = torch.randn(6, 6, dtype=torch.float64)
    expected = [sum(matrix[m, m - r].item() for m in range(r, 6)) / (6 - r) for r in range(6)]
    torch.testing.assert_close(mean_by_offset(matrix), torch.tensor(expected, dtype=torch.float64))


def test_mean_by_offset_recovers_a_toeplitz_sequence():
    """A matrix that depends on m - n only is its own diagonal mean."""
    values = torch.tensor([5.0, 3.0, -1.0, 0.5, 2.0])
    r = (torch.arange(5)[:, None] - torch.arange(5)[None, :]).abs()
    torch.testing.assert_close(mean_by_offset(values[r]), values)


@pytest.mark.parametrize(
    ("matrix", "error"),
    [(torch.ones(2, 3), ValueError), (torch.ones(0, 0), ValueError), (torch.eye(2, dtype=torch.long), TypeError)],
)
def test_mean_by_offset_bad_input(matrix, error):
    with pytest.raises(error, match="matrix"):
        mean_by_offset(matrix)


# --- principal directions -----------------------------------------------------------------------


def test_explained_variance_matches_the_covariance_eigenvalues():
    table = torch.randn(15, 6, dtype=torch.float64)
    centred = table - table.mean(0)
    eig = torch.linalg.eigvalsh(centred.T @ centred).flip(0)  # sigma_k^2, largest first
    torch.testing.assert_close(explained_variance(table), eig / eig.sum(), rtol=0, atol=1e-12)


def test_a_line_has_all_its_variance_in_one_direction_and_a_ruler_coordinate():
    u = torch.tensor([3.0, 0.0, 4.0], dtype=torch.float64) / 5  # unit direction
    a = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    m = torch.arange(10, dtype=torch.float64)
    table = a + (2 * m[:, None] - 7) * u  # p_m = a + (2m - 7) u
    share = explained_variance(table)
    assert share[0].item() == pytest.approx(1.0) and share[1:].abs().max().item() < 1e-12
    t = principal_coordinates(table)[:, 0]
    torch.testing.assert_close(t, 2 * (m - m.mean()), rtol=0, atol=1e-12)


def test_principal_coordinate_sign_is_fixed_and_k_is_checked():
    table = torch.arange(8.0)[:, None] * torch.tensor([[-1.0, 1.0]])
    for flipped in (table, -table):
        t = principal_coordinates(flipped)[:, 0]
        assert t[-1] > t[0]
    with pytest.raises(ValueError, match="k"):
        principal_coordinates(table, k=3)


def test_a_constant_table_has_no_variance():
    assert torch.equal(explained_variance(torch.ones(4, 3)), torch.zeros(3))


@pytest.mark.parametrize("fn", [explained_variance, principal_coordinates])
def test_principal_bad_input(fn):
    with pytest.raises(TypeError, match="table"):
        fn([[1.0]])
    with pytest.raises(ValueError, match="table"):
        fn(torch.ones(0, 3))


# --- the task -----------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(length=st.integers(1, 12), window=st.integers(0, 15), seed=st.integers(0, 1000))
def test_sliding_window_max_matches_brute_force(length, window, seed):
    tokens = torch.randint(10, (3, length), generator=torch.Generator().manual_seed(seed))
    y = sliding_window_max(tokens, window)
    for b in range(3):
        for m in range(length):
            assert y[b, m] == max(tokens[b, max(0, m - window) : m + 1].tolist())


def test_sliding_window_edge_cases():
    tokens = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6])
    assert torch.equal(sliding_window_max(tokens, 0), tokens)
    assert torch.equal(sliding_window_max(tokens, 100), tokens.cummax(0).values)


@pytest.mark.parametrize(
    ("tokens", "window", "error", "name"),
    [
        (torch.ones(3), 1, TypeError, "tokens"),
        (torch.ones(3, dtype=torch.long), -1, ValueError, "window"),
        (torch.ones(3, dtype=torch.long), 1.5, TypeError, "window"),
    ],
)
def test_sliding_window_bad_input(tokens, window, error, name):
    with pytest.raises(error, match=name):
        sliding_window_max(tokens, window)


# --- the model ----------------------------------------------------------------------------------


def test_model_shapes_and_causality():
    model = OneLayerModel(vocab=5, max_len=9, dim=6)
    tokens = torch.randint(5, (2, 9))
    logits, weights = model(tokens)
    assert logits.shape == (2, 9, 5) and weights.shape == (2, 9, 9)
    assert torch.equal(weights.triu(1), torch.zeros_like(weights))
    changed = tokens.clone()
    changed[:, -1] = (changed[:, -1] + 1) % 5  # the last token cannot change earlier outputs
    torch.testing.assert_close(model(changed)[0][:, :-1], logits[:, :-1])


def test_model_cannot_read_past_its_table():
    model = OneLayerModel(vocab=5, max_len=9, dim=6)
    with pytest.raises(IndexError, match="max_len=9"):
        model(torch.zeros(1, 10, dtype=torch.long))


def test_positional_attention_is_the_softmax_of_the_position_scores():
    model = OneLayerModel(vocab=5, max_len=7, dim=4)
    with torch.no_grad():
        p = model.position.table.weight.double()
        q, k = p @ model.w_q.weight.double().T, p @ model.w_k.weight.double().T
        scores = (q @ k.T) / 2.0  # sqrt(d) = 2
    expected = torch.zeros(7, 7, dtype=torch.float64)
    for m in range(7):
        expected[m, : m + 1] = torch.softmax(scores[m, : m + 1], 0)
    torch.testing.assert_close(positional_attention(model).double(), expected, rtol=0, atol=1e-6)
    assert positional_attention(model, 3).shape == (3, 3)
    with pytest.raises(IndexError, match="max_len"):
        positional_attention(model, 8)
    with pytest.raises(TypeError, match="model"):
        positional_attention(torch.nn.Linear(2, 2))


# --- config and training ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"max_len": 0}, ValueError, "max_len"),
        ({"dim": 2.5}, TypeError, "dim"),
        ({"vocab": 1}, ValueError, "vocab"),
        ({"window": -1}, ValueError, "window"),
        ({"max_len": 8, "seq_len": 9}, ValueError, "seq_len"),
        ({"lr": 0.0}, ValueError, "lr"),
        ({"steps": -1}, ValueError, "steps"),
        ({"checkpoints": [0, 1]}, TypeError, "checkpoints"),
        ({"checkpoints": (-1,)}, ValueError, "checkpoints"),
    ],
)
def test_config_bad_values(kwargs, error, name):
    with pytest.raises(error, match=name):
        WindowMaxConfig(**kwargs)


def test_training_is_deterministic_and_leaves_global_state_alone():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    threads = torch.get_num_threads()
    a, b = train_window_max(SMALL), train_window_max(SMALL)
    assert torch.equal(torch.get_rng_state(), before) and torch.get_num_threads() == threads
    assert [s.step for s in a.snapshots] == [0, 10, 30]
    for x, y in zip(a.snapshots, b.snapshots):
        assert torch.equal(x.table, y.table) and torch.equal(x.attention, y.attention) and x.loss == y.loss
    assert not torch.equal(a.snapshots[0].table, a.snapshots[-1].table)
    other = train_window_max(WindowMaxConfig(max_len=12, dim=8, steps=0, checkpoints=(0,), seed=1))
    assert not torch.equal(other.snapshots[0].table, a.snapshots[0].table)


def test_snapshot_zero_is_the_initial_table_and_the_embedding_holds_it():
    run = train_window_max(SMALL)
    state = torch.get_rng_state()
    emb = run.embedding(0)
    assert torch.equal(torch.get_rng_state(), state)  # the overwritten random init used no global randomness
    assert isinstance(emb, posviz.LearnedPositionalEmbedding)
    assert torch.equal(emb.rows(SMALL.max_len), run.snapshots[0].table)
    assert run.snapshots[0].table.std().item() == pytest.approx(0.02, rel=0.3)  # N(0, 0.02^2) start
    assert torch.equal(run.embedding().table.weight, run.model.position.table.weight)


def test_training_learns_the_task():
    run = train_window_max(WindowMaxConfig(max_len=16, dim=16, steps=150, checkpoints=(0, 150), probe=128))
    first, last = run.snapshots
    assert first.accuracy < 0.2 and last.accuracy > 0.6 and last.loss < first.loss


def test_rows_no_sequence_reaches_never_move():
    run = train_window_max(WindowMaxConfig(max_len=12, dim=8, seq_len=7, steps=30, checkpoints=(0, 30), probe=16))
    first, last = run.snapshots[0].table, run.snapshots[-1].table
    assert torch.equal(first[7:], last[7:])  # no gradient, so Adam leaves them exactly as initialised
    assert not torch.equal(first[:7], last[:7])


def test_train_grid_keys_and_reuse():
    base = WindowMaxConfig(steps=0, checkpoints=(0,), probe=4)
    grid = train_grid((4, 6), (2,), (0, 1), base=base)
    assert set(grid) == {(4, 2, 0), (4, 2, 1), (6, 2, 0), (6, 2, 1)}
    again = train_grid((4,), (2,), (0,), base=base, runs=grid)
    assert again[(4, 2, 0)] is grid[(4, 2, 0)]
    different = train_grid((4,), (2,), (0,), base=WindowMaxConfig(steps=1, checkpoints=(0,), probe=4), runs=grid)
    assert different[(4, 2, 0)] is not grid[(4, 2, 0)]
    with pytest.raises(TypeError, match="base"):
        train_grid((4,), (2,), base={"steps": 1})
    with pytest.raises(TypeError, match="config"):
        train_window_max({"steps": 1})
