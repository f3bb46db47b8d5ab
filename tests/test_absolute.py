import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import posviz


def formula(length: int, dim: int, base: float) -> torch.Tensor:
    """Vaswani et al. (2017) written out entry by entry."""
    pe = torch.empty(length, dim, dtype=torch.float64)
    for p in range(length):
        for i in range(dim // 2):
            pe[p, 2 * i] = math.sin(p / base ** (2 * i / dim))
            pe[p, 2 * i + 1] = math.cos(p / base ** (2 * i / dim))
    return pe


@pytest.mark.parametrize(("length", "dim", "base"), [(1, 2, 10000.0), (17, 8, 10000.0), (9, 6, 50.0), (0, 4, 10.0)])
def test_sinusoidal_matches_formula(length, dim, base, device):
    pe = posviz.sinusoidal_encoding(length, dim, base, device=device, dtype=torch.float64)
    assert pe.shape == (length, dim) and pe.device.type == device.type and pe.dtype == torch.float64
    torch.testing.assert_close(pe.cpu(), formula(length, dim, base), rtol=0, atol=1e-12)


def test_sinusoidal_matches_transformers_distilbert():
    from transformers.models.distilbert.modeling_distilbert import _create_sinusoidal_embeddings

    ref = _create_sinusoidal_embeddings(512, 768, torch.empty(512, 768))
    ours = posviz.sinusoidal_encoding(512, 768, device="cpu")
    torch.testing.assert_close(ours, ref, rtol=0, atol=2e-5)


def test_float64_is_computed_in_float64():
    p = 10**6
    pe = posviz.sinusoidal_encoding(p + 1, 4, device="cpu", dtype=torch.float64)
    assert pe[p, 0].item() == pytest.approx(math.sin(p), abs=1e-9)
    assert pe[p, 2].item() == pytest.approx(math.sin(p / 100.0), abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    p=st.integers(0, 2000),
    k=st.integers(-500, 500),
    half=st.integers(1, 16),
    base=st.sampled_from([10.0, 100.0, 10000.0]),
)
def test_shift_is_a_fixed_linear_map(p, k, half, base):
    dim = 2 * half
    pe = posviz.sinusoidal_encoding(p + 2 * abs(k) + 1, dim, base, device="cpu", dtype=torch.float64)
    m_k = posviz.sinusoidal_shift_matrix(k, dim, base, device="cpu", dtype=torch.float64)
    if p + k >= 0:
        torch.testing.assert_close(m_k @ pe[p], pe[p + k], rtol=0, atol=1e-9)
    # and the map does not depend on p: the same M_k works one position later
    torch.testing.assert_close(m_k @ pe[p + abs(k)], pe[p + abs(k) + k], rtol=0, atol=1e-9)


def test_offset_similarity_is_independent_of_p():
    dim, base = 32, 10000.0
    pe = posviz.sinusoidal_encoding(300, dim, base, device="cpu", dtype=torch.float64)
    k = torch.arange(0, 100)
    sim = posviz.sinusoidal_offset_similarity(k.double(), dim, base)
    for p in (0, 7, 150):
        torch.testing.assert_close((pe[p] * pe[p + k]).sum(-1), sim, rtol=0, atol=1e-10)
    assert sim[0].item() == pytest.approx(dim / 2)
    assert posviz.sinusoidal_offset_similarity(k, dim).dtype == torch.float32


@pytest.mark.parametrize(
    ("kwargs", "err", "msg"),
    [
        ({"length": -1, "dim": 4}, ValueError, "length must be >= 0"),
        ({"length": 4, "dim": 5}, ValueError, "dim must be a positive even integer"),
        ({"length": 4, "dim": 0}, ValueError, "dim must be >= 1"),
        ({"length": 4, "dim": 4, "base": -2.0}, ValueError, "base must be a finite number > 0"),
        ({"length": 2.5, "dim": 4}, TypeError, "length must be an integer"),
        ({"length": 10**9, "dim": 10**6}, ValueError, "sinusoidal table .* needs"),
    ],
)
def test_sinusoidal_bad_input(kwargs, err, msg):
    with pytest.raises(err, match=msg):
        posviz.sinusoidal_encoding(**kwargs, device="cpu")


def test_learned_table_shapes_and_parameter_count(device):
    emb = posviz.LearnedPositionalEmbedding(512, 768).to(device)
    assert sum(p.numel() for p in emb.parameters()) == 393_216
    assert emb(10).shape == (10, 768)
    out = emb(torch.tensor([[0, 5], [511, 3]], device=device))
    assert out.shape == (2, 2, 768)
    torch.testing.assert_close(out[1, 0], emb.table.weight[511])


def test_learned_table_refuses_positions_past_max_len():
    emb = posviz.LearnedPositionalEmbedding(16, 4)
    with pytest.raises(IndexError, match="max_len=16"):
        emb(17)
    with pytest.raises(IndexError, match="max_len=16"):
        emb(torch.tensor([3, 16]))
    with pytest.raises(IndexError, match=">= 0"):
        emb(torch.tensor([-1]))
    with pytest.raises(TypeError, match="integer tensor"):
        emb(torch.tensor([1.0]))
    with pytest.raises(ValueError, match="max_len must be >= 1"):
        posviz.LearnedPositionalEmbedding(0, 4)


@settings(max_examples=20, deadline=None)
@given(max_len=st.integers(1, 64), extra=st.integers(0, 64))
def test_learned_table_property_past_max_len(max_len, extra):
    emb = posviz.LearnedPositionalEmbedding(max_len, 2)
    assert emb(max_len).shape == (max_len, 2)
    with pytest.raises(IndexError):
        emb(torch.tensor([max_len + extra]))
