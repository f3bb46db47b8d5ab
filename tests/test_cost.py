"""posviz.cost: the run-time cost of relative attention (chapter *Relative position encoding*)."""

import pytest
import torch

import posviz
from posviz.cost import relative_attention_cost


def test_relative_attention_cost_rows():
    threads = torch.get_num_threads()
    rows = relative_attention_cost([8, 16], num_heads=2, head_dim=8, repeats=2)
    assert posviz.relative_attention_cost is relative_attention_cost
    assert torch.get_num_threads() == threads  # restored
    assert [row["length"] for row in rows] == [8, 16]
    for row in rows:
        assert set(row) == {"length", "plain", "shaw", "t5", "threads"} and row["threads"] == 1
        assert all(isinstance(row[key], float) and 0 < row[key] < 10 for key in ("plain", "shaw", "t5"))


@pytest.mark.parametrize(
    ("kwargs", "err", "msg"),
    [
        ({"lengths": []}, ValueError, "lengths must be a non-empty sequence"),
        ({"lengths": 128}, TypeError, "lengths must be a sequence"),
        ({"lengths": [0]}, ValueError, r"lengths\[i\] must be >= 1"),
        ({"lengths": [8], "repeats": 0}, ValueError, "repeats must be >= 1"),
        ({"lengths": [8], "num_heads": 0}, ValueError, "num_heads must be >= 1"),
        ({"lengths": [8], "max_distance": -1}, ValueError, "max_distance must be >= 0"),
        ({"lengths": [8], "num_buckets": 32, "device": "nonsense"}, ValueError, "device must be"),
        ({"lengths": [8], "num_threads": 0}, ValueError, "num_threads must be >= 1"),
    ],
)
def test_relative_attention_cost_bad_input(kwargs, err, msg):
    with pytest.raises(err, match=msg):
        relative_attention_cost(**kwargs)
