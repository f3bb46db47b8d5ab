"""posviz.cope: CoPE (Golovneva et al. 2024), positions counted by gates, embeddings read between rows."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from posviz.cope import CoPE, cope_interpolate, cope_positions


def _scores(T: int = 6, seed: int = 0) -> torch.Tensor:
    return torch.randn(2, 3, T, T, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))


def test_position_is_the_sum_of_the_gates_between_key_and_query():
    s = _scores()
    p = cope_positions(s)
    T = s.shape[-1]
    for i in range(T):
        for j in range(T):
            expected = sum(1 / (1 + math.exp(-float(s[0, 1, i, k]))) for k in range(j, i + 1)) if j <= i else 0.0
            assert float(p[0, 1, i, j]) == pytest.approx(expected, rel=1e-12, abs=1e-15), (i, j)


def test_future_keys_open_no_gate_and_every_open_gate_counts_a_token():
    s = _scores()
    later = s.clone()
    later[..., torch.ones(6, 6, dtype=torch.bool).triu(1)] = 50.0  # keys after the query: ignored
    assert torch.equal(cope_positions(later), cope_positions(s))
    all_open = cope_positions(torch.full((5, 5), 40.0, dtype=torch.float64))  # every gate 1
    i, j = torch.meshgrid(torch.arange(5), torch.arange(5), indexing="ij")
    expected = torch.where(j <= i, (i - j + 1).double(), torch.zeros(5, 5, dtype=torch.float64))
    assert torch.allclose(all_open, expected)  # relative position in tokens, counted from 1
    closed = cope_positions(torch.full((5, 5), -40.0, dtype=torch.float64))  # every gate shut
    assert float(closed.max()) < 1e-15
    # not causal: every key's gate counts, to the end of the row
    both = cope_positions(torch.full((3, 3), 40.0, dtype=torch.float64), causal=False)
    assert torch.allclose(both, torch.tensor([[3.0, 2.0, 1.0]] * 3, dtype=torch.float64))


def test_positions_are_clipped_at_p_max():
    p = cope_positions(torch.full((8, 8), 40.0, dtype=torch.float64), max_position=3.5)
    assert float(p.max()) == 3.5 and float(p[2, 0]) == pytest.approx(3.0)


def test_interpolation_reads_between_integer_rows():
    z = torch.tensor([[[0.0, 10.0, 30.0, 70.0]]], dtype=torch.float64)  # z[t] for t = 0..3, one query
    p = torch.tensor([[[0.0, 1.0, 1.25, 2.5, 3.0]]], dtype=torch.float64)
    out = cope_interpolate(z, p)
    assert out.tolist() == [[[0.0, 10.0, 15.0, 50.0, 70.0]]]  # integers: the row; between: linear
    ps = torch.linspace(1, 2, 11, dtype=torch.float64)[None, None]
    line = cope_interpolate(z, ps)[0, 0]
    assert torch.allclose(line, 10.0 + 20.0 * (ps[0, 0] - 1))  # linear between rows 1 and 2


def test_cope_logits_are_q_times_the_interpolated_embedding():
    torch.manual_seed(0)
    cope = CoPE(4, 3).double()
    q = torch.randn(1, 2, 5, 4, dtype=torch.float64)
    s = _scores(5)[:1, :2]
    out = cope(q, s).detach()
    p = cope_positions(s, max_position=3)
    e = cope.table.detach()
    for h in range(2):
        for i in range(5):
            for j in range(i + 1):
                pij = float(p[0, h, i, j])
                lo, hi = math.floor(pij), math.ceil(pij)
                e_p = (pij - lo) * e[hi] + (1 - pij + lo) * e[lo]  # the paper's e[p]
                assert float(out[0, h, i, j]) == pytest.approx(float(q[0, h, i] @ e_p), rel=1e-12, abs=1e-14)


class _PaperCoPE(nn.Module):
    """The paper's listing (Golovneva et al. 2024, its CoPE class), as published: pos_emb [1, d, npos_max]."""

    def __init__(self, npos_max: int, head_dim: int) -> None:
        super().__init__()
        self.npos_max = npos_max
        self.pos_emb = nn.Parameter(torch.zeros(1, head_dim, npos_max))

    def forward(self, query: torch.Tensor, attn_logits: torch.Tensor) -> torch.Tensor:
        gates = torch.sigmoid(attn_logits)
        pos = gates.flip(-1).cumsum(dim=-1).flip(-1)
        pos = pos.clamp(max=self.npos_max - 1)
        pos_ceil = pos.ceil().long()
        pos_floor = pos.floor().long()
        logits_int = torch.matmul(query, self.pos_emb)
        logits_ceil = logits_int.gather(-1, pos_ceil)
        logits_floor = logits_int.gather(-1, pos_floor)
        w = pos - pos_floor
        return logits_ceil * w + logits_floor * (1 - w)


def test_cope_matches_the_papers_code():
    torch.manual_seed(1)
    T, d, p_max = 7, 8, 4
    mine = CoPE(d, p_max).double()
    paper = _PaperCoPE(p_max + 1, d).double()
    with torch.no_grad():
        paper.pos_emb.copy_(mine.table.T[None])
    q, k = torch.randn(2, 3, T, d, dtype=torch.float64), torch.randn(2, 3, T, d, dtype=torch.float64)
    logits = q @ k.transpose(-1, -2) / math.sqrt(d)
    mask = torch.ones(T, T, dtype=torch.float64).tril()
    ours = mine(q, logits)
    theirs = paper(q, logits + mask.log())  # the paper adds the causal mask's log before CoPE
    below = mask.bool()
    assert torch.allclose(ours[..., below], theirs[..., below], rtol=0, atol=1e-13)


def test_gradients_reach_the_table_and_the_gates():
    torch.manual_seed(2)
    cope = CoPE(4, 6).double()
    q = torch.randn(1, 1, 5, 4, dtype=torch.float64, requires_grad=True)
    k = torch.randn(1, 1, 5, 4, dtype=torch.float64, requires_grad=True)
    cope(q, q @ k.transpose(-1, -2) / 2).sum().backward()
    assert float(cope.table.grad.abs().sum()) > 0
    assert k.grad is not None and float(k.grad.abs().sum()) > 0  # only through the gates


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: cope_positions(torch.zeros(3)), ValueError, "scores must have shape"),
        (lambda: cope_positions(torch.zeros(3, 4)), ValueError, "causal CoPE needs square scores"),
        (lambda: cope_positions(torch.zeros(3, 3), causal=1), TypeError, "causal must be True or False"),
        (lambda: cope_positions(torch.zeros(3, 3), max_position=0), ValueError, "max_position must be"),
        (lambda: cope_positions(torch.zeros(3, 3, dtype=torch.long)), TypeError, "scores must be a floating"),
        (lambda: cope_interpolate(torch.zeros(1, 3), torch.full((1, 2), 2.5)), ValueError, r"must lie in \[0, 2\]"),
        (lambda: cope_interpolate(torch.zeros(2, 3), torch.zeros(1, 2)), ValueError, "leading shape"),
        (lambda: CoPE(4, 0), ValueError, "max_position must be >= 1"),
        (lambda: CoPE(4, 2)(torch.zeros(1, 3, 5), torch.zeros(1, 3, 3)), ValueError, "head_dim=4"),
    ],
)
def test_bad_input_names_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()
