"""The benchmark's machinery (no timing assertions: speed is measured by `python -m posviz.bench`)."""

import json

import pytest
import torch

import posviz.bench as bench


def test_every_case_builds_and_matches_its_reference():
    """posviz and the reference compute the same thing in each benchmarked pair."""
    for case in bench.all_cases(quick=True):
        ours, ref, numel = case.setup(torch.device("cpu"))
        a = ours()
        assert numel > 0
        if ref is None or case.op.startswith("attention"):
            continue
        b = ref()
        a, b = (a[0], b[0]) if isinstance(a, tuple) else (a, b)
        torch.testing.assert_close(a.to(b.dtype), b, rtol=1e-4, atol=1e-4, msg=case.op)


def test_attention_case_matches_eager_weights():
    case = next(c for c in bench.all_cases(quick=True) if c.op.startswith("attention"))
    ours, ref, _ = case.setup(torch.device("cpu"))
    (out, w), (ref_out, ref_w) = ours(), ref()
    torch.testing.assert_close(w, ref_w, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(out, ref_out.transpose(1, 2), rtol=1e-5, atol=1e-5)


def test_measure_reports_ratios():
    case = bench.all_cases(quick=True)[0]
    row = bench.measure(case, torch.device("cpu"), budget_s=0.05)
    assert row.posviz_ms > 0 and row.reference_ms > 0 and row.copy_ms > 0
    assert row.ratio_reference == pytest.approx(row.posviz_ms / row.reference_ms)
    assert row.repeats >= 3


def test_explorers_are_discovered():
    names = bench.explorer_builders()
    for topic in ("attention", "sinusoidal", "learned", "relative", "rope", "alibi"):
        assert any(n.startswith(f"{topic}.") for n in names), names


def test_markdown_and_json_output(tmp_path):
    result = bench.run(quick=True, memory=False, explorers=False, budget_s=0.01, progress=lambda s: None)
    result["operations"]["cpu"] = result["operations"]["cpu"][:2]
    text = bench.markdown(result)
    assert "| apply_rope interleaved |" in text and result["machine"]["cpu"] in text
    json.dumps(result)
