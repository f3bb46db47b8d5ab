import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import posviz

TRANSFORMERS = "transformers is a test extra (the reference implementation): pip install -e '.[test]'"


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
    """DistilBERT's table (sines in the even columns, as here). The helper fills ``out`` in place in
    every transformers version; what it returns does not stay the same (None before 4.57, ``out``
    later), so the test reads ``out``."""
    pytest.importorskip("transformers", reason=TRANSFORMERS)
    from transformers.models.distilbert import modeling_distilbert

    fill = getattr(modeling_distilbert, "_create_sinusoidal_embeddings", None) or getattr(
        modeling_distilbert, "create_sinusoidal_embeddings", None
    )
    if fill is None:
        pytest.fail("transformers' DistilBERT has no (_)create_sinusoidal_embeddings: update this reference")
    ref = torch.empty(512, 768)
    fill(512, 768, ref)  # fills ref
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
    assert emb.rows(10).shape == (10, 768)
    out = emb(torch.tensor([[0, 5], [511, 3]], device=device))
    assert out.shape == (2, 2, 768)
    torch.testing.assert_close(out[1, 0], emb.table.weight[511])


def test_learned_table_refuses_positions_past_max_len():
    emb = posviz.LearnedPositionalEmbedding(16, 4)
    with pytest.raises(IndexError, match="max_len=16"):
        emb.rows(17)
    with pytest.raises(IndexError, match="max_len=16"):
        emb(torch.tensor([3, 16]))
    with pytest.raises(IndexError, match=">= 0"):
        emb(torch.tensor([-1]))
    with pytest.raises(TypeError, match="integer tensor"):
        emb(torch.tensor([1.0]))
    with pytest.raises(ValueError, match="max_len must be >= 1"):
        posviz.LearnedPositionalEmbedding(0, 4)


def test_learned_table_takes_positions_like_nn_embedding():
    """One meaning for the argument: positions (a 0-d tensor is one row), never a length."""
    emb = posviz.LearnedPositionalEmbedding(16, 4)
    torch.testing.assert_close(emb(torch.tensor(5)), emb.table.weight[5])
    assert emb(torch.tensor(5)).shape == (4,)
    torch.testing.assert_close(emb.rows(6), emb.table.weight[:6])
    ref = torch.nn.Embedding(16, 4)
    ref.weight.data.copy_(emb.table.weight.data)
    idx = torch.tensor([[1, 2], [15, 0]])
    torch.testing.assert_close(emb(idx), ref(idx))
    with pytest.raises(TypeError, match=r"emb.rows\(n\)"):
        emb(5)
    with pytest.raises(ValueError, match="length must be >= 0"):
        emb.rows(-1)


@settings(max_examples=20, deadline=None)
@given(max_len=st.integers(1, 64), extra=st.integers(0, 64))
def test_learned_table_property_past_max_len(max_len, extra):
    emb = posviz.LearnedPositionalEmbedding(max_len, 2)
    assert emb.rows(max_len).shape == (max_len, 2)
    with pytest.raises(IndexError):
        emb(torch.tensor([max_len + extra]))


# --- sinusoidal chapter additions: phase coverage and the binary counter ---


@pytest.mark.parametrize(
    ("length", "dim", "base"), [(1, 4, 10000.0), (100, 128, 10000.0), (7, 6, 3.0), (512, 512, 1e4)]
)
def test_phase_coverage_matches_formula(length, dim, base):
    got = posviz.absolute.sinusoidal_phase_coverage(length, dim, base, device="cpu", dtype=torch.float64)
    want = [min(1.0, (length - 1) / (2 * math.pi * base ** (2 * i / dim))) for i in range(dim // 2)]
    assert got.shape == (dim // 2,)
    torch.testing.assert_close(got, torch.tensor(want, dtype=torch.float64), rtol=1e-12, atol=0)


def test_phase_coverage_is_what_the_table_sweeps():
    """Defining property: c_i = 1 exactly when some p < L has gone once around pair i's circle."""
    length, dim = 100, 128
    cover = posviz.absolute.sinusoidal_phase_coverage(length, dim, device="cpu", dtype=torch.float64)
    pe = posviz.sinusoidal_encoding(length, dim, device="cpu", dtype=torch.float64)
    angle = torch.atan2(pe[:, 0::2], pe[:, 1::2])  # p * theta_i, wrapped to (-pi, pi]
    step = torch.remainder(angle[1:] - angle[:-1], 2 * math.pi)  # unwrap: each step turns by < 2 pi
    turns = step.sum(0) / (2 * math.pi)  # turns made between p = 0 and p = L - 1, read off the table
    torch.testing.assert_close(cover, turns.clamp(max=1.0), rtol=0, atol=1e-9)
    assert torch.equal(turns >= 1, cover == 1.0)
    assert int((cover == 1.0).sum()) == 20  # lambda_i = 2 pi 10^(i/16) <= 99 for i <= 19
    assert (cover[1:] <= cover[:-1]).all()  # slower pairs sweep less
    longer = posviz.absolute.sinusoidal_phase_coverage(4 * length, dim, device="cpu", dtype=torch.float64)
    assert (longer >= cover).all() and (longer > cover).any()
    assert posviz.absolute.sinusoidal_phase_coverage(1, dim, device="cpu").eq(0).all()


@pytest.mark.parametrize(
    ("kwargs", "err", "msg"),
    [
        ({"length": 0, "dim": 4}, ValueError, "length must be >= 1"),
        ({"length": 2.0, "dim": 4}, TypeError, "length must be an integer"),
        ({"length": 4, "dim": 3}, ValueError, "dim must be a positive even integer"),
        ({"length": 4, "dim": 4, "base": 0.0}, ValueError, "base must be a finite number > 0"),
    ],
)
def test_phase_coverage_bad_input(kwargs, err, msg):
    with pytest.raises(err, match=msg):
        posviz.absolute.sinusoidal_phase_coverage(**kwargs, device="cpu")


def test_binary_counter_matches_the_binary_digits():
    p = torch.arange(0, 300)
    got = posviz.absolute.binary_counter_waves(p, 9)
    for q in range(300):
        digits = format(q, "09b")[::-1]  # digit k of q, written independently
        assert got[q].tolist() == [1.0 if c == "0" else -1.0 for c in digits]
    assert got.dtype == torch.float32 and got.shape == (300, 9)


@settings(max_examples=40, deadline=None)
@given(p=st.integers(-(2**40), 2**40), k=st.integers(0, 40))
def test_binary_counter_is_the_sign_of_a_sine(p, k):
    """s_k(p) = sgn sin(pi (p + 1/2) / 2^k) at every integer p, and it flips every 2^k positions."""
    square = posviz.absolute.binary_counter_waves(torch.tensor([p, p + 2**k, p + 2 ** (k + 1)]), k + 1)[:, k]
    smooth = posviz.absolute.binary_counter_waves(torch.tensor([float(p)], dtype=torch.float64), k + 1, smooth=True)
    want = 1.0 - 2.0 * ((p // 2**k) % 2)
    assert square[0].item() == want and square[1].item() == -want and square[2].item() == want
    if abs(p) < 2**20:  # the sine argument stays exact in float64
        assert math.copysign(1.0, smooth[0, k].item()) == want
        assert smooth[0, k].item() == pytest.approx(math.sin(math.pi * (p + 0.5) / 2**k), abs=1e-9)


def test_binary_counter_smooth_dtypes():
    x = torch.linspace(0, 8, 17)
    assert posviz.absolute.binary_counter_waves(x, 3, smooth=True).dtype == torch.float32
    assert posviz.absolute.binary_counter_waves(torch.arange(4), 3, smooth=True).dtype == torch.float32
    y = posviz.absolute.binary_counter_waves(x.double(), 3, smooth=True)
    assert y.dtype == torch.float64 and y.shape == (17, 3)


@pytest.mark.parametrize(
    ("args", "kwargs", "err", "msg"),
    [
        (([0, 1], 3), {}, TypeError, "positions must be a torch.Tensor"),
        ((torch.tensor([0.5]), 3), {}, TypeError, "positions must be an integer tensor"),
        ((torch.tensor([True]), 3), {}, TypeError, "positions must be an integer or real tensor"),
        ((torch.arange(3), 0), {}, ValueError, r"bits must be in \[1, 62\]"),
        ((torch.arange(3), 63), {"smooth": True}, ValueError, r"bits must be in \[1, 62\]"),
    ],
)
def test_binary_counter_bad_input(args, kwargs, err, msg):
    with pytest.raises(err, match=msg):
        posviz.absolute.binary_counter_waves(*args, **kwargs)


def test_offset_similarity_bad_input():
    with pytest.raises(TypeError, match="offsets must be a torch.Tensor"):
        posviz.sinusoidal_offset_similarity([1, 2], 8)
    with pytest.raises(TypeError, match="offsets must be a real"):
        posviz.sinusoidal_offset_similarity(torch.tensor([True]), 8)
    with pytest.raises(ValueError, match="dim must be a positive even integer"):
        posviz.sinusoidal_offset_similarity(torch.arange(3), 7)
    with pytest.raises(ValueError, match="base must be a finite number > 0"):
        posviz.sinusoidal_offset_similarity(torch.arange(3), 8, base=-1.0)


@pytest.mark.parametrize(
    ("call", "err", "msg"),
    [
        (lambda: posviz.sinusoidal_shift_matrix(float("nan"), 4), ValueError, "offset must be a finite number, got"),
        (lambda: posviz.sinusoidal_shift_matrix("1", 4), TypeError, "offset must be a real number"),
        (lambda: posviz.sinusoidal_shift_matrix(torch.tensor([1, 2]), 4), ValueError, "offset must be a single number"),
        (lambda: posviz.sinusoidal_encoding(4, 4, base=10**400), ValueError,
         "base must be a finite number > 0, got a value .int. beyond float64's range"),
        (lambda: posviz.sinusoidal_encoding(4, 4, device="cuda:99"), ValueError, "device 'cuda:99' is not available"),
    ],
)
def test_shift_and_base_bad_input(call, err, msg):
    with pytest.raises(err, match=msg):
        call()


def test_shift_matrix_takes_a_one_element_tensor():
    torch.testing.assert_close(posviz.sinusoidal_shift_matrix(torch.tensor(3), 4, device="cpu"),
                               posviz.sinusoidal_shift_matrix(3, 4, device="cpu"))
