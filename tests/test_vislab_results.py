"""posviz.vislab.results and figures: the schema check, I/O, the glue values, the figure and the
tables (numbers from the results, text in both languages), and the published run."""

from __future__ import annotations

import copy

import pytest

import posviz.vislab.experiment as ex
from posviz.i18n import set_language
from posviz.lab.train import TrainConfig
from posviz.vislab import (
    VisConfig,
    accuracy_figure,
    accuracy_table,
    glue_values,
    load_results,
    paired_table,
    run_experiment,
    save_results,
    validate_results,
)

# per method and seed: accuracy at 8x8, 12x12, 16x16 (made up, so every number below is known)
ACC = {
    "none": [[0.25, 0.24, 0.26], [0.26, 0.25, 0.25], [0.24, 0.26, 0.24]],
    "learned": [[1.00, 0.80, 0.60], [0.99, 0.70, 0.50], [1.00, 0.75, 0.55]],
    "swin-bias": [[1.00, 0.95, 0.90], [1.00, 0.97, 0.92], [0.99, 0.99, 0.94]],
    "rope-axial": [[1.00, 0.60, 0.20], [1.00, 0.50, 0.30], [1.00, 0.55, 0.26]],
}


@pytest.fixture(scope="module")
def results() -> dict:
    def fake(cfg, method, seed, mult):
        acc = ACC[method][cfg.seeds.index(seed)]
        return {
            "seed": seed, "position_lr_mult": mult, "accuracy": acc, "loss": [1.0 - a for a in acc],
            "validation_accuracy": acc[0], "validation_loss": 1.0 - acc[0] + (mult or 0) / 1000,
            "final_train_loss": 0.1, "train_seconds": 2.0, "params": 1000, "loss_curve": {"step": [1], "loss": [1.0]},
        }

    cfg = VisConfig(methods=list(ACC), model={"n_layer": 1, "n_head": 2, "n_embd": 16},
                    train=TrainConfig(steps=2, batch_size=4, warmup_steps=0), mode="test")
    mp = pytest.MonkeyPatch()
    mp.setattr(ex, "train_one", fake)
    try:
        return run_experiment(cfg, progress=False)
    finally:
        mp.undo()


def test_the_results_validate_and_round_trip(results: dict, tmp_path) -> None:
    validate_results(results)
    assert load_results(save_results(results, tmp_path / "r.json")) == results
    assert results["method_order"] == ["none", "learned", "rope-axial", "swin-bias"]  # canonical order
    assert results["methods"]["learned"]["position_lr_mult"] == 1.0  # lowest validation loss: the smallest here


@pytest.mark.parametrize(
    "breaks, message",
    [
        (lambda r: r["methods"]["learned"]["seeds"][0]["accuracy"].__setitem__(0, 1.5), "in \\[0, 1\\]"),
        (lambda r: r["methods"]["learned"]["seeds"].pop(), "config.seeds"),
        (lambda r: r.__setitem__("eval_grids", [16, 12, 8]), "ascending"),
        (lambda r: r["methods"]["learned"]["seeds"][1].__setitem__("position_lr_mult", 100.0), "another multiplier"),
        (lambda r: r.pop("code"), "code"),
    ],
)
def test_the_schema_check_names_what_is_wrong(results: dict, breaks, message: str) -> None:
    bad = copy.deepcopy(results)
    breaks(bad)
    with pytest.raises(ValueError, match=message):
        validate_results(bad)


def test_glue_values_follow_from_the_numbers(results: dict) -> None:
    g = glue_values(results)
    assert g["best_past_training"] == "swin-bias" and g["best_accuracy"] == pytest.approx(0.92)
    assert g["runner_up"] == "learned" and g["runner_up_accuracy"] == pytest.approx(0.55)
    assert g["accuracy"]["rope-axial"][16]["mean"] == pytest.approx(0.76 / 3)
    assert g["accuracy"]["learned"][12]["min"] == pytest.approx(0.70)
    assert g["drop"]["learned"] == pytest.approx((1.00 + 0.99 + 1.00) / 3 - 0.55)
    # rope-axial minus none at 16: -0.06, +0.05, +0.02: signs disagree -> inside the spread
    assert g["inside_spread"]["rope-axial"] == {8: False, 12: False, 16: True}
    assert "none" not in g["inside_spread"]
    assert (g["train_grid"], g["largest_grid"], g["seeds"]) == (8, 16, 3)
    # rope-axial - learned, per seed at 16: -0.40, -0.20, -0.29: all negative, |mean| > std
    axial = g["paper"]["rope-axial > learned"][16]
    assert axial["diff"] == pytest.approx(-0.89 / 3) and axial["inside_spread"] is False and not axial["agrees"]
    assert g["paper"]["rope-axial > learned"][8]["inside_spread"] is True  # 0, +0.01, 0: not all one sign
    assert set(g["paper"]) == {"rope-axial > learned"}  # no rope-mixed in these results


def test_accuracy_table_shows_mean_std_and_range_in_percent(results: dict) -> None:
    table = accuracy_table(results)
    row = next(line for line in table.splitlines() if line.startswith("| swin-bias |"))
    assert "92.0 ± 2.0 [90.0–94.0]" in row and "99.7 ± 0.6 [99.0–100.0]" in row
    assert table.record  # made in English: it remembers its messages


def test_paired_table_marks_differences_inside_the_spread(results: dict) -> None:
    table = paired_table(results)
    rope = next(line for line in table.splitlines() if line.startswith("| rope-axial |"))
    cells = [c.strip() for c in rope.strip("|").split("|")]
    assert cells[3] == "+0.3 ± 5.7 (inside spread)"
    assert "inside" not in cells[1]  # +75.0 at 8x8, every seed agrees
    assert "| none |" not in table
    zh = table.translated("zh_CN")
    assert "(inside spread)" not in zh and "rope-axial" in zh


def test_the_figure_plots_the_mean_with_the_seed_range(results: dict) -> None:
    fig = accuracy_figure(results)
    traces = {t.name: t for t in fig.data}
    swin = traces["Swin relative bias"]
    assert list(swin.x) == [8, 12, 16]
    assert list(swin.y) == pytest.approx([100 * 2.99 / 3, 97.0, 92.0])
    assert list(swin.error_y.array) == pytest.approx([100 * (1.0 - 2.99 / 3), 2.0, 2.0])
    assert list(swin.error_y.arrayminus) == pytest.approx([100 * (2.99 / 3 - 0.99), 2.0, 2.0])
    buttons = fig.layout.updatemenus[0].buttons
    assert len(buttons) == 5 and list(buttons[2].args[0]["visible"]) == [False, True, False, False]


def test_the_figure_draws_in_chinese(results: dict) -> None:
    set_language("zh_CN")
    try:
        fig = accuracy_figure(results)
    finally:
        set_language("en")
    english = accuracy_figure(results)
    assert fig.layout.title.text != english.layout.title.text
    assert any("\u4e00" <= ch <= "\u9fff" for ch in fig.layout.title.text + fig.layout.xaxis.title.text)


def test_the_published_run_is_the_full_configuration_and_its_glue_follows() -> None:
    """The committed run (what the chapter glues) validates, is the full configuration, ran every
    method on every seed at every grid, and its glue values are its own numbers."""
    from posviz.vislab import PUBLISHED, full_config, load_published
    from posviz.vislab.config import check_publishable

    results = load_published()
    cfg = results["config"]
    full = full_config(workers=cfg["workers"], threads=cfg["threads"]).to_dict()
    assert cfg == full
    check_publishable(full_config(workers=cfg["workers"], threads=cfg["threads"]))
    assert results["method_order"] == list(full["methods"]) and results["eval_grids"] == [8, 12, 16]
    assert results["code"]["git_commit"] and PUBLISHED.name == "resolution.json"
    g = glue_values(results)
    best = g["best_past_training"]
    assert all(g["accuracy"][best][16]["mean"] >= g["accuracy"][m][16]["mean"] for m in results["method_order"])
    # no positions: a constant answer at best, i.e. at most the held-out set's majority label (+ noise)
    import torch

    from posviz.vislab.task import make_examples, stream

    for i, grid in enumerate(results["eval_grids"]):
        labels = make_examples(cfg["n_heldout"], grid, stream("heldout", grid))[1]
        majority = float(torch.bincount(labels, minlength=4).max()) / cfg["n_heldout"]
        assert g["majority_class"][grid] == majority
        assert results["methods"]["none"]["aggregate"]["accuracy"]["max"][i] <= majority + 0.05
