"""The figures of *Positions in today's models*: each rule's defining shape, sliders that change the
drawing, and the bug curves' limits."""

from __future__ import annotations

import json
import math

import pytest
import torch
from plotly.utils import PlotlyJSONEncoder

from posviz import rope_frequencies
from posviz.plots.models import (
    BUGS,
    RULES,
    bug_similarity,
    rope_bug_figure,
    rope_spectrum_figure,
    rule_frequencies,
    scaling_rules_figure,
)
from posviz.rope_scaling import ntk_aware_base

F64 = {"device": "cpu", "dtype": torch.float64}
DIM, BASE, L = 128, 500000.0, 8192


def encoded(value: object) -> str:
    return json.dumps(value, cls=PlotlyJSONEncoder)


def ratio(rule: str, s: float, context: int = L) -> torch.Tensor:
    return rule_frequencies(rule, DIM, BASE, s, context) / rope_frequencies(DIM, BASE, **F64)


@pytest.mark.parametrize("s", [2.0, 8.0, 32.0])
def test_each_rule_has_its_defining_shape(s: float) -> None:
    # PI divides every frequency by s
    torch.testing.assert_close(ratio("pi", s), torch.full((DIM // 2,), 1 / s, dtype=torch.float64))
    # NTK-aware keeps pair 0 and divides the slowest pair by exactly s
    ntk = ratio("ntk", s)
    assert ntk[0].item() == pytest.approx(1.0) and ntk[-1].item() == pytest.approx(1 / s)
    assert torch.all(ntk[1:] <= ntk[:-1])  # interpolated more the slower the pair
    # dynamic NTK at L' = sL is NTK-aware with the effective factor s^2 - s + 1
    torch.testing.assert_close(
        rule_frequencies("dynamic", DIM, BASE, s, L),
        rope_frequencies(DIM, ntk_aware_base(BASE, s * s - s + 1, DIM), **F64),
    )
    # YaRN and llama3 keep the fast pairs and interpolate the slow ones like PI
    lam = 2 * math.pi / rope_frequencies(DIM, BASE, **F64)
    # YaRN: 32 turns and 1 turn over L bound the ramp (its ends rounded outwards); llama3: L/4 and L
    for rule, keep_below, scale_above in (("yarn", L / 64, 2 * L), ("llama3", L / 4, L)):
        r = ratio(rule, s)
        torch.testing.assert_close(r[lam < keep_below], torch.ones_like(r[lam < keep_below]))
        torch.testing.assert_close(r[lam > scale_above], torch.full_like(r[lam > scale_above], 1 / s))


def test_rule_frequencies_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="rule must be one of"):
        rule_frequencies("ntk-by-parts", DIM, BASE, 4.0, L)
    with pytest.raises((ValueError, TypeError), match="factor"):
        rule_frequencies("pi", DIM, BASE, -1.0, L)
    with pytest.raises((ValueError, TypeError), match="context"):
        rule_frequencies("yarn", DIM, BASE, 4.0, 0)


def test_scaling_slider_and_buttons_change_the_drawing() -> None:
    factors, contexts = (2.0, 8.0), (4096, 8192)
    fig = scaling_rules_figure(DIM, BASE, factors, contexts, active=0)
    (slider,) = fig.layout.sliders
    assert [s.label for s in slider.steps] == ["2", "8"]
    ys = [step.args[0]["y"] for step in slider.steps]
    assert encoded(ys[0]) != encoded(ys[1])  # the slider moves the curves
    titles = [step.args[1]["title.text"] for step in slider.steps]
    assert titles[0] != titles[1]
    buttons = fig.layout.updatemenus[0].buttons
    assert len(buttons) == len(contexts)
    assert buttons[0].args[0]["visible"] != buttons[1].args[0]["visible"]
    assert len(fig.data) == len(contexts) * (len(RULES) + 1)


def test_spectrum_counts_the_pairs_that_turn() -> None:
    spec = {"name": "Llama 2", "dim": 128, "base": 10000.0, "scaling": None, "trained": 4096, "extended": 4096}
    scaled = dict(spec, name="Llama 3.1", base=BASE, trained=L, extended=131072, scaling={
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": L,
    })
    fig = rope_spectrum_figure([spec, scaled])
    steps = fig.layout.sliders[0].steps
    lam = 2 * math.pi / rope_frequencies(128, 10000.0, **F64)
    assert f" {int((lam <= 4096).sum())} of 64 pairs" in steps[0].args[1]["title.text"]
    assert encoded(steps[0].args[0]["y"]) != encoded(steps[1].args[0]["y"])
    with pytest.raises(ValueError, match="specs"):
        rope_spectrum_figure([])


def test_bug_curves_start_where_training_did() -> None:
    pos = torch.tensor([0.0, 1.0, 100.0, 8191.0, 8192.0, 65536.0], dtype=torch.float64)
    sims = {bug: bug_similarity(bug, pos) for bug in BUGS}
    for bug, s in sims.items():
        assert torch.all(s <= 1 + 1e-12) and torch.all(s >= -1 - 1e-12), bug
    for bug in ("llama3-dropped", "rotary-share", "layout", "prefill-only"):
        assert sims[bug][0].item() == pytest.approx(1.0)  # position 0: no rotation, no mistake
    assert sims["offset"][0].item() < 1 - 1e-3
    # half pairs read as interleaved: the pairs differ, so keys drift apart from position 1 on
    assert sims["layout"][1].item() < 1 - 1e-3 and sims["layout"][2].item() < 0.9
    # prefill-only is right before the prefill length and as wrong as dropped scaling after it
    torch.testing.assert_close(sims["prefill-only"][:4], torch.ones(4, dtype=torch.float64))
    torch.testing.assert_close(sims["prefill-only"][4:], sims["llama3-dropped"][4:])
    # far out, the pairs llama3 leaves alone (ratio 1) still agree, the others no longer do
    kept = (ratio("llama3", 8.0) == 1).double().mean().item()
    assert kept < sims["llama3-dropped"][-1].item() < 0.75
    # the exact isotropic mean: pairs rotated alike give cos of the angle difference, tr(R^T R~)/d
    plain = rope_frequencies(DIM, BASE, **F64)
    scaled = rule_frequencies("llama3", DIM, BASE, 8.0, L)
    expected = torch.cos(pos[:, None] * (plain - scaled)).mean(-1)
    torch.testing.assert_close(sims["llama3-dropped"], expected)
    torch.testing.assert_close(sims["offset"], torch.cos(2 * plain).mean().expand(len(pos)))
    with pytest.raises(ValueError, match="bug must be one of"):
        bug_similarity("sign", pos)


def test_bug_figure_has_a_view_per_bug() -> None:
    fig = rope_bug_figure(points=24)
    steps = fig.layout.sliders[0].steps
    assert len(steps) == len(BUGS) + 1 and len(fig.data) == len(BUGS) + 1
    drawn = [[len(y) > 0 for y in step.args[0]["y"]] for step in steps]
    assert drawn[0] == [True] * len(BUGS) + [True]  # "all": every curve
    for i, row in enumerate(drawn[1:]):  # one bug per step, the context line always
        assert row == [j == i for j in range(len(BUGS))] + [True]


def test_bug_figure_axis_runs_to_the_last_position_with_every_decade_labelled() -> None:
    """Issue 22: on a 390 px phone the log axis read as ending near 30k. It runs to max_position
    (autorange over data that reach it, in every slider step) and labels each decade, so the last
    label (100k) sits just before its end (131072), whatever width Plotly gets."""
    fig = rope_bug_figure(points=24)
    xaxis = fig.layout.xaxis
    assert xaxis.type == "log" and xaxis.range is None and xaxis.autorange in (None, True)
    assert xaxis.dtick == 1 and xaxis.tickvals is None  # a label at every power of ten
    for step in fig.layout.sliders[0].steps:
        ends = [max(x) for x in step.args[0]["x"][: len(BUGS)] if len(x)]
        assert ends and all(end == 131072 for end in ends), step.label


# --- the tables of released models --------------------------------------------------------------

def _cards() -> dict:
    from posviz.models import RELEASED, position_card, released_config

    return {name: position_card(released_config(name)) for name in RELEASED}


def _row(table: str, name: str) -> list[str]:
    (line,) = [ln for ln in table.splitlines() if f"({name})`" in ln]
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_family_table_reads_every_cell_from_the_card() -> None:
    from posviz.lab.tables import Table
    from posviz.plots.models import family_table

    cards = _cards()
    table, others = family_table(cards), family_table(cards, rope=False)
    assert isinstance(table, Table) and table.record  # translatable: its messages are recorded
    rope_count = sum(c.rope is not None for c in cards.values())
    assert len(table.splitlines()) == 2 + rope_count and len(others.splitlines()) == 2 + len(cards) - rope_count
    # model, pairing, base, share, scaling, position-free layers, context
    assert _row(table, "llama-3.1-8b") == [
        "`Llama (llama-3.1-8b)`", "half", "500000", "100% (128/128)", "llama3, s = 8, from L = 8192", "none", "131072"]
    assert _row(table, "gpt-j-6b")[1:4] == ["interleaved", "10000", "25% (64/256)"]
    assert _row(table, "pythia-70m")[3] == "25% (16/64)"
    assert _row(table, "gemma-3-4b")[2] == "local: 10000; global: 1000000"
    assert _row(table, "gemma-3-4b")[4] == "local: none; global: linear (PI), s = 8"
    assert _row(table, "llama-4-scout")[1] == "interleaved"
    assert _row(table, "llama-4-scout")[5] == "12 of 48: one in 4, layers 3, 7, …, 47"
    assert _row(table, "smollm3-3b")[5] == "9 of 36: one in 4, layers 3, 7, …, 35"
    assert _row(table, "deepseek-v3")[1] == "interleaved"
    assert _row(table, "deepseek-v3")[3] == "33% (64/192), one key head shared"
    assert _row(table, "gpt-oss-20b")[4] == "YaRN, s = 32, from L = 4096"
    assert _row(others, "opt-125m") == ["`OPT (opt-125m)`", "learned table, 2050 rows, offset 2", "2048"]
    assert _row(others, "mpt-7b")[1] == "ALiBi, MPT slopes (alibi_bias_max = 8)"
    assert _row(others, "bloom-560m")[2] == "none in the config"
    assert _row(others, "t5-small")[1] == "T5 buckets (32, up to distance 128), table in layer 0"


def test_family_table_translates() -> None:
    from posviz.plots.models import family_table

    table = family_table(_cards())
    zh = table.translated("zh_CN")
    header = zh.splitlines()[0]
    assert "配对方式" in header and "pairing" not in header
    assert "局部：10000；全局：1000000" in zh and "局部：无；全局：线性（PI），s = 8" in zh
    assert "| 前后半配对 |" in zh and "每 4 层一层" in zh
    assert "可学习的位置表" in family_table(_cards(), rope=False).translated("zh_CN")


def test_spectrum_table_counts() -> None:
    from posviz.plots.models import spectrum_counts, spectrum_spec, spectrum_table

    cards = _cards()
    spec = spectrum_spec("llama-3.1-8b", cards["llama-3.1-8b"])
    assert (spec["dim"], spec["base"], spec["trained"], spec["extended"]) == (128, BASE, 8192, 131072)
    counts = spectrum_counts(spec)
    lam = 2 * math.pi / rope_frequencies(128, BASE, **F64)
    scaled = 2 * math.pi / rule_frequencies("llama3", 128, BASE, 8.0, 8192)
    assert counts["turned"] == int((lam <= 8192).sum())
    assert counts["never"] == int((lam > 131072).sum()) and counts["never_scaled"] == int((scaled > 131072).sum())
    assert counts["moved"] == int((lam >= 8192 / 4).sum())  # llama3 keeps the pairs shorter than L/4
    gemma = spectrum_spec("gemma-3-4b", cards["gemma-3-4b"], layer=5)
    assert (gemma["base"], gemma["trained"]) == (1000000.0, 131072 // 8)  # linear: L_max / s
    assert spectrum_spec("gemma-3-4b", cards["gemma-3-4b"], layer=0)["scaling"] is None
    table = spectrum_table([spec, gemma])
    assert table.splitlines()[2].split("|")[4].strip() == str(counts["turned"])


def test_each_legend_name_draws_its_own_rule() -> None:
    fig = scaling_rules_figure(DIM, BASE, (8.0,), (L,), active=0)
    names = {"PI (linear)": "pi", "NTK-aware": "ntk", "dynamic NTK at L′ = sL": "dynamic", "YaRN": "yarn",
             "llama3": "llama3"}
    drawn = {trace.name: trace for trace in fig.data if trace.name in names}
    assert set(drawn) == set(names)
    for name, rule in names.items():
        expected = ratio(rule, 8.0).numpy()
        assert [float(y) for y in drawn[name].y] == pytest.approx(list(expected), rel=1e-3), name
