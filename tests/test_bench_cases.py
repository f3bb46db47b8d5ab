"""posviz.bench_cases: each benchmarked pair computes the same thing, posviz and its reference."""

import pytest
import torch

from posviz.bench_cases import all_cases

REFERENCES = ("transformers", "rotary_embedding_torch", "x_transformers")


def _references() -> None:
    """The benchmark's references are test extras: skip, with the reason, when one is missing."""
    for name in REFERENCES:
        pytest.importorskip(name, reason=f"{name} is a test extra (a benchmark reference): pip install -e '.[test]'")


def test_every_case_builds_and_matches_its_reference():
    """posviz and the reference compute the same thing in each benchmarked pair."""
    _references()
    for case in all_cases(quick=True):
        ours, ref, numel = case.setup(torch.device("cpu"))
        a = ours()
        assert numel > 0
        assert (ref is None) == (case.reference == ""), case.op  # a named reference is always run
        if ref is None or case.op.startswith("attention"):  # attention: compared in the next test
            continue
        b = ref()
        a, b = (a[0], b[0]) if isinstance(a, tuple) else (a, b)
        torch.testing.assert_close(a.to(b.dtype), b, rtol=1e-4, atol=1e-4, msg=case.op)


def test_attention_case_matches_eager_weights():
    _references()
    case = next(c for c in all_cases(quick=True) if c.op.startswith("attention"))
    ours, ref, _ = case.setup(torch.device("cpu"))
    (out, w), (ref_out, ref_w) = ours(), ref()
    torch.testing.assert_close(w, ref_w, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(out, ref_out.transpose(1, 2), rtol=1e-5, atol=1e-5)
