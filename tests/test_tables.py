"""posviz.tables: the chapters' printed tables as Markdown that translates (issue 26).

The Chinese edition once showed these tables as the code printed them, in English (column names
``identical: a_mn``, ``bucket (bidir.)``, ``plain (ms)``; rows ``bidirectional: first distance of
buckets 8 to 15``), while its prose pointed at them. Each table here is checked in English, made
in English and translated (what the book does), and made live in Chinese (the notebooks).
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
import torch

import posviz.i18n as i18n
from posviz.lab.tables import Table
from posviz.tables import (
    causal_signal_table,
    relative_cost_table,
    ruler_coordinates_table,
    ruler_grid_table,
    t5_bucket_starts_table,
    t5_sign_table,
    top_share_by_step_table,
    variance_share_table,
)

# Latin words a Chinese table keeps: names and units (a single letter is a symbol: m, aₘ₀, tₘ)
KEPT = {"T5", "Shaw", "ms", "CPU", "torch", "cpu", "x86_64"}


def _latin_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[A-Za-z][A-Za-z0-9_]+", text) if w not in KEPT}


def _cells(markdown: str) -> list[list[str]]:
    return [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in markdown.splitlines()
        if line.startswith("|")
    ]


@pytest.fixture
def chinese():
    i18n.set_language("zh_CN")
    yield
    i18n.set_language("en")


def _weights(length: int = 64) -> torch.Tensor:
    scores = torch.randn(length, length, generator=torch.Generator().manual_seed(0))
    return torch.softmax(scores.masked_fill(torch.ones(length, length).triu(1).bool(), float("-inf")), -1)


def _snapshots() -> list[SimpleNamespace]:
    g = torch.Generator().manual_seed(1)
    ruler = torch.arange(8, dtype=torch.float64)[:, None] * torch.randn(1, 4, generator=g, dtype=torch.float64)
    noisy = ruler + 0.01 * torch.randn(8, 4, generator=g, dtype=torch.float64)
    return [
        SimpleNamespace(step=0, table=torch.randn(8, 4, generator=g), accuracy=0.25),
        SimpleNamespace(step=200, table=noisy, accuracy=0.975),
    ]


def _all_tables() -> dict[str, Table]:
    w = _weights()
    snaps = _snapshots()
    g = torch.Generator().manual_seed(2)
    return {
        "causal": causal_signal_table((0, 1, 63), w, w, torch.linspace(-1, 1, 64), torch.rand(64, generator=g)),
        "t5-sign": t5_sign_table([(5, 0), (0, 5), (0, 200)]),
        "t5-starts": t5_bucket_starts_table(),
        "cost": relative_cost_table([{"length": 1024, "plain": 0.002, "shaw": 0.05, "t5": 0.004, "threads": 1}]),
        "variance": variance_share_table(snaps[1].table, torch.randn(8, 4, generator=g)),
        "ruler": ruler_coordinates_table(snaps[1].table),
        "steps": top_share_by_step_table(snaps),
        "grid": ruler_grid_table(
            {(8, 4, 0): SimpleNamespace(snapshots=snaps), (8, 8, 1): SimpleNamespace(snapshots=snaps)}
        ),
    }


def test_english_tables_hold_the_values() -> None:
    w, start = _weights(), _weights().roll(1, 0)  # two different weight matrices
    table = causal_signal_table((0, 63), w, start, torch.zeros(64), torch.full((64,), 2.5))
    head, _, first, last = _cells(table)
    assert head == [
        "m",
        "identical tokens: aₘ₀",
        "start token: aₘ₀",
        "start token: oₘ on the line",
        "random tokens: mean ‖oₘ‖²",
    ]
    assert first[:2] == ["0", "1.0000"] and last[0] == "63" and last[1] == f"{w[63, 0].item():.4f}"
    assert last[2] == f"{start[63, 0].item():.4f}" != last[1]
    assert last[-1] == "2.50"

    rows = _cells(t5_sign_table([(5, 0), (0, 5)]))
    assert rows[2] == ["5", "0", "5", "-5", "5", "5"]  # a key 5 back: bucket 5 both ways
    assert rows[3] == ["0", "5", "-5", "5", "21", "0"]  # 5 ahead: upper half in the encoder, 0 (masked) causal

    starts = _cells(t5_bucket_starts_table())
    assert starts[2][:2] == ["encoder (bidirectional)", "8–15"] and starts[2][2].endswith(", 64, 91")
    assert starts[3][:2] == ["decoder (causal)", "16–31"] and starts[3][2].endswith(", 99, 113")

    cost = relative_cost_table([{"length": 128, "plain": 0.001, "shaw": 0.004, "t5": 0.002, "threads": 1}])
    assert cost.startswith("machine: ") and "1 CPU thread" in cost.splitlines()[0]
    assert _cells(cost)[-1] == ["128", "1.00", "4.00", "2.00", "4.0", "2.0"]


def test_ruler_tables() -> None:
    snaps = _snapshots()
    ruler = ruler_coordinates_table(snaps[1].table)
    rows = _cells(ruler)[2:]
    assert [r[0] for r in rows] == ["0", "1", "2", "…", "5", "6", "7"]
    values = [float(r[1]) for r in rows if r[0] != "…"]
    assert values == sorted(values) and values[0] < 0 < values[-1]  # a ruler: rising through the middle
    assert ruler.endswith(
        "tₘ rises at every step of m: yes; length of the mean row ‖p̄‖ = "
        + f"{snaps[1].table.mean(0).norm().item():.2f}"
    )
    share = _cells(variance_share_table(snaps[1].table, torch.eye(8, 4)))
    assert share[0] == ["table", "v₁", "v₂", "v₃"] and float(share[2][1]) > 0.99
    assert _cells(top_share_by_step_table(snaps))[-1] == ["200", "1.00", "97.5%"]
    assert _cells(ruler_grid_table({(8, 4, 0): SimpleNamespace(snapshots=snaps)}))[-1] == [
        "4",
        "1",
        "100%–100%",
        "98%–98%",
    ]


@pytest.mark.parametrize("name", list(_all_tables()))
def test_translated_tables_leave_no_english(name: str) -> None:
    table = _all_tables()[name]
    assert isinstance(table, Table) and table.record, "an English table records its messages"
    chinese = table.translated("zh_CN")
    left = _latin_words(chinese)
    assert not left, f"{name}: English left in the Chinese table: {sorted(left)}\n{chinese}"
    assert not re.search(r"(?<![\w.])-\d", chinese), f"{name}: an ASCII minus in Chinese:\n{chinese}"
    assert len({len(row) for row in _cells(chinese)}) == 1, f"{name}: rows of unequal length:\n{chinese}"
    assert table.translated("en") == str(table)


def test_lists_and_signs_in_chinese() -> None:
    starts = t5_bucket_starts_table().translated("zh_CN")
    assert "| 编码器（双向） | 8–15 | 8、12、16、23、32、46、64、91 |" in starts, starts
    sign = t5_sign_table([(5, 0)]).translated("zh_CN")
    assert "| 5 | 0 | 5 | −5 | 5 | 5 |" in sign, sign


@pytest.mark.parametrize("name", list(_all_tables()))
def test_tables_made_in_chinese_equal_the_translated_ones(name: str, chinese: None) -> None:
    i18n.set_language("en")
    english = _all_tables()[name]
    i18n.set_language("zh_CN")
    made = _all_tables()[name]
    assert not made.record
    assert str(made) == english.translated("zh_CN")


def test_bad_input_is_a_clear_error() -> None:
    w = _weights(8)
    with pytest.raises(ValueError, match="position"):
        causal_signal_table((8,), w, w, torch.zeros(8), torch.zeros(8))
    with pytest.raises(ValueError, match="one value per position"):
        causal_signal_table((0,), w, w, torch.zeros(4), torch.zeros(8))
    with pytest.raises(ValueError, match=r"\[L, L\]"):
        causal_signal_table((0,), torch.zeros(8), w, torch.zeros(8), torch.zeros(8))
    with pytest.raises(ValueError, match=r"\(m, n\)"):
        t5_sign_table([(1, 2, 3)])
    with pytest.raises(ValueError, match="at least one timing"):
        relative_cost_table([])
    with pytest.raises(ValueError, match="lacks"):
        relative_cost_table([{"length": 8, "plain": 1.0}])
    with pytest.raises(ValueError, match="at least one snapshot"):
        top_share_by_step_table([])
    with pytest.raises(ValueError, match="at least one run"):
        ruler_grid_table({})
    with pytest.raises(ValueError, match="position"):
        ruler_coordinates_table(torch.randn(4, 2), positions=(4,))
