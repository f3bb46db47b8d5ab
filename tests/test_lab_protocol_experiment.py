"""posviz.lab protocol, the whole experiment: the learning-rate search, paired differences,
--publish, and issue 21's choices, checked where they are made (the multiplier chosen on validation,
one seed's initial weights for every method, the measured training overlap, "one seed: no spread",
the float32 path, the config and corpus checks). Each test is written to fail for one protocol bug
(named in its docstring); test_lab_protocol_training.py holds one training run's side."""

from __future__ import annotations

import importlib
import inspect
import json
import statistics

import pytest
import torch

import posviz.lab.data as lab_data
from posviz.lab import GPT, GPTConfig, LabConfig, run_experiment
from posviz.lab.data import ngram_set
from posviz.lab.experiment import check_publishable, full_config
from posviz.lab.results import inside_spread, paired_differences, validate_results
from posviz.lab.tables import paired_table
from posviz.lab.train import TrainConfig

TINY = {"n_layer": 1, "n_head": 2, "n_embd": 16}


pytestmark = pytest.mark.usefixtures("one_torch_thread", "restore_determinism")


# --- the experiment: learning-rate search, paired differences, publishing ------------------------------


@pytest.fixture(scope="module")
def searched():
    cfg = LabConfig(
        methods=["none", "t5", "alibi"],
        seeds=[0, 1, 2],
        train_len=16,
        eval_multipliers=[1, 2],
        model=dict(TINY),
        train=TrainConfig(steps=6, warmup_steps=2, batch_size=4, log_every=2, lr=3e-3),
        eval_tokens_per_batch=128,
        eval_max_tokens=256,
        validation_max_tokens=512,
        position_lr_grid=[1.0, 30.0],
        mode="test",
    )
    return run_experiment(cfg, progress=False)


def test_learning_rate_is_chosen_on_validation_for_methods_with_position_parameters(searched):
    t5 = searched["methods"]["t5"]
    assert [p["position_lr_mult"] for p in t5["lr_search"]] == [1.0, 30.0]
    best = min(t5["lr_search"], key=lambda p: p["validation_loss"])
    assert t5["position_lr_mult"] == best["position_lr_mult"]
    assert all(s["position_lr_mult"] == best["position_lr_mult"] for s in t5["seeds"])
    chosen_seed0 = next(s for s in t5["seeds"] if s["seed"] == 0)
    assert chosen_seed0["validation_loss"] == best["validation_loss"]  # the search run is reused
    assert chosen_seed0["perplexity"] == best["perplexity"]
    assert searched["methods"]["alibi"]["lr_search"] == [] and searched["methods"]["alibi"]["position_lr_mult"] is None
    for s in t5["seeds"]:
        curve = s["loss_curve"]
        assert len(curve["lr"]) == len(curve["grad_norm"]) == len(curve["step"])
        assert all(g > 0 for g in curve["grad_norm"])
    overlap = searched["data"]["overlap"]
    assert overlap["validation_ngrams_in_heldout"] == 0.0
    assert overlap["training_windows_with_heldout_ngram"] == 0.0


def test_paired_differences_are_per_seed(searched):
    diffs = paired_differences(searched, "alibi", "none")
    by_seed = {s["seed"]: s["perplexity"] for s in searched["methods"]["none"]["seeds"]}
    for s in searched["methods"]["alibi"]["seeds"]:
        for i, d in enumerate(diffs):
            assert d[s["seed"]] == pytest.approx(s["perplexity"][i] - by_seed[s["seed"]][i])
    paired = searched["paired"]["methods"]["alibi"]
    assert paired["mean"][0] == pytest.approx(statistics.fmean(diffs[0]))
    assert paired["std"][0] == pytest.approx(statistics.stdev(diffs[0]))
    assert paired["inside_spread"] == [inside_spread(d) for d in diffs]
    assert searched["paired"]["methods"]["none"]["inside_spread"] == [None, None]
    table = paired_table(searched)
    assert table.splitlines()[0].startswith("| method − none |") and "| alibi |" in table
    marked = json.loads(json.dumps(searched))
    marked["paired"]["methods"]["alibi"]["inside_spread"] = [True, False]
    row = next(line for line in paired_table(marked).splitlines() if line.startswith("| alibi |"))
    assert row.split("|")[2].strip().endswith("(inside spread)") and "inside" not in row.split("|")[3]
    from posviz.lab import paired_difference_figure

    fig = paired_difference_figure(marked)
    trace = next(t for t in fig.data if t.name == "ALiBi")
    assert list(trace.marker.symbol) == ["circle-open", "circle"]
    assert "inside the seed spread" in trace.hovertext[0] and "outside" in trace.hovertext[1]


def test_publish_refuses_anything_but_the_full_configuration(tmp_path, monkeypatch, searched, capsys):
    import posviz.lab.experiment as lab_experiment
    import posviz.lab.results as lab_results
    from posviz.lab.cli import main

    check_publishable(full_config(device="cuda"))  # the full run on another device: fine
    short = TrainConfig(steps=2, warmup_steps=1)
    for change in ({"seeds": [0]}, {"methods": ["alibi"]}, {"train": short}, {"mode": "quick"}):
        with pytest.raises(ValueError, match="full configuration"):
            check_publishable(full_config(**change))
    target = tmp_path / "published" / "extrapolation.json"
    monkeypatch.setattr(lab_results, "PUBLISHED", target)
    ran = []
    monkeypatch.setattr(lab_experiment, "run_experiment", lambda cfg, progress=True, **kw: ran.append(cfg) or searched)
    monkeypatch.chdir(tmp_path)
    for args in (["--steps", "2"], ["--methods", "alibi"], ["--seeds", "0"], ["--train-len", "32"], ["--quick"]):
        assert main([*args, "--publish", "--no-progress", "--device", "cpu"]) == 2, args
    assert "full configuration" in capsys.readouterr().err
    assert not ran and not target.exists()
    assert main(["--publish", "--no-progress", "--device", "cpu"]) == 0  # the full configuration
    assert len(ran) == 1 and ran[0].mode == "full" and target.exists()
    validate_results(json.loads(target.read_text()))
    capsys.readouterr()


def test_cli_device_default_is_the_labs_own_choice(monkeypatch, tmp_path):
    import posviz.lab.experiment as lab_experiment
    from posviz.lab.cli import main

    seen = []
    monkeypatch.setattr(
        lab_experiment, "run_experiment", lambda cfg, progress=True, **kw: seen.append(cfg.device) or {}
    )
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="schema"):  # {} is no results file: stop after the run
        main(["--quick", "--no-progress", "--out", str(tmp_path)])
    assert seen == ["cpu"]
    assert "default_device()" not in inspect.getsource(importlib.import_module("posviz.lab.cli"))


# --- issue 21: the protocol's choices, checked where they are made ------------------------------------


def test_choose_multiplier_ranks_on_validation_and_breaks_ties_to_the_smaller():
    """Bugs: choosing on the training loss; a tie going to the larger multiplier."""
    from posviz.lab.experiment import choose_multiplier

    grid = [  # training and validation losses rank the three points differently
        {"position_lr_mult": 1.0, "validation_loss": 3.0, "final_train_loss": 1.0},
        {"position_lr_mult": 10.0, "validation_loss": 1.0, "final_train_loss": 3.0},
        {"position_lr_mult": 30.0, "validation_loss": 2.0, "final_train_loss": 2.0},
    ]
    assert choose_multiplier(grid) == 10.0
    tie = [  # listed largest first, so neither the list order nor max() can pass by accident
        {"position_lr_mult": 100.0, "validation_loss": 1.5, "final_train_loss": 1.0},
        {"position_lr_mult": 30.0, "validation_loss": 1.5, "final_train_loss": 2.0},
        {"position_lr_mult": 1.0, "validation_loss": 2.5, "final_train_loss": 0.5},
    ]
    assert choose_multiplier(tie) == 30.0
    with pytest.raises(ValueError, match="at least one grid point"):
        choose_multiplier([])


def _experiment_cfg(**kw) -> LabConfig:
    base = dict(
        methods=["none", "t5"],
        seeds=[0],
        train_len=16,
        eval_multipliers=[1],
        model=dict(TINY),
        train=TrainConfig(steps=2, warmup_steps=1, batch_size=2, log_every=1),
        eval_tokens_per_batch=64,
        eval_max_tokens=64,
        validation_max_tokens=64,
        position_lr_grid=[10.0],
        mode="test",
    )
    return LabConfig(**{**base, **kw})


def test_run_experiment_chooses_on_validation_over_a_three_point_grid(monkeypatch):
    """Bug: the search ranking the grid by the training loss (a two-point grid ranked both the same)."""
    import posviz.lab.experiment as lab_experiment

    validation = iter([3.0, 1.0, 2.0])  # the grid points in order: x1, x10, x30
    training = iter([1.0, 3.0, 2.0])  # the opposite choice on the training loss
    real_train = lab_experiment.train

    def fake_train(*a, **kw):
        result = real_train(*a, **kw)
        result.final_loss = next(training)
        return result

    monkeypatch.setattr(lab_experiment, "mean_loss", lambda *a, **kw: next(validation))
    monkeypatch.setattr(lab_experiment, "train", fake_train)
    r = run_experiment(_experiment_cfg(methods=["t5"], position_lr_grid=[1.0, 10.0, 30.0]), progress=False)
    t5 = r["methods"]["t5"]
    assert [p["validation_loss"] for p in t5["lr_search"]] == [3.0, 1.0, 2.0]
    assert [p["final_train_loss"] for p in t5["lr_search"]] == [1.0, 3.0, 2.0]
    assert t5["position_lr_mult"] == 10.0 and t5["seeds"][0]["position_lr_mult"] == 10.0


def test_run_experiment_gives_every_method_of_a_seed_the_same_initial_weights(monkeypatch):
    """Bug: run_experiment seeding each method's model its own way (pairing was tested on GPT only)."""
    import posviz.lab.experiment as lab_experiment

    made: list[tuple[str, int | None, dict]] = []

    class Recording(GPT):
        def __init__(self, cfg, seed=None):
            super().__init__(cfg, seed=seed)
            made.append((cfg.method, seed, {k: p.detach().clone() for k, p in self.shared_parameters()}))

    monkeypatch.setattr(lab_experiment, "GPT", Recording)
    run_experiment(_experiment_cfg(methods=["none", "learned", "t5", "rope"], seeds=[3, 4]), progress=False)
    by_seed: dict = {}  # the last model made per (seed, method): the trained one (after the memory probe)
    for method, seed, shared in made:
        by_seed.setdefault(seed, {})[method] = shared
    assert set(by_seed) == {3, 4} and all(set(v) == {"none", "learned", "t5", "rope"} for v in by_seed.values())
    for seed, models in by_seed.items():
        reference = models["none"]
        for method, shared in models.items():
            assert all(torch.equal(shared[k], reference[k]) for k in reference), (seed, method)
    assert not torch.equal(by_seed[3]["none"]["wte.weight"], by_seed[4]["none"]["wte.weight"])


def test_gpt_without_a_seed_draws_it_before_building_its_modules():
    """Bug: the seed drawn from the global generator after the modules were built, whose number of
    draws depends on the method, so learned / t5 / shaw models got other shared weights."""
    shared = {}
    for method in ("none", "learned", "t5", "shaw"):
        torch.manual_seed(11)
        shared[method] = dict(GPT(GPTConfig(method=method, block_size=16, **TINY)).shared_parameters())
    for method, params in shared.items():
        assert all(torch.equal(p, shared["none"][k]) for k, p in params.items()), method


def test_training_overlap_counts_windows_that_hold_a_heldout_string():
    """Bug: training_windows_with_heldout_ngram written as 0 and then "validated"; it is measured."""
    from posviz.lab.data import Corpus, training_overlap
    from posviz.lab.overlap import ngram_hits, windows_with_ngram

    held = torch.tensor(list(b"Q" * 3 + bytes(range(100, 170)) + b"Q" * 3))  # a 70-byte string
    train = torch.cat([torch.tensor(list(b"a" * 50)), held[3:73], torch.tensor(list(b"b" * 80))])
    unguarded = Corpus(train=train, heldout=held, info={})  # no taint mask: every start allowed
    measured = training_overlap(unguarded, 64)["training_windows_with_heldout_ngram"]
    hits = ngram_hits(train, ngram_set(held))
    starts = unguarded.train_starts(64)
    expected = sum(any(hits[s : s + 2].tolist()) for s in starts.tolist()) / len(starts)  # 2 strings per window
    assert measured == pytest.approx(expected) and 0 < measured < 1
    assert windows_with_ngram(hits, starts, 16) == 0  # a 17-byte window cannot hold a 64-byte string
    guarded = Corpus(train=train, heldout=held, info={}, train_tainted=lab_data.tainted_bytes(train, ngram_set(held)))
    assert training_overlap(guarded, 64)["training_windows_with_heldout_ngram"] == 0.0


def test_one_seed_differences_say_so_in_the_table_and_the_figure(searched):
    """Bug: a one-seed difference (inside_spread None) drawn filled and called "outside the seed spread"."""
    from posviz.lab import paired_difference_figure
    from posviz.lab.figures import ONE_SEED_SYMBOL
    from posviz.lab.results import paired_summary
    from posviz.lab.tables import spread_words

    one = json.loads(json.dumps(searched))
    one["config"]["seeds"] = [0]
    for m in one["methods"].values():
        m["seeds"] = m["seeds"][:1]
    one["paired"] = paired_summary(one, "none")
    assert one["paired"]["methods"]["alibi"]["inside_spread"] == [None, None]
    row = next(line for line in paired_table(one).splitlines() if line.startswith("| alibi |"))
    assert row.count("(one seed: no spread)") == 2 and "inside" not in row
    fig = paired_difference_figure(one)
    trace = next(t for t in fig.data if t.name == "ALiBi")
    assert list(trace.marker.symbol) == [ONE_SEED_SYMBOL] * 2 and ONE_SEED_SYMBOL not in ("circle", "circle-open")
    assert all("one seed: no spread" in h and "outside" not in h for h in trace.hovertext)
    assert "one seed: no spread" in fig.layout.title.text and "open marker" not in fig.layout.title.text
    assert spread_words(None) == "one seed: no spread" and spread_words(False) == "outside the seed spread"


def test_publish_takes_only_the_float32_posviz_attention_path(tmp_path, monkeypatch, capsys):
    """Bug: --publish accepting a bf16 / SDPA / compiled run."""
    import posviz.lab.experiment as lab_experiment
    from posviz.lab.cli import main

    check_publishable(full_config(device="cuda", world_size=2))  # where it runs may differ
    for change, flag in (
        ({"precision": "bf16"}, "--precision fp32"),
        ({"attention": "sdpa"}, "--attention posviz"),
        ({"compile": True}, "no --compile"),
    ):
        with pytest.raises(ValueError, match="float32 posviz.attention path") as err:
            check_publishable(full_config(**change))
        assert flag in str(err.value)
    monkeypatch.setattr(lab_experiment, "run_experiment", lambda *a, **kw: pytest.fail("must not run"))
    monkeypatch.chdir(tmp_path)
    for flags in (["--precision", "bf16"], ["--attention", "sdpa"], ["--compile"]):
        assert main([*flags, "--publish", "--no-progress", "--device", "cpu"]) == 2
        assert "float32 posviz.attention path" in capsys.readouterr().err


def test_config_rejects_an_unknown_baseline_and_ntk_with_head_size_two():
    with pytest.raises(ValueError, match="baseline must be one of"):
        LabConfig(baseline="nope")
    with pytest.raises(ValueError, match="rope-ntk needs a head size"):
        LabConfig(methods=["rope-ntk"], model={"n_layer": 1, "n_head": 8, "n_embd": 16})
    model = GPT(GPTConfig(method="rope", block_size=4, n_layer=1, n_head=8, n_embd=16), seed=0)
    with pytest.raises(ValueError, match="rope-ntk needs a head size"):
        model.set_rope_scaling("ntk")
    model.set_rope_scaling("pi")  # the other variant is fine at head size 2
    assert torch.isfinite(model(torch.randint(0, 256, (1, 8)))).all()


def test_check_corpus_refuses_a_training_split_with_no_clean_window():
    """Bug: a training split whose every window is tainted reaching the sampler mid-run."""
    from posviz.lab.config import check_corpus

    text = torch.arange(400) % 256
    info = {"n_train_tokens": 400, "n_validation_tokens": 400, "n_heldout_tokens": 400}
    cfg = LabConfig(methods=["alibi"], seeds=[0], train_len=16, eval_multipliers=[1, 2], model=dict(TINY), mode="test")
    clean = lab_data.Corpus(train=text, heldout=text, info=info, validation=text)
    check_corpus(clean, cfg)
    tainted = lab_data.Corpus(
        train=text, heldout=text, info=info, validation=text, train_tainted=torch.ones(400, dtype=torch.bool)
    )
    with pytest.raises(ValueError, match="training split .* holds no window of 17 bytes"):
        check_corpus(tainted, cfg)


def test_one_seed_hover_text_says_no_spread_instead_of_a_min_max(searched):
    """Issue 21: "one seed: no spread" everywhere results are shown, the perplexity figures' hover too."""
    from posviz.lab import perplexity_at_length_figure, perplexity_figure

    one = json.loads(json.dumps(searched))
    one["config"]["seeds"] = [0]
    for m in one["methods"].values():
        m["seeds"] = m["seeds"][:1]
        m["aggregate"]["perplexity"]["n"] = [1] * len(one["eval_lengths"])
    hover = next(t for t in perplexity_figure(one).data if t.name == "ALiBi").hovertext
    assert all("one seed: no spread" in h and "over 1 seeds" not in h for h in hover)
    texts = [h for trace in perplexity_at_length_figure(one).data for h in (trace.hovertext or [])]
    assert any("one seed: no spread" in h for h in texts) and not any("over 1 seeds" in h for h in texts)
