"""posviz.lab, the train-short/test-long experiment's model side: data, model plug-ins (each method
calls the posviz function its chapter teaches), causality, training, evaluation, determinism.
The end-to-end run, results schema, figures, tables and CLI are in test_lab_results.py."""

from __future__ import annotations

import hashlib
import math
import sys

import pytest
import torch

import posviz
import posviz.lab.model as lab_model
import posviz.lab.positions as lab_positions
from posviz.lab import ALL_METHODS, GPT, METHODS, GPTConfig
from posviz.lab.data import eval_windows, load_text, sample_batch
from posviz.lab.evaluate import evaluate
from posviz.lab.memory import peak_bytes
from posviz.lab.train import TrainConfig, lr_at, seed_everything, train

TINY = {"n_layer": 1, "n_head": 2, "n_embd": 16}


pytestmark = pytest.mark.usefixtures("one_torch_thread", "restore_determinism")


def tiny_model(method: str, block_size: int = 8, **kw) -> GPT:
    torch.manual_seed(0)
    return GPT(GPTConfig(method=method, block_size=block_size, **{**TINY, **kw}))


def with_scaling(method: str, block_size: int = 8) -> GPT:
    """A model for any name in ALL_METHODS (rope-pi / rope-ntk: a rope model with that scaling)."""
    model = tiny_model("rope" if method in lab_model.ROPE_VARIANTS else method, block_size)
    if method in lab_model.ROPE_VARIANTS:
        model.set_rope_scaling(lab_model.ROPE_VARIANTS[method])
    return model


# --- data ---------------------------------------------------------------------------------------


def test_corpus_is_the_pydoc_topics_split_three_ways_with_hashes(corpus):
    raw = load_text().encode("utf-8")
    info = corpus.info
    assert info["n_tokens"] == len(raw) > 400_000
    n = {"train": len(corpus.train), "validation": len(corpus.validation), "heldout": len(corpus.heldout)}
    assert info["n_train_tokens"] == n["train"] and info["n_heldout_tokens"] == n["heldout"]
    assert info["n_validation_tokens"] == n["validation"] and sum(n.values()) == len(raw)
    assert 0.85 <= n["train"] / len(raw) and n["heldout"] / len(raw) <= 0.1 and n["validation"] / len(raw) <= 0.05
    assert info["sha256"]["text"] == hashlib.sha256(raw).hexdigest()
    for split, tokens in (("train", corpus.train), ("validation", corpus.validation), ("heldout", corpus.heldout)):
        assert info["sha256"][split] == hashlib.sha256(bytes(tokens.tolist())).hexdigest()
    assert info["python"] == sys.version
    assert corpus.train.dtype == torch.long and int(corpus.train.max()) < 256


def test_eval_windows_score_the_same_tokens_at_every_length(corpus):
    targets = []
    for length in (8, 16, 32):
        x, y = eval_windows(corpus.heldout, length, 32)
        assert x.shape == y.shape and x.shape[1] == length
        torch.testing.assert_close(y.flatten()[:-1], x.flatten()[1:])  # y is x shifted by one
        targets.append(y.flatten())
    assert all(torch.equal(t, targets[0]) for t in targets)
    assert len(targets[0]) == (len(corpus.heldout) - 1) // 32 * 32
    x, _ = eval_windows(corpus.heldout, 8, 32, max_tokens=100)
    assert x.numel() == 96


def test_every_length_scores_the_same_tokens_whatever_the_remainder():
    """Bug: windows cut to their own length instead of the longest; the pydoc split passed it by the
    coincidence (N - 1) mod 32 = 4 < 8. Here (N - 1) mod 32 = 13."""
    tokens = torch.arange(32 * 5 + 13 + 1) % 256
    assert (len(tokens) - 1) % 32 == 13
    ys = [eval_windows(tokens, length, 32)[1].flatten() for length in (8, 16, 32)]
    assert all(torch.equal(y, ys[0]) for y in ys) and len(ys[0]) == 32 * 5


def test_sample_batch_targets_are_next_tokens(corpus):
    x, y = sample_batch(corpus.train, 4, 16, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (4, 16)
    torch.testing.assert_close(x[:, 1:], y[:, :-1])


# --- each method uses the posviz function its chapter teaches ------------------------------------


def spy(monkeypatch, owner, name):
    calls = []
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        calls.append((args, kwargs))
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapper)
    return calls


@pytest.mark.parametrize(
    ("method", "owner", "name"),
    [
        ("sinusoidal", lab_positions, "sinusoidal_encoding"),
        ("learned", posviz.LearnedPositionalEmbedding, "forward"),
        ("shaw", posviz.ShawRelativePosition, "forward"),
        ("t5", posviz.T5RelativeBias, "forward"),
        ("rope", lab_positions, "apply_rope"),
        ("alibi", lab_positions, "alibi_bias"),
    ],
)
def test_method_calls_its_posviz_function(monkeypatch, method, owner, name):
    model = tiny_model(method)
    calls = spy(monkeypatch, owner, name)
    model(torch.randint(0, 256, (2, 8)))
    assert calls, f"{method} did not call posviz {name}"


@pytest.mark.parametrize("method", METHODS)
def test_attention_is_posviz_attention_with_causal_mask(monkeypatch, method):
    # Shaw's module computes its own scores and applies posviz.attention's mask rule
    # (posviz.dot_product.masked_softmax, causal third); everyone else calls posviz.attention.
    if method == "shaw":
        calls = spy(monkeypatch, sys.modules[posviz.ShawRelativePosition.__module__], "masked_softmax")
    else:
        calls = spy(monkeypatch, lab_positions, "attention")
    model = tiny_model(method, n_layer=2)
    model(torch.randint(0, 256, (2, 8)))
    assert len(calls) == 2  # one per layer
    if method == "shaw":
        assert all(args[2] is True for args, _ in calls)
    else:
        assert all(kw.get("causal") is True for _, kw in calls)


def test_no_position_method_calls_no_position_function(monkeypatch):
    names = ("sinusoidal_encoding", "apply_rope", "alibi_bias")
    spies = [spy(monkeypatch, lab_positions, n) for n in names]
    tiny_model("none")(torch.randint(0, 256, (2, 8)))
    assert not any(spies)


def test_position_outputs_equal_manual_posviz_calls():
    dev, f32 = torch.device("cpu"), torch.float32
    sin = tiny_model("sinusoidal")
    torch.testing.assert_close(sin.position.add_to_input(8, dev, f32), posviz.sinusoidal_encoding(8, 16, device="cpu"))
    ali = tiny_model("alibi")
    torch.testing.assert_close(ali.position.bias(8, dev, f32), posviz.alibi_bias(2, 8, device="cpu"))
    t5 = tiny_model("t5")
    assert t5.position.rel.bidirectional is False
    torch.testing.assert_close(t5.position.bias(8, dev, f32), t5.position.rel(8))
    learned = tiny_model("learned")
    torch.testing.assert_close(learned.position.add_to_input(8, dev, f32), learned.position.table.table.weight)
    rope = tiny_model("rope")
    q, k = torch.randn(2, 2, 8, 8), torch.randn(2, 2, 8, 8)  # (B, nh, T, hs)
    rq, rk = rope.position.rotate(q, k)
    torch.testing.assert_close(rq, posviz.apply_rope(q))
    torch.testing.assert_close(rk, posviz.apply_rope(k))


def test_rope_scaling_variants(monkeypatch):
    model = tiny_model("rope")  # trained length 8, head size 8
    q, k = torch.randn(1, 2, 16, 8), torch.randn(1, 2, 16, 8)
    model.set_rope_scaling("pi")
    rq, _ = model.position.rotate(q, k)
    torch.testing.assert_close(rq, posviz.apply_rope(q, torch.arange(16) / 2.0))  # positions m * 8/16
    short = torch.randn(1, 2, 8, 8)
    torch.testing.assert_close(model.position.rotate(short, short)[0], posviz.apply_rope(short))  # no-op at <= 8
    model.set_rope_scaling("ntk")
    rq, _ = model.position.rotate(q, k)
    torch.testing.assert_close(rq, posviz.apply_rope(q, base=10000.0 * 2.0 ** (8 / 6)))  # b s^(d/(d-2))
    with pytest.raises(ValueError, match="rope model"):
        tiny_model("alibi").set_rope_scaling("pi")


def test_learned_table_cannot_run_past_its_length():
    model = tiny_model("learned")
    with pytest.raises(IndexError, match="max_len=8"):
        model(torch.zeros(1, 9, dtype=torch.long))


def test_token_embeddings_are_scaled_by_sqrt_d():
    """Bug: the sqrt(d) embedding scale dropped (Vaswani et al. 3.4)."""
    model = GPT(GPTConfig(method="none", block_size=8, **TINY), seed=0)
    seen = []
    model.blocks[0].register_forward_pre_hook(lambda module, args: seen.append(args[0].detach()))
    idx = torch.randint(0, 256, (2, 8))
    model(idx)
    torch.testing.assert_close(seen[0], model.wte(idx).detach() * math.sqrt(TINY["n_embd"]))


# --- causality ----------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ALL_METHODS)
def test_changing_a_future_token_leaves_past_logits_unchanged(method):
    block = 8 if method in ("learned",) else 4  # rope variants: evaluate at 2x the training length
    model = with_scaling(method, block_size=block)
    length = 8
    # make the position parameters large enough to matter
    with torch.no_grad():
        for p in model.position.parameters():
            p.normal_(0, 0.5)
    idx = torch.randint(0, 256, (2, length), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        base = model(idx)
        for t in range(length - 1):
            changed = idx.clone()
            changed[:, t + 1] = (changed[:, t + 1] + 1) % 256
            out = model(changed)
            torch.testing.assert_close(out[:, : t + 1], base[:, : t + 1], rtol=0, atol=1e-6)
            assert not torch.allclose(out[:, t + 1], base[:, t + 1])  # the test can see a change


# --- training, evaluation, determinism --------------------------------------------------------------


def test_lr_schedule():
    cfg = TrainConfig(steps=100, warmup_steps=10, lr=1e-3, min_lr_ratio=0.1)
    assert lr_at(0, cfg) == pytest.approx(1e-4)
    assert lr_at(9, cfg) == pytest.approx(1e-3)
    assert lr_at(10, cfg) == pytest.approx(1e-3)
    assert lr_at(55, cfg) == pytest.approx(1e-3 * (0.1 + 0.9 * 0.5))
    assert lr_at(100, cfg) == pytest.approx(1e-4)


def _train_once(corpus, seed: int, method: str = "alibi"):
    seed_everything(seed)
    model = GPT(GPTConfig(method=method, block_size=16, **TINY))
    result = train(model, corpus.train, TrainConfig(steps=6, warmup_steps=2, batch_size=4, log_every=2), seed)
    return model, result


@pytest.mark.parametrize("method", ["t5", "shaw"])
def test_same_seed_same_numbers(corpus, method):
    m1, r1 = _train_once(corpus, 3, method)
    m2, r2 = _train_once(corpus, 3, method)
    assert r1.curve_loss == r2.curve_loss and r1.final_loss == r2.final_loss
    for (n, a), (_, b) in zip(m1.state_dict().items(), m2.state_dict().items()):
        assert torch.equal(a, b), n
    e1 = evaluate(m1, corpus.heldout, [16, 32], max_tokens=256)
    e2 = evaluate(m2, corpus.heldout, [16, 32], max_tokens=256)
    assert [e.loss for e in e1] == [e.loss for e in e2]
    _, r3 = _train_once(corpus, 4, method)
    assert r3.curve_loss != r1.curve_loss


def test_evaluate_perplexity_is_exp_mean_token_loss(corpus):
    model = tiny_model("learned", block_size=16)
    res = evaluate(model, corpus.heldout, [16, 32], max_tokens=64)
    x, y = eval_windows(corpus.heldout, 16, 32, max_tokens=64)
    with torch.no_grad():
        manual = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
    assert res[0].loss == pytest.approx(float(manual), rel=1e-5)
    assert res[0].perplexity == pytest.approx(math.exp(res[0].loss))
    assert res[1].loss is None and res[1].perplexity is None and "max_len=16" in res[1].cannot_run


def test_peak_bytes_sees_torch_allocations():
    def work():
        a = torch.ones(1_000_000)  # 4 MB
        b = a * 2  # another 4 MB while a is alive
        return float(b[0])

    peak = peak_bytes(work, torch.device("cpu"))
    assert 8_000_000 <= peak < 12_000_000


def test_checkpoint_roundtrip(tmp_path):
    from posviz.lab.checkpoint import load_checkpoint, save_checkpoint

    model = tiny_model("t5")
    path = save_checkpoint(model, tmp_path / "m.pt")
    again = load_checkpoint(path)
    idx = torch.randint(0, 256, (1, 8))
    with torch.no_grad():
        torch.testing.assert_close(again(idx), model(idx))
