"""posviz.vislab.experiment: the lab's protocol on the miniature. Seeds paired (weights and data),
the position learning rate chosen on validation and reused for every seed, evaluation at every grid
on held-out images from their own stream, paired differences with the inside-spread rule. Each test
is written to fail for one protocol bug (named in its docstring)."""

from __future__ import annotations

import pytest
import torch

import posviz.vislab.experiment as ex
from posviz.lab.train import TrainConfig
from posviz.vislab import VisConfig, full_config, quick_config, run_experiment
from posviz.vislab.config import check_publishable
from posviz.vislab.results import paired_summary, validate_results

pytestmark = pytest.mark.usefixtures("one_torch_thread", "restore_determinism")

TINY = {"n_layer": 1, "n_head": 2, "n_embd": 16}


def tiny(**kw: object) -> VisConfig:
    base: dict = {
        "methods": ["none", "learned"],
        "seeds": [0, 1],
        "model": TINY,
        "train": TrainConfig(steps=3, batch_size=8, warmup_steps=1),
        "n_validation": 16,
        "n_heldout": 16,
        "position_lr_grid": [1.0, 10.0],
        "mode": "test",
    }
    base.update(kw)
    return VisConfig(**base)


def fake_record(method: str, seed: int, mult: float | None, val: float, acc: float, train: float) -> dict:
    return {
        "seed": seed, "position_lr_mult": mult, "accuracy": [acc, acc / 2], "loss": [1.0, 2.0],
        "validation_accuracy": 0.5, "validation_loss": val, "final_train_loss": train, "train_seconds": 1.0,
        "params": 10, "loss_curve": {"step": [1], "loss": [1.0]},
    }


def test_lr_is_chosen_on_validation_loss_and_reused_for_every_seed(monkeypatch) -> None:
    """Bugs: choosing on the held-out accuracy, on the training loss, or retraining other seeds at
    another multiplier. The fake runs make each wrong rule pick a different multiplier."""
    calls: list[tuple[str, int, float | None]] = []
    # per multiplier: (validation loss, held-out accuracy at the largest grid, training loss)
    table = {1.0: (0.9, 1.0, 0.1), 10.0: (0.5, 0.2, 0.9), 100.0: (0.7, 0.3, 0.5)}

    def fake(cfg, method, seed, mult):
        calls.append((method, seed, mult))
        val, acc, train = table[mult] if mult is not None else (1.0, 0.25, 1.0)
        return fake_record(method, seed, mult, val, acc, train)

    monkeypatch.setattr(ex, "train_one", fake)
    cfg = tiny(seeds=[3, 1, 2], position_lr_grid=[1.0, 10.0, 100.0], eval_grids=[8, 16])
    results = run_experiment(cfg, progress=False)
    learned = results["methods"]["learned"]
    assert learned["position_lr_mult"] == 10.0
    assert [p["position_lr_mult"] for p in learned["lr_search"]] == [1.0, 10.0, 100.0]
    assert {p["seed"] for p in learned["lr_search"]} == {3}  # the first seed only
    assert [s["position_lr_mult"] for s in learned["seeds"]] == [10.0, 10.0, 10.0]
    assert sorted(c for c in calls if c[0] == "learned") == sorted(
        [("learned", 3, 1.0), ("learned", 3, 10.0), ("learned", 3, 100.0), ("learned", 1, 10.0), ("learned", 2, 10.0)]
    )
    assert results["methods"]["none"]["position_lr_mult"] is None and results["methods"]["none"]["lr_search"] == []
    validate_results(results)


def test_a_tie_in_validation_loss_goes_to_the_smaller_multiplier(monkeypatch) -> None:
    monkeypatch.setattr(ex, "train_one", lambda cfg, m, s, mult: fake_record(m, s, mult, 0.5, 0.5, 0.5))
    cfg = tiny(methods=["learned"], position_lr_grid=[10.0, 1.0], eval_grids=[8, 16])
    results = run_experiment(cfg, progress=False)
    assert results["methods"]["learned"]["position_lr_mult"] == 1.0


def test_every_method_of_a_seed_starts_from_the_same_weights_and_sees_the_same_images(monkeypatch) -> None:
    """Bugs: an init seed or a data stream that depends on the method (seeds not paired)."""
    inits: dict = {}
    batches: dict = {}
    real_vit, real_examples = ex.TinyViT, ex.make_examples

    def vit(cfg, seed):
        model = real_vit(cfg, seed=seed)
        inits[(cfg.method, seed)] = {n: p.detach().clone() for n, p in model.shared_parameters()}
        return model

    current: list = []

    def examples(n, grid, generator):
        out = real_examples(n, grid, generator)
        if n == 8 and current:  # a training batch of the run in progress
            batches.setdefault(current[-1], []).append(out[0].clone())
        return out

    real_train_one = ex.train_one

    def train_one(cfg, method, seed, mult):
        current.append((method, seed))
        return real_train_one(cfg, method, seed, mult)

    monkeypatch.setattr(ex, "TinyViT", vit)
    monkeypatch.setattr(ex, "make_examples", examples)
    monkeypatch.setattr(ex, "train_one", train_one)
    run_experiment(tiny(methods=["none", "sincos-2d", "learned"], position_lr_grid=[1.0]), progress=False)
    for seed in (0, 1):
        ref, ref_batches = inits[("none", seed)], batches[("none", seed)]
        assert len(ref_batches) == 3
        for method in ("sincos-2d", "learned"):
            assert all(torch.equal(inits[(method, seed)][n], ref[n]) for n in ref), (method, seed)
            assert all(torch.equal(x, y) for x, y in zip(batches[(method, seed)], ref_batches)), (method, seed)
    assert not torch.equal(inits[("none", 0)]["wte.weight"], inits[("none", 1)]["wte.weight"])
    assert not torch.equal(batches[("none", 0)][0], batches[("none", 1)][0])


def test_evaluation_covers_every_grid_on_heldout_images_not_the_training_stream(monkeypatch) -> None:
    """Bugs: evaluating on the training grid only, or on images of the training stream."""
    seen: list[tuple[int, ...]] = []
    real = ex.evaluate

    def spy(model, tokens, labels, batch_size):
        seen.append(tuple(tokens.shape))
        return real(model, tokens, labels, batch_size)

    monkeypatch.setattr(ex, "evaluate", spy)
    cfg = tiny(methods=["none"], seeds=[0], eval_grids=[16, 8, 12])
    results = run_experiment(cfg, progress=False)
    assert results["eval_grids"] == [8, 12, 16]
    assert seen == [(16, 8, 8), (16, 8, 8), (16, 12, 12), (16, 16, 16)]  # validation, then each grid
    held = ex.heldout_sets(cfg)
    assert [tuple(x.shape) for x, _ in held] == [(16, 8, 8), (16, 12, 12), (16, 16, 16)]
    for (x, _), g in zip(held, cfg.grids):  # the held-out stream of each grid, never a training stream
        assert torch.equal(x, ex.make_examples(16, g, ex.stream("heldout", g))[0])
        assert not torch.equal(x, ex.make_examples(16, g, ex.stream("train", g))[0])
    train_first = ex.make_examples(16, 8, ex.stream("train", 0))[0]
    assert not torch.equal(held[0][0], train_first)
    val = ex.validation_set(cfg)[0]
    assert not torch.equal(val, held[0][0])


def test_a_real_tiny_run_is_deterministic_and_its_accuracies_are_fractions() -> None:
    cfg = tiny(methods=["none", "rope-axial"], seeds=[0])
    one, two = (run_experiment(cfg, progress=False) for _ in range(2))
    for m in ("none", "rope-axial"):
        assert one["methods"][m]["seeds"][0]["accuracy"] == two["methods"][m]["seeds"][0]["accuracy"]
        assert all(0.0 <= a <= 1.0 for a in one["methods"][m]["seeds"][0]["accuracy"])
    assert one["code"]["git_commit"] is None or len(one["code"]["git_commit"]) == 40


def test_two_worker_processes_give_the_numbers_of_one() -> None:
    """Bug: a job whose numbers depend on the process it ran in (worker count, order)."""
    cfg = tiny(methods=["none", "learned"], seeds=[0], position_lr_grid=[1.0])
    one = run_experiment(cfg, progress=False)
    cfg2 = tiny(methods=["none", "learned"], seeds=[0], position_lr_grid=[1.0], workers=2)
    two = run_experiment(cfg2, progress=False)
    for m in ("none", "learned"):
        a, b = one["methods"][m]["seeds"][0], two["methods"][m]["seeds"][0]
        assert (a["accuracy"], a["loss"], a["validation_loss"]) == (b["accuracy"], b["loss"], b["validation_loss"])
    assert two["machine"]["workers"] == 2


def test_paired_differences_are_per_seed_and_marked_inside_the_spread() -> None:
    """Bugs: subtracting means instead of per-seed values, or a wrong inside-spread verdict."""
    methods = {
        "none": {"seeds": [{"seed": s, "accuracy": [0.25, 0.25]} for s in (0, 1, 2)]},
        "learned": {"seeds": [{"seed": 0, "accuracy": [0.95, 0.30]}, {"seed": 1, "accuracy": [0.85, 0.20]},
                              {"seed": 2, "accuracy": [0.90, 0.28]}]},
    }
    p = paired_summary({"eval_grids": [8, 16], "method_order": ["none", "learned"], "methods": methods}, "none")
    d = p["methods"]["learned"]
    assert d["diff"][0] == pytest.approx([0.70, 0.60, 0.65])
    assert d["mean"][0] == pytest.approx(0.65) and d["std"][0] == pytest.approx(0.05)
    assert d["inside_spread"] == [False, True]  # +0.05, -0.05, +0.03: signs disagree at 16
    assert p["methods"]["none"]["inside_spread"] == [None, None] and p["key"] == "accuracy"


def test_publish_takes_the_full_configuration_only() -> None:
    check_publishable(full_config(workers=2, threads=1))
    with pytest.raises(ValueError, match="train"):
        check_publishable(full_config(train=TrainConfig(steps=5)))
    with pytest.raises(ValueError, match="mode"):
        check_publishable(quick_config())


@pytest.mark.parametrize(
    "kw, flag",
    [({"train_grid": 1}, "--train-grid"), ({"eval_grids": [12, 16]}, "--eval-grids must include the training grid"),
     ({"eval_grids": [8, 1]}, "--eval-grids"), ({"methods": ["alibi"]}, "--methods"), ({"seeds": [0, 0]}, "--seeds"),
     ({"workers": 0}, "--workers"), ({"n_heldout": 0}, "--n-heldout")],
)
def test_bad_settings_name_their_flag(kw: dict, flag: str) -> None:
    with pytest.raises(ValueError, match=flag):
        tiny(**kw)
