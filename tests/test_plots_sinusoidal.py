"""posviz.plots.sinusoidal: the chapter's slider figures hold posviz's numbers, one state per step."""

from __future__ import annotations

import json

import numpy as np
import plotly.io as pio
import pytest
import torch

import posviz
from posviz.absolute import binary_counter_waves, sinusoidal_phase_coverage
from posviz.plots.sinusoidal import (
    BASES,
    binary_counter_figure,
    sinusoidal_extrapolation_figure,
    sinusoidal_heatmap_figure,
    sinusoidal_similarity_figure,
    sinusoidal_waves_figure,
)

CPU = torch.device("cpu")


def _steps(fig):
    (slider,) = fig.layout.sliders
    return slider.steps


def _data(fig, step: int, key: str, trace: int) -> np.ndarray:
    stepped = _steps(fig)[step].args[0]
    if key not in stepped:  # the same in every step: stored once, in the trace
        return np.asarray(fig.data[trace][key], dtype=float)
    return np.asarray(stepped[key][trace], dtype=float)


def _step_of(fig, label: str) -> int:
    return [s.label for s in _steps(fig)].index(label)


def _assert_readable(fig, *, axes=("xaxis", "yaxis")) -> None:
    assert 400 <= fig.layout.height <= 540
    assert fig.layout.title.text
    for axis in axes:
        assert fig.layout[axis].title.text, axis


def _assert_steps_differ(fig, key: str, trace: int) -> None:
    steps = _steps(fig)
    assert len(steps) >= 2
    first = _data(fig, 0, key, trace)
    assert any(
        _data(fig, s, key, trace).shape != first.shape or not np.allclose(_data(fig, s, key, trace), first)
        for s in range(1, len(steps))
    )
    for a in range(len(steps)):  # every pair of steps, not just the first against the rest
        for b in range(a + 1, len(steps)):
            x, y = _data(fig, a, key, trace), _data(fig, b, key, trace)
            assert x.shape != y.shape or not np.array_equal(x, y), (a, b)


@pytest.fixture(scope="module")
def heatmap():
    return sinusoidal_heatmap_figure(length=16, dims=(8, 32), bases=(10.0, 100.0, 1e4))


def test_heatmap_steps_views_and_values(heatmap) -> None:
    fig = heatmap
    _assert_readable(fig)
    assert [s.label for s in _steps(fig)] == ["10", "100", "10,000"]
    assert fig.layout.sliders[0].active == 2
    _assert_steps_differ(fig, "z", 0)
    _assert_steps_differ(fig, "z", 1)
    for view, d in enumerate((8, 32)):
        for label, base in (("100", 100.0), ("10,000", 1e4)):
            want = posviz.sinusoidal_encoding(16, d, base, device=CPU).double().numpy()
            # cells hold 100 PE(p, j) as integers (a byte each on the page)
            np.testing.assert_allclose(_data(fig, _step_of(fig, label), "z", view) / 100, want, atol=5e-3, rtol=0)
    # the first drawn state is the active step (base 10000), and d = 8 is the first view
    assert np.asarray(fig.data[0].z).dtype == np.int8
    np.testing.assert_allclose(
        np.asarray(fig.data[0].z) / 100, posviz.sinusoidal_encoding(16, 8, device=CPU).numpy(), atol=5e-3, rtol=0
    )
    (menu,) = fig.layout.updatemenus
    assert [b.label for b in menu.buttons] == ["d = 8", "d = 32"]
    assert [b.args[0]["visible"] for b in menu.buttons] == [[True, False], [False, True]]
    assert fig.data[0].zmin == -100 and fig.data[0].zmax == 100 and fig.data[0].colorbar.title.text
    assert list(fig.data[0].colorbar.ticktext) == ["−1", "−0.5", "0", "0.5", "1"]


def test_heatmap_default_is_the_chapter_figure() -> None:
    fig = sinusoidal_heatmap_figure()
    assert len(_steps(fig)) == len(BASES) and len(fig.data) == 3
    assert _data(fig, 0, "z", 2).shape == (64, 256)
    assert len(pio.to_json(fig)) < 2_000_000  # the page carries every state
    from posviz.sphinxext import plotly_html

    assert len(plotly_html(json.loads(fig.to_json()))) < 400_000  # as the page stores it


def test_binary_counter_figure() -> None:
    fig = binary_counter_figure(length=32, bits=5)
    _assert_readable(fig)
    assert len(_steps(fig)) == 5
    _assert_steps_differ(fig, "y", 0)
    _assert_steps_differ(fig, "y", 1)
    p = torch.arange(32)
    fine = torch.arange(0, 31 * 8 + 1, dtype=torch.float64) / 8
    square = binary_counter_waves(p, 5).numpy()
    smooth = binary_counter_waves(fine, 5, smooth=True).numpy()
    for k in (0, 3):
        np.testing.assert_array_equal(_data(fig, k, "y", 0), square[:, k])
        np.testing.assert_allclose(_data(fig, k, "y", 1), smooth[:, k], atol=5e-4, rtol=0)
        np.testing.assert_allclose(_data(fig, k, "x", 1), fine.numpy(), atol=5e-4, rtol=0)
    assert "every 8 positions" in _steps(fig)[3].args[1]["title.text"]


def test_waves_figure() -> None:
    fig = sinusoidal_waves_figure(length=40, dim=16, base=100.0, pairs=(0, 3, 7))
    _assert_readable(fig)
    assert [s.label for s in _steps(fig)] == ["0", "3", "7"]
    for trace in range(3):
        _assert_steps_differ(fig, "y" if trace < 2 else "x", trace)
    pe = posviz.sinusoidal_encoding(40, 16, 100.0, device=CPU).double().numpy()
    lam = posviz.wavelengths(16, 100.0, device=CPU, dtype=torch.float64).numpy()
    for step, i in enumerate((0, 3, 7)):
        np.testing.assert_allclose(_data(fig, step, "y", 0), pe[:, 2 * i], atol=5e-4, rtol=0)
        np.testing.assert_allclose(_data(fig, step, "y", 1), pe[:, 2 * i + 1], atol=5e-4, rtol=0)
        np.testing.assert_allclose(_data(fig, step, "x", 2), [lam[i]] * 2)
    with pytest.raises(ValueError, match=r"pairs must lie in \[0, 7\]"):
        sinusoidal_waves_figure(dim=16, pairs=(8,))


def test_similarity_figure() -> None:
    fig = sinusoidal_similarity_figure(max_offset=50, dims=(8, 64), bases=(10.0, 1e4))
    _assert_readable(fig)
    _assert_steps_differ(fig, "y", 0)
    _assert_steps_differ(fig, "y", 1)
    k = torch.arange(-50, 51, dtype=torch.float64)
    for step, base in enumerate((10.0, 1e4)):
        for trace, d in enumerate((8, 64)):
            want = (posviz.sinusoidal_offset_similarity(k, d, base) / (d / 2)).numpy()
            got = _data(fig, step, "y", trace)
            np.testing.assert_allclose(got, want, atol=1e-4, rtol=0)
            assert got[50] == 1.0 and np.allclose(got, got[::-1])  # 1 at k = 0, symmetric in k
    np.testing.assert_array_equal(_data(fig, 0, "x", 0), np.arange(-50, 51))
    with pytest.raises(ValueError, match="active_base"):
        sinusoidal_similarity_figure(bases=(10.0, 100.0), active_base=1e4)


def test_extrapolation_figure() -> None:
    fig = sinusoidal_extrapolation_figure(train_length=20, factor=3, dim=16, base=100.0, pairs=(0, 4, 7))
    _assert_readable(fig, axes=("xaxis", "yaxis", "xaxis2", "yaxis2"))
    for trace in (0, 1, 4):
        _assert_steps_differ(fig, "x", trace)
    pe = posviz.sinusoidal_encoding(60, 16, 100.0, device=CPU).double().numpy()
    seen = sinusoidal_phase_coverage(20, 16, 100.0, device=CPU, dtype=torch.float64).numpy()
    reach = sinusoidal_phase_coverage(60, 16, 100.0, device=CPU, dtype=torch.float64).numpy()
    for step, i in enumerate((0, 4, 7)):
        np.testing.assert_allclose(_data(fig, step, "x", 1), pe[:20, 2 * i + 1], atol=5e-4, rtol=0)  # cos
        np.testing.assert_allclose(_data(fig, step, "y", 1), pe[:20, 2 * i], atol=5e-4, rtol=0)  # sin
        np.testing.assert_allclose(_data(fig, step, "y", 0), pe[20:, 2 * i], atol=5e-4, rtol=0)
        np.testing.assert_allclose(_data(fig, step, "y", 4), [seen[i], reach[i]], atol=5e-4, rtol=0)
    np.testing.assert_allclose(_data(fig, 0, "y", 2), seen, atol=5e-4, rtol=0)
    np.testing.assert_allclose(_data(fig, 0, "y", 3), reach, atol=5e-4, rtol=0)
    assert fig.layout.yaxis.scaleanchor == "x"  # circles stay round
    with pytest.raises(ValueError, match="factor"):
        sinusoidal_extrapolation_figure(factor=1)


def test_figures_are_deterministic() -> None:
    make = lambda: sinusoidal_extrapolation_figure(train_length=10, dim=8, pairs=(0, 3))  # noqa: E731
    assert pio.to_json(make()) == pio.to_json(make())
