"""posviz.lab, the train-short/test-long experiment's results side: the end-to-end smoke run (one
module-scoped run that every test reading it shares), results schema, figures, tables, CLI, the
published run. The data, model plug-ins, causality and determinism are in test_lab_model.py."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from test_lab_rules import tiny_cfg

import posviz
from posviz.lab import ALL_METHODS, LabConfig, run_experiment
from posviz.lab.results import load_results, save_results, validate_results
from posviz.lab.tables import format_tables

pytestmark = pytest.mark.usefixtures("one_torch_thread", "restore_determinism")


# --- end to end ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_results():
    return run_experiment(tiny_cfg(list(ALL_METHODS)), progress=False)  # test_lab_rules.py's tiny run


def test_smoke_end_to_end_schema_and_finite_numbers(tiny_results, tmp_path):
    r = tiny_results
    validate_results(r)
    assert r["eval_lengths"] == [8, 16, 32]
    assert r["method_order"] == list(ALL_METHODS)
    assert r["data"]["eval_scored_tokens"] == 256
    for name, m in r["methods"].items():
        assert [s["seed"] for s in m["seeds"]] == [0, 1]
        ppl = m["aggregate"]["perplexity"]
        if name == "learned":
            assert all(isinstance(v, float) and math.isfinite(v) for v in ppl["mean"][:1])
            assert ppl["mean"][1:] == [None, None]
            for s in m["seeds"]:
                assert s["perplexity"][1:] == [None, None]
                assert all("past the learned table" in reason for reason in s["cannot_run"][1:])
            assert m["memory"]["inference_peak_bytes"][1:] == [None, None]
        else:
            assert all(isinstance(v, float) and math.isfinite(v) and v > 1 for v in ppl["mean"]), name
            assert all(reason is None for s in m["seeds"] for reason in s["cannot_run"])
            assert all(v > 0 for v in m["aggregate"]["inference_tokens_per_cpu_s"]["mean"])
        if m["trained_as"] == name:
            assert m["aggregate"]["train_tokens_per_s"]["mean"] > 0
            assert m["aggregate"]["train_tokens_per_cpu_s"]["mean"] > 0
            assert m["memory"]["train"]["total_bytes"] > m["memory"]["train"]["param_bytes"] > 0
        else:
            assert m["trained_as"] == "rope" and m["memory"]["train"] is None
    # the variants reuse the rope model: identical at the training length
    assert r["methods"]["rope-pi"]["seeds"][0]["perplexity"][0] == r["methods"]["rope"]["seeds"][0]["perplexity"][0]
    path = save_results(r, tmp_path / "results.json")
    assert load_results(path) == json.loads(json.dumps(r))
    assert "cannot run" in format_tables(r)


def test_validate_rejects_a_number_where_a_method_cannot_run(tiny_results):
    broken = json.loads(json.dumps(tiny_results))
    broken["methods"]["learned"]["seeds"][0]["perplexity"][2] = 3.0
    with pytest.raises(ValueError, match="number xor a reason"):
        validate_results(broken)
    broken = json.loads(json.dumps(tiny_results))
    del broken["data"]["sha256"]["heldout"]
    with pytest.raises(ValueError, match="sha256"):
        validate_results(broken)


def test_figures(tiny_results, tmp_path):
    from posviz.lab.figures import cost_figure, perplexity_figure, write_figures

    fig = perplexity_figure(tiny_results)
    assert len(fig.data) == len(ALL_METHODS)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert "perplexity" in fig.layout.yaxis.title.text and fig.layout.xaxis.title.text
    assert fig.layout.title.text and len(fig.layout.updatemenus) == 2
    learned = next(t for t in fig.data if t.name.startswith("learned"))
    assert learned.y[0] is not None and list(learned.y[1:]) == [None, None]
    cost = cost_figure(tiny_results)
    assert cost.layout.title.text and any(t.type == "bar" for t in cost.data)
    small = write_figures(tiny_results, tmp_path / "cdn", include_plotlyjs="cdn")  # explicit opt-in only
    assert all(p.stat().st_size < 1_000_000 for p in small)
    paths = write_figures(tiny_results, tmp_path)  # default: plotly.js inside, no CDN
    for path in paths:
        text = path.read_text()
        assert path.stat().st_size > 1_000_000 and not re.search(r"<script[^>]*src=[\"']?https?://", text)


def test_config_rejects_bad_input():
    with pytest.raises(ValueError, match="unknown method"):
        LabConfig(methods=["sinus"])
    with pytest.raises(ValueError, match="divide"):
        LabConfig(eval_multipliers=[1, 3, 4])
    assert LabConfig(methods=["rope-ntk"]).reported_methods() == ["rope", "rope-ntk"]


def test_cli_writes_json_and_html(tmp_path, capsys):
    from posviz.lab.cli import main

    out = tmp_path / "out"
    rc = main(
        [
            "--quick",
            "--steps",
            "3",
            "--seeds",
            "0",
            "--methods",
            "learned,alibi",
            "--train-len",
            "16",
            "--eval-multipliers",
            "1",
            "2",
            "--no-progress",
            "--device",
            "cpu",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    r = load_results(out / "results.json")
    assert r["config"]["mode"] == "quick" and r["method_order"] == ["learned", "alibi"]
    assert (out / "perplexity.html").exists() and (out / "cost.html").exists()
    assert "| alibi |" in capsys.readouterr().out


# --- the published run, tables, slider figures ------------------------------------------------------


def test_published_run_ships_in_the_package_and_is_the_full_run():
    from posviz.lab import PUBLISHED, load_published

    assert PUBLISHED.parent.name == "published" and PUBLISHED.parent.parent.name == "lab"
    r = load_published()
    assert r["config"]["mode"] == "full" and r["config"]["seeds"] == [0, 1, 2]
    assert r["train_len"] == 64 and r["eval_lengths"] == [64, 128, 256, 512, 1024]
    assert r["method_order"] == [m for m in ALL_METHODS if m in r["methods"]]
    assert {"none", "rope", "rope-pi", "rope-ntk", "alibi"} <= set(r["method_order"])
    # the package data entry that puts it into the wheel
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"  # the tests live in the repository
    assert '"lab/published/*.json"' in pyproject.read_text()


def test_perplexity_ratio_and_tables(tiny_results):
    from posviz.lab import cost_table, perplexity_ratio, perplexity_table

    ratios = perplexity_ratio(tiny_results)
    for name, m in tiny_results["methods"].items():
        mean = m["aggregate"]["perplexity"]["mean"]
        assert ratios[name][0] == pytest.approx(1.0)
        for v, rho in zip(mean, ratios[name]):
            assert (v is None and rho is None) or rho == pytest.approx(v / mean[0])
    table = perplexity_table(tiny_results)
    lines = table.splitlines()
    assert len(lines) == 2 + len(ALL_METHODS) and "L = 16 (2×)" in lines[0]
    learned = next(line for line in lines if line.startswith("| learned |"))
    assert learned.count("cannot run") == 2
    agg = tiny_results["methods"]["alibi"]["aggregate"]["perplexity"]
    alibi = next(line for line in lines if line.startswith("| alibi |"))
    assert f"{agg['mean'][2]:.2f} ± {agg['std'][2]:.2f}" in alibi
    cost = cost_table(tiny_results).splitlines()
    assert len(cost) == 2 + len(ALL_METHODS)
    assert "(evaluation of rope)" in next(line for line in cost if line.startswith("| rope-pi |"))
    assert "L = 32" in cost[0] and "L = 8" not in cost[0]  # default: the longest length
    assert "L = 8" in cost_table(tiny_results, length=8).splitlines()[0]
    with pytest.raises(ValueError, match="clock"):
        cost_table(tiny_results, clock="gpu")
    with pytest.raises(ValueError, match="length"):
        cost_table(tiny_results, length=5)
    shifted = json.loads(json.dumps(tiny_results))
    shifted["train_len"] = 5
    with pytest.raises(ValueError, match="training length"):
        perplexity_ratio(shifted)


def _step_values(fig, step: int, trace: int, key: str = "x") -> list:
    return list(fig.layout.sliders[0].steps[step].args[0][key][trace])


def test_perplexity_at_length_figure_matches_the_results(tiny_results):
    from posviz.lab import perplexity_at_length_figure, perplexity_ratio

    fig = perplexity_at_length_figure(tiny_results)
    steps = fig.layout.sliders[0].steps
    assert len(steps) == len(tiny_results["eval_lengths"]) >= 2 and len(fig.data) == 2
    assert fig.layout.title.text and fig.layout.xaxis.title.text and fig.layout.xaxis2.title.text
    names = tiny_results["method_order"]
    for i in range(len(steps)):
        expected = [tiny_results["methods"][n]["aggregate"]["perplexity"]["mean"][i] for n in names]
        assert _step_values(fig, i, 0) == [0.0 if v is None else v for v in expected]
        rho = [perplexity_ratio(tiny_results)[n][i] for n in names]
        assert _step_values(fig, i, 1) == [0.0 if v is None else v for v in rho]
    assert _step_values(fig, 0, 0) != _step_values(fig, 2, 0)
    learned = names.index("learned")
    assert _step_values(fig, 1, 0, "text")[learned] == "cannot run"
    assert list(fig.data[0].x) == _step_values(fig, 0, 0)  # the first step is what is drawn first
    top = max(v for n in names for v in tiny_results["methods"][n]["aggregate"]["perplexity"]["max"] if v)
    assert fig.layout.xaxis.range[1] >= top  # fixed across steps, everything fits


def test_inference_at_length_figure_matches_the_results(tiny_results):
    from posviz.lab import inference_at_length_figure

    fig = inference_at_length_figure(tiny_results, clock="cpu")
    steps = fig.layout.sliders[0].steps
    assert len(steps) == 3 and len(fig.data) == 2
    names = tiny_results["method_order"]
    for i in range(len(steps)):
        speed = [tiny_results["methods"][n]["aggregate"]["inference_tokens_per_cpu_s"]["mean"][i] for n in names]
        assert _step_values(fig, i, 0) == [0.0 if v is None else v for v in speed]
        peak = [tiny_results["methods"][n]["memory"]["inference_peak_bytes"][i] for n in names]
        assert _step_values(fig, i, 1) == pytest.approx([0.0 if b is None else b / 2**20 for b in peak])
        assert "title.text" in steps[i].args[1] and "xaxis.range" in steps[i].args[1]
    assert _step_values(fig, 0, 1) != _step_values(fig, 2, 1)
    wall = inference_at_length_figure(tiny_results, clock="wall")
    assert "tokens / s" in wall.layout.xaxis.title.text
    with pytest.raises(ValueError, match="clock"):
        inference_at_length_figure(tiny_results, clock="gpu")


def test_cli_replot_publish_draws_the_package_copy(tiny_results, tmp_path, monkeypatch, capsys):
    import posviz.lab.results as lab_results
    from posviz.lab.cli import main

    target = tmp_path / "published" / "extrapolation.json"
    save_results(tiny_results, target)
    monkeypatch.setattr(lab_results, "PUBLISHED", target)
    out = tmp_path / "figs"
    assert main(["--replot", "--publish", "--plotlyjs", "cdn", "--out", str(out)]) == 0
    assert (out / "perplexity.html").exists() and not (out / "results.json").exists()
    assert main(["--quick", "--publish"]) == 2  # a quick run is never published (nothing runs)
    capsys.readouterr()


def test_perplexity_axis_labels_whole_values(tiny_results):
    """The log axis is labelled 5, 10, 20, 50, 100, ...: never Plotly's lone minor digits (a "2" for 200)."""
    from posviz.lab.figures import _ticks_125

    assert _ticks_125([5.3, 175.6]) == [5.0, 10.0, 20.0, 50.0, 100.0, 200.0]
    assert _ticks_125([None, 8.0]) == [7.0, 8.0, 10.0]  # too few 1-2-5 values: the denser ladder
    # the new chapter's range (5.9-16.7): 1-2-5 puts only 10 inside it, the ladder 6, 7, 8, 10, 15
    assert [t for t in _ticks_125([5.87, 16.68]) if 5.87 <= t <= 16.68] == [6.0, 7.0, 8.0, 10.0, 15.0]
    fig = posviz.lab.perplexity_figure(tiny_results)
    ticks = list(fig.layout.yaxis.tickvals or [])
    values = [v for tr in fig.data for v in tr.y if v is not None]
    if fig.layout.yaxis.tickmode == "array":
        assert min(ticks) <= max(values) and max(ticks) >= min(values)
        assert list(fig.layout.yaxis.ticktext) == [f"{t:g}" for t in ticks]


UI_WORDS = re.compile(
    r"\b(method|cannot|run|first|this|ratio|comparison|inside|spread|seeds?|params|train|inference|validation"
    r"|loss|perplexity|position|evaluation|lr|tokens)\b"
)


def test_tables_come_out_in_chinese_with_no_english_ui_word():
    """Issue 26: the lab chapter's tables (headers, "cannot run", "(inside spread)") left in English on
    the Chinese pages. A table made in English carries its messages and renders in Chinese; one made
    after set_language("zh_CN") is Chinese already."""
    from posviz.i18n import set_language
    from posviz.lab import (
        Table,
        cost_table,
        load_previous,
        load_published,
        lr_search_table,
        lr_sensitivity_table,
        paired_table,
        perplexity_table,
        previous_run_table,
    )

    r = load_published()
    comparisons = [("t5", 16, "rope"), ("t5", 16, None), ("learned", 1, "none")]
    made = {
        "perplexity": lambda: perplexity_table(r),
        "paired": lambda: paired_table(r),
        "lr search": lambda: lr_search_table(r),
        "cost": lambda: cost_table(r),
        "previous": lambda: previous_run_table(load_previous(), r),
        "sensitivity": lambda: lr_sensitivity_table(r, comparisons),
    }
    for name, make in made.items():
        english = make()
        assert isinstance(english, Table) and english.record, name
        assert UI_WORDS.search(english), name  # the check below can fail
        zh = english.translated("zh_CN")
        assert not UI_WORDS.search(zh), (name, UI_WORDS.findall(zh))
        assert english.translated("en") == english
        markdown, metadata = english._repr_markdown_()
        assert markdown == english and metadata["posviz_i18n"] == english.record
        try:
            set_language("zh_CN")
            live = make()
        finally:
            set_language(None)
        assert live == zh and not live.record, name
    assert "（波动之内）" in paired_table(r).translated("zh_CN")
    assert "无法运行" in perplexity_table(r).translated("zh_CN")
    # what a notebook stores for a displayed table, and what the Chinese edition's renderer makes of it
    from IPython.core.formatters import format_display_data

    from posviz.lab.tables import translate_output

    data, metadata = format_display_data(paired_table(r))
    assert data["text/markdown"] == paired_table(r) and data["text/plain"] == paired_table(r)
    assert translate_output(data["text/markdown"], metadata, "zh_CN") == paired_table(r).translated("zh_CN")
    assert translate_output("| a |", {}, "zh_CN") == "| a |"


def test_select_methods_keeps_only_the_named_rows_in_file_order():
    from posviz.lab import load_published, paired_table, perplexity_table, select_methods

    published = load_published()
    view = select_methods(published, ["rope", "none", "alibi"])
    assert view["method_order"] == [m for m in published["method_order"] if m in {"rope", "none", "alibi"}]
    assert set(view["methods"]) == {"none", "rope", "alibi"} == set(view["paired"]["methods"])
    validate_results(view)
    rows = [line.split("|")[1].strip() for line in perplexity_table(view).splitlines()[2:]]
    assert rows == view["method_order"]
    assert "| t5 " not in paired_table(view) and "| rope " in paired_table(view)
    assert published["method_order"][-1] not in view["methods"]  # the file itself is untouched
    with pytest.raises(ValueError, match=r"methods \['nope'\] are not in these results"):
        select_methods(published, ["none", "nope"])
    with pytest.raises(ValueError, match="must keep the paired baseline 'none'"):
        select_methods(published, ["rope"])


def test_hover_numbers_are_never_in_scientific_notation():
    from posviz.lab._style import _number

    assert _number(37640.2, 4) == "37,640" and _number(340.4, 2) == "340" and _number(6.4123, 4) == "6.412"
    assert "e+" not in _number(3.4e2, 2) and _number(0.05, 2) == "0.05"


def test_perplexity_figure_offers_only_choices_that_change_something():
    from posviz.lab import load_published, perplexity_figure, select_methods

    published = load_published()
    labels = lambda fig: [b.label for menu in fig.layout.updatemenus for b in menu.buttons]  # noqa: E731
    every = labels(perplexity_figure(published))
    assert "trained methods only" in every and "ALiBi paper's Fig. 1 set" in every
    trained = labels(perplexity_figure(select_methods(published, ["none", "rope", "t5", "alibi", "fire"])))
    assert "trained methods only" not in trained and "ALiBi paper's Fig. 1 set" not in trained
