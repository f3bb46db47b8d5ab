"""posviz.lab protocol, one training run: the splits, paired seeds, the optimizer and its schedule,
clipping, the batch sampler, the final loss, evaluation batches, "cannot run", the spread statistics
and the memory probe. Each test is written to fail for one protocol bug (named in its docstring);
test_lab_protocol_experiment.py holds the experiment's side (the learning-rate search, --publish)."""

from __future__ import annotations

import inspect
import math
import statistics

import pytest
import torch

import posviz.lab.data as lab_data
import posviz.lab.memory as lab_memory
import posviz.lab.model as lab_model
import posviz.lab.positions as lab_positions
import posviz.lab.train as lab_train
from posviz.lab import GPT, GPTConfig
from posviz.lab.data import OVERLAP_N, eval_windows, load_topics, ngram_set, sample_batch
from posviz.lab.evaluate import evaluate, mean_loss
from posviz.lab.model import BeyondLearnedTable
from posviz.lab.results import inside_spread, summarize, summarize_lists
from posviz.lab.train import TrainConfig, lr_at, train

TINY = {"n_layer": 1, "n_head": 2, "n_embd": 16}


pytestmark = pytest.mark.usefixtures("one_torch_thread", "restore_determinism")


def spy_optimizer(monkeypatch) -> dict:
    """Record, at every ``optimizer.step()``, each group's learning rate and the gradient norm the
    step actually receives (after any clipping), through the public step pre-hook."""
    log: dict = {"lr": [], "grad_norm": []}
    real = lab_train.make_optimizer

    def make(model, cfg):
        opt = real(model, cfg)

        def pre(optimizer, args, kwargs):
            log["lr"].append([g["lr"] for g in optimizer.param_groups])
            grads = [p.grad for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
            log["grad_norm"].append(float(torch.linalg.vector_norm(torch.stack([g.norm() for g in grads]))))

        opt.register_step_pre_hook(pre)
        return opt

    monkeypatch.setattr(lab_train, "make_optimizer", make)
    return log


def tiny_train(corpus, method="t5", steps=8, seed=0, **train_kw):
    cfg = TrainConfig(**{"steps": steps, "warmup_steps": 3, "batch_size": 2, "log_every": 2, **train_kw})
    model = GPT(GPTConfig(method=method, block_size=16, **TINY), seed=seed)
    return model, train(model, corpus.train, cfg, seed, starts=corpus.train_starts(16)), cfg


# --- data: splits and overlap ----------------------------------------------------------------------


def test_splits_are_disjoint_whole_topics_and_share_no_64_byte_string(corpus):
    """Bug: held-out text overlapping training (even with the split bookkeeping edited to match)."""
    topics = load_topics()
    split = corpus.info["topics"]
    names = [set(split[k]) for k in ("train", "validation", "heldout")]
    assert not (names[0] & names[1] or names[0] & names[2] or names[1] & names[2])
    assert set.union(*names) == set(topics)
    for key, tokens in (("train", corpus.train), ("validation", corpus.validation), ("heldout", corpus.heldout)):
        text = "".join(topics[k] for k in sorted(split[key])).encode("utf-8")
        assert bytes(tokens.tolist()) == text, key  # each split is exactly its topics
    assert len(split["heldout"]) >= 10 and 0.05 < len(corpus.heldout) / corpus.info["n_tokens"] <= 0.1
    held = ngram_set(corpus.heldout)
    train_raw, val_raw = bytes(corpus.train.tolist()), bytes(corpus.validation.tolist())
    shared_train = sum(train_raw[i : i + OVERLAP_N] in held for i in range(len(train_raw) - OVERLAP_N + 1))
    shared_val = sum(val_raw[i : i + OVERLAP_N] in held for i in range(len(val_raw) - OVERLAP_N + 1))
    assert shared_train == 0 and shared_val == 0
    assert corpus.info["overlap"]["heldout_ngrams_in_train_text"] == 0.0


def test_tainted_bytes_and_allowed_starts_keep_heldout_strings_out():
    """The safeguard: windows that touch a string of the reference are never drawn."""
    text = torch.tensor(list(b"abcdefghij" * 3 + b"XYZW" + b"klmnopqrst"))
    ref = ngram_set(torch.tensor(list(b"..XYZW..")), n=4)
    tainted = lab_data.tainted_bytes(text, ref, n=4)
    assert tainted.nonzero().flatten().tolist() == [30, 31, 32, 33]
    starts = lab_data.allowed_starts(tainted, 5)  # windows s..s+5
    assert all(s + 5 < 30 or s > 33 for s in starts.tolist())
    assert 0 in starts.tolist() and 24 in starts.tolist() and 25 not in starts.tolist()
    x, y = sample_batch(text, 200, 5, torch.Generator().manual_seed(0), starts)
    assert not any(b"XYZW"[:1] in bytes(row) for row in torch.cat([x, y[:, -1:]], 1).tolist() if 88 in row)


def test_validation_windows_with_a_tainted_byte_are_dropped():
    """The safeguard on the validation side (the real split has nothing to drop)."""
    val = torch.arange(40) % 256
    tainted = torch.zeros(40, dtype=torch.bool)
    tainted[12] = True  # inside window 1 (bytes 8..16) only
    c = lab_data.Corpus(train=val, heldout=val, info={}, validation=val, validation_tainted=tainted)
    x, y = c.validation_windows(8)
    assert x[:, 0].tolist() == [0, 16, 24] and torch.equal(y, x + 1)
    last = torch.zeros(40, dtype=torch.bool)
    last[16] = True  # the last byte window 1 reads (its final target) and the first of window 2
    c = lab_data.Corpus(train=val, heldout=val, info={}, validation=val, validation_tainted=last)
    assert c.validation_windows(8)[0][:, 0].tolist() == [0, 24]


def test_validation_windows_carry_no_heldout_string(corpus):
    x, y = corpus.validation_windows(64)
    held = ngram_set(corpus.heldout)
    for row in torch.cat([x, y[:, -1:]], 1).tolist():
        raw = bytes(row)
        assert raw[:OVERLAP_N] not in held and raw[1:] not in held
    overlap = lab_data.validation_overlap(corpus, 64)
    assert overlap["validation_ngrams_in_heldout"] == 0.0 and overlap["validation_windows"] == len(x) > 300


def test_sampler_draws_windows_all_over_the_text():
    """Bug: the batch sampler always taking the first window."""
    tokens = torch.arange(5000)
    x, y = sample_batch(tokens, 512, 16, torch.Generator().manual_seed(0))
    starts = x[:, 0]
    assert len(starts.unique()) > 400 and int(starts.min()) < 200 and int(starts.max()) > 4700
    assert torch.equal(y, x + 1)
    allowed = torch.arange(1000, 3000, 7)
    x, _ = sample_batch(tokens, 512, 16, torch.Generator().manual_seed(1), allowed)
    assert set(x[:, 0].tolist()) <= set(allowed.tolist()) and len(x[:, 0].unique()) > 200


def test_training_batches_change_from_step_to_step_and_match_across_methods(corpus, monkeypatch):
    """Bugs: the same batch every step; methods seeing different batches for one seed."""
    seen: list[torch.Tensor] = []
    real = lab_train.sample_batch

    def spy(*args, **kwargs):
        x, y = real(*args, **kwargs)
        seen.append(x.clone())
        return x, y

    monkeypatch.setattr(lab_train, "sample_batch", spy)
    tiny_train(corpus, "t5", steps=4, seed=5)
    first = list(seen)
    seen.clear()
    tiny_train(corpus, "none", steps=4, seed=5)
    assert len({tuple(b.flatten().tolist()) for b in first}) == 4  # every step a new batch
    assert all(torch.equal(a, b) for a, b in zip(first, seen))  # same batches for another method


# --- model: paired seeds, every layer gets the position signal ----------------------------------------


def test_one_seed_gives_every_method_the_same_shared_weights():
    """Bug: the position module drawn from the same stream before the blocks (unpaired seeds)."""
    models = {m: GPT(GPTConfig(method=m, block_size=16, **TINY), seed=7) for m in lab_model.METHODS}
    reference = dict(models["none"].shared_parameters())
    for name, model in models.items():
        shared = dict(model.shared_parameters())
        assert shared.keys() == reference.keys()
        for key, p in shared.items():
            assert torch.equal(p, reference[key]), (name, key)
    other = dict(GPT(GPTConfig(method="none", block_size=16, **TINY), seed=8).shared_parameters())
    assert not torch.equal(other["wte.weight"], reference["wte.weight"])
    t5a = GPT(GPTConfig(method="t5", block_size=16, **TINY), seed=7).position.rel.embedding.weight
    t5b = GPT(GPTConfig(method="t5", block_size=16, **TINY), seed=8).position.rel.embedding.weight
    assert torch.equal(t5a, models["t5"].position.rel.embedding.weight) and not torch.equal(t5a, t5b)
    assert 0.01 < float(t5a.detach().std()) < 0.04  # N(0, 0.02^2), as posviz initialises it


@pytest.mark.parametrize("method", ["t5", "alibi"])
def test_every_layer_receives_the_score_bias(monkeypatch, method):
    """Bug: the position bias reaching only the first layer."""
    calls = []
    real = lab_positions.attention

    def spy(q, k, v, *args, **kwargs):
        calls.append(kwargs.get("bias"))
        return real(q, k, v, *args, **kwargs)

    monkeypatch.setattr(lab_positions, "attention", spy)
    model = GPT(GPTConfig(method=method, block_size=8, n_layer=3, n_head=2, n_embd=16), seed=0)
    with torch.no_grad():
        for p in model.position.parameters():
            p.normal_(0, 1.0)
        model(torch.randint(0, 256, (1, 8)))
        expected = model.position.bias(8, torch.device("cpu"), torch.float32)
    assert len(calls) == 3
    for bias in calls:
        assert bias is not None
        torch.testing.assert_close(bias, expected)


def test_every_layer_uses_its_shaw_tables_and_rope_rotation(monkeypatch):
    """Same bug for the methods that act inside attention."""
    shaw = GPT(GPTConfig(method="shaw", block_size=8, n_layer=3, n_head=2, n_embd=16), seed=0)
    used = []
    for i, layer in enumerate(shaw.position.layers):
        layer.register_forward_hook(lambda mod, args, kwargs_out, i=i: used.append(i))
    shaw(torch.randint(0, 256, (1, 8)))
    assert used == [0, 1, 2]
    rope = GPT(GPTConfig(method="rope", block_size=8, n_layer=3, n_head=2, n_embd=16), seed=0)
    calls = []
    real = lab_positions.apply_rope
    monkeypatch.setattr(lab_positions, "apply_rope", lambda *a, **k: calls.append(1) or real(*a, **k))
    rope(torch.randint(0, 256, (1, 8)))
    assert len(calls) == 2 * 3  # q and k in each layer


# --- optimizer: groups, schedule, clipping, final loss ------------------------------------------------


def test_weight_decay_only_on_shared_matrices(corpus):
    """Bug: weight decay on every parameter."""
    for method in ("t5", "learned", "shaw", "alibi"):
        model = GPT(GPTConfig(method=method, block_size=16, **TINY), seed=0)
        opt = lab_train.make_optimizer(model, TrainConfig(weight_decay=0.1, position_lr_mult=7.0))
        groups = {g["name"]: g for g in opt.param_groups}
        ids = {name: {id(p) for p in g["params"]} for name, g in groups.items()}
        shared = dict(model.shared_parameters())
        assert ids["decay"] == {id(p) for p in shared.values() if p.dim() == 2}
        assert ids["no_decay"] == {id(p) for p in shared.values() if p.dim() < 2}
        assert ids["position"] == {id(p) for p in model.position.parameters()}
        assert sum(len(v) for v in ids.values()) == len(list(model.parameters()))
        assert groups["decay"]["weight_decay"] == 0.1
        assert groups["no_decay"]["weight_decay"] == 0.0 and groups["position"]["weight_decay"] == 0.0
        assert groups["position"]["lr_mult"] == 7.0 and groups["decay"]["lr_mult"] == 1.0
        names = {n for n, p in shared.items() if id(p) in ids["no_decay"]}
        assert names and all("ln_" in n or n.endswith(".bias") for n in names)


def test_the_optimizer_steps_with_the_scheduled_learning_rate(corpus, monkeypatch):
    """Bug: the learning-rate schedule not applied (the optimizer keeps its initial lr)."""
    log = spy_optimizer(monkeypatch)
    _, res, cfg = tiny_train(corpus, "t5", steps=12, lr=1e-3, position_lr_mult=5.0, min_lr_ratio=0.1)
    expected = [lr_at(s, cfg) for s in range(12)]
    assert [g[0] for g in log["lr"]] == pytest.approx(expected)
    assert [g[1] for g in log["lr"]] == pytest.approx(expected)
    assert [g[2] for g in log["lr"]] == pytest.approx([5.0 * e for e in expected])
    assert res.step_lr == pytest.approx(expected)  # and the record says so
    assert len(set(res.step_lr)) == 11  # warm-up end and cosine start share the peak


def test_first_adam_step_moves_a_parameter_by_the_scheduled_lr(corpus):
    """The schedule reaches the update itself: Adam's first step moves each coordinate by lr."""
    model = GPT(GPTConfig(method="none", block_size=16, **TINY), seed=0)
    before = model.ln_f.bias.detach().clone()
    cfg = TrainConfig(steps=1, warmup_steps=4, batch_size=2, lr=1e-2, log_every=1)
    train(model, corpus.train, cfg, 0)
    step = (model.ln_f.bias.detach() - before).abs()
    assert float(step.max()) == pytest.approx(lr_at(0, cfg), rel=1e-3)  # 1e-2 / 4, not 1e-2


def test_gradients_are_clipped_before_the_update(corpus, monkeypatch):
    """Bug: gradient clipping off."""
    log = spy_optimizer(monkeypatch)
    _, res, _ = tiny_train(corpus, "t5", steps=6, grad_clip=0.05)
    assert all(n <= 0.05 * (1 + 1e-4) for n in log["grad_norm"])
    assert all(n > 0.05 for n in res.step_grad_norm)  # the recorded norm is the one before clipping
    log["grad_norm"].clear()
    _, res, _ = tiny_train(corpus, "t5", steps=6, grad_clip=0.0)
    assert log["grad_norm"] == pytest.approx(res.step_grad_norm, rel=1e-4)


def test_final_loss_is_the_mean_of_the_last_tenth_of_steps(corpus):
    """Bug: the final loss taken from the first 10% of steps."""
    _, res, _ = tiny_train(corpus, "alibi", steps=30, lr=3e-3)
    assert len(res.step_loss) == 30
    assert res.final_loss == pytest.approx(statistics.fmean(res.step_loss[-3:]), rel=1e-6)
    assert statistics.fmean(res.step_loss[:3]) != pytest.approx(res.final_loss, rel=1e-3)  # the two ends differ
    assert res.curve_loss[-1] == pytest.approx(statistics.fmean(res.step_loss[-2:]), rel=1e-6)


# --- evaluation ---------------------------------------------------------------------------------------


def test_evaluation_scores_the_last_partial_batch(corpus):
    """Bug: evaluation dropping the last batch (here 3 + 1 windows)."""
    model = GPT(GPTConfig(method="alibi", block_size=16, **TINY), seed=0)
    x, y = eval_windows(corpus.heldout, 16, 32, max_tokens=64)  # 4 windows of 16
    with torch.no_grad():
        by_hand = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten(), reduction="none")
    expected = float(by_hand.double().mean())
    res = evaluate(model, corpus.heldout, [16, 32], tokens_per_batch=48, max_tokens=64)
    assert res[0].scored_tokens == 64
    assert res[0].loss == pytest.approx(expected, rel=1e-6)
    assert res[0].perplexity == pytest.approx(math.exp(expected), rel=1e-6)
    assert mean_loss(model, x, y, tokens_per_batch=48) == pytest.approx(expected, rel=1e-6)


def test_cannot_run_comes_only_from_the_learned_tables_own_exception(corpus, monkeypatch):
    """Bug: any IndexError recorded as "cannot run"."""
    learned = GPT(GPTConfig(method="learned", block_size=16, **TINY), seed=0)
    with pytest.raises(BeyondLearnedTable, match="max_len=16"):
        learned(torch.zeros(1, 17, dtype=torch.long))
    res = evaluate(learned, corpus.heldout, [16, 32], max_tokens=64)
    assert res[1].loss is None and "past the learned table" in res[1].cannot_run
    assert lab_memory.inference_memory(learned, 32, 64) is None
    broken = GPT(GPTConfig(method="alibi", block_size=16, **TINY), seed=0)

    def fail(length, device, dtype):
        raise IndexError("a bug, not a length the method cannot run")

    monkeypatch.setattr(broken.position, "bias", fail)
    with pytest.raises(IndexError, match="a bug"):
        evaluate(broken, corpus.heldout, [16, 32], max_tokens=64)


# --- statistics ---------------------------------------------------------------------------------------


def test_spread_is_the_sample_standard_deviation():
    """Bug: population instead of sample std."""
    assert summarize([1.0, 2.0, 3.0, 4.0])["std"] == pytest.approx(statistics.stdev([1, 2, 3, 4]))
    assert summarize([5.0])["std"] is None
    lists = summarize_lists([[1.0, 10.0], [2.0, None], [4.0, 12.0]])
    assert lists["std"][0] == pytest.approx(statistics.stdev([1, 2, 4])) and lists["std"][1] is None


def test_inside_spread_rule():
    assert inside_spread([0.5, 0.6, 0.7]) is False  # same sign, mean 0.6 > std 0.1
    assert inside_spread([-0.1, 0.5, 0.6]) is True  # signs differ
    assert inside_spread([0.01, 0.5, 0.02]) is True  # same sign but mean < std
    assert inside_spread([-0.01, 1.0, 1.0]) is True  # mean > std, but one seed disagrees in sign
    assert inside_spread([0.3]) is None


# --- memory: public profiler API, stderr untouched ------------------------------------------------------


def test_cpu_memory_uses_no_private_profiler_api_and_leaves_stderr_alone(monkeypatch):
    import os

    def forbidden(*args, **kwargs):
        raise AssertionError("the process's file descriptors must not be redirected")

    def work():
        a = torch.ones(1_000_000)  # 4 MB
        b = a * 2  # another 4 MB while a is alive
        return float(b[0])

    with monkeypatch.context() as m:  # undone before pytest's own capture needs dup2 again
        m.setattr(os, "dup2", forbidden)
        m.setattr(os, "dup", forbidden)
        one = lab_memory.peak_bytes(work, torch.device("cpu"))
        peaks = lab_memory.peak_bytes_many({"small": lambda: torch.ones(1000) + 1, "big": work}, torch.device("cpu"))
    assert 8_000_000 <= one < 8_100_000
    assert peaks["small"] < 100_000 and 8_000_000 <= peaks["big"] < 8_100_000
    source = inspect.getsource(lab_memory)
    assert "kineto_results" not in source and "_quiet_stderr" not in source and ".profiler.profiler" not in source
