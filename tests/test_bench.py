"""The benchmark's machinery (no timing assertions: speed is measured by `python -m posviz.bench`)."""

import json

import pytest
import torch
from test_bench_cases import _references

import posviz.bench as bench


def test_measure_interleaves_the_runs_and_reports_medians(monkeypatch):
    """With a fake clock (each function's duration fixed) the medians, ratios and order are known."""
    calls = []
    durations = {"ours": [0.004, 0.002, 0.002, 0.002], "ref": [0.001] * 4, "copy": [0.008] * 4}

    def fake_time(fn, device):
        name = fn()
        calls.append(name)
        return durations[name][calls.count(name) - 1]

    case = bench.Case(op="fake", size="1", reference="ref", elementwise=True,
                      setup=lambda device: ((lambda: "ours"), (lambda: "ref"), 4))
    monkeypatch.setattr(bench, "_time", fake_time)
    monkeypatch.setattr(torch.Tensor, "clone", lambda self: "copy")
    row = bench.measure(case, torch.device("cpu"), budget_s=0.0)
    assert calls[:3] == ["ours", "ref", "copy"]  # warm-up once each
    assert calls[3:] == ["ours", "ref", "copy"] * row.repeats  # then interleaved
    assert row.repeats == 3  # the minimum, with no time budget
    assert row.posviz_ms == 2.0 and row.reference_ms == 1.0 and row.copy_ms == 8.0  # medians, not the warm-up
    assert row.ratio_reference == 2.0 and row.ratio_copy == 0.25


def test_explorers_are_discovered():
    names = bench.explorer_builders()
    for topic in ("attention", "sinusoidal", "learned", "relative", "rope", "alibi"):
        assert any(n.startswith(f"{topic}.") for n in names), names


def test_markdown_and_json_output(tmp_path, monkeypatch):
    _references()
    monkeypatch.setattr(bench, "keep_freed_memory", lambda: True)  # not in this test process's malloc
    result = bench.run(quick=True, memory=False, explorers=False, budget_s=0.01, progress=lambda s: None)
    result["operations"]["cpu"] = result["operations"]["cpu"][:2]
    text = bench.markdown(result)
    assert "| apply_rope interleaved |" in text and result["machine"]["cpu"] in text
    assert result["machine"]["freed_memory_kept"] is True and "freed memory kept for reuse" in text
    json.dumps(result)


def test_the_book_build_is_make_books_in_a_folder_of_its_own(monkeypatch, tmp_path):
    """--book times tools/build_book.py (what `make book` runs) twice, clean then with nothing
    changed, into a temporary build folder (POSVIZ_BUILD), never the checkout's _build."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    runs = []

    def fake_run(cmd, cwd, env, capture_output, text):
        runs.append((cmd, cwd, env["POSVIZ_BUILD"]))
        return type("Done", (), {"returncode": 0, "stdout": "", "stderr": ""})()

    monkeypatch.setattr(bench.subprocess, "run", fake_run)
    out = bench.time_book_build(root, jobs=3)
    assert set(out) == {"jobs", "clean_build_s", "cached_rebuild_s"} and out["jobs"] == 3
    assert len(runs) == 2 and runs[0] == runs[1]
    cmd, cwd, folder = runs[0]
    assert cmd[1:] == [str(root / "tools" / "build_book.py"), "--jobs", "3"] and cwd == root
    assert Path(folder) != root / "_build" and not Path(folder).exists()  # a temporary folder, removed


def test_a_failed_book_build_says_which_and_why(monkeypatch, tmp_path):
    from pathlib import Path

    done = type("Done", (), {"returncode": 2, "stdout": "WARNING: bad reference", "stderr": ""})()
    monkeypatch.setattr(bench.subprocess, "run", lambda *a, **k: done)
    with pytest.raises(RuntimeError, match=r"the book build failed \(clean_build_s\):\nWARNING: bad reference"):
        bench.time_book_build(Path(__file__).resolve().parents[1])
    with pytest.raises(RuntimeError, match="build_book.py is missing"):
        bench.time_book_build(tmp_path)


def test_freed_memory_is_kept_through_mallopt(monkeypatch):
    """glibc's mallopt, asked for no mmap threshold (M_MMAP_THRESHOLD, -3) and no trimming
    (M_TRIM_THRESHOLD, -1) below 1 GiB; False where there is no mallopt."""
    calls = []

    class Libc:
        def mallopt(self, param, value):
            calls.append((param, value))
            return 1

    monkeypatch.setattr(bench.ctypes, "CDLL", lambda name: Libc())
    assert bench.keep_freed_memory() is True
    assert calls == [(-3, 1 << 30), (-1, 1 << 30)]
    monkeypatch.setattr(bench.ctypes, "CDLL", lambda name: object())
    assert bench.keep_freed_memory() is False
