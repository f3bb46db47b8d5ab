"""posviz.plots._numbers: how the pages store numbers."""

import json

import numpy as np
import torch

from posviz.plots._numbers import as_numpy, rounded, significant


def test_significant_digits():
    got = significant(np.array([0.39346934, 1234567.0, -2.5e-7, 0.0, 1e-40, 1.0]))
    np.testing.assert_array_equal(got, [0.3935, 1235000.0, -2.5e-7, 0.0, 0.0, 1.0])
    assert json.dumps(got.tolist()) == "[0.3935, 1235000.0, -2.5e-07, 0.0, 0.0, 1.0]"
    assert significant([123.456], 2).tolist() == [120.0]


def test_rounded_decimals_and_tensors_on_any_dtype():
    t = torch.tensor([[0.123456, -0.98765]], dtype=torch.bfloat16)
    assert rounded(t, 2).dtype == np.float64
    np.testing.assert_array_equal(rounded(torch.tensor([0.123456, -0.98765], dtype=torch.float64), 3), [0.123, -0.988])
    assert as_numpy(torch.ones(2, requires_grad=True)).tolist() == [1.0, 1.0]
