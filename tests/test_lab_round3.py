"""posviz.lab, round three (issue 24): the new plug-ins (randomized positions, FIRE, KERPLE, CoPE,
xPos), their registration, the published file that has no rows for them yet, and the protocol."""

from __future__ import annotations

import pytest
import torch

import posviz
import posviz.lab.positions as lab_positions
from posviz.lab import ALL_METHODS, GPT, METHODS, GPTConfig, LabConfig, run_experiment
from posviz.lab.config import POSITION_PARAMETERS, QUICK_METHODS, full_config, quick_config
from posviz.lab.experiment import check_publishable
from posviz.lab.model import CLASSIC_METHODS, METHOD_KIND, NOT_YET_PUBLISHED, ROUND3_METHODS, derive_seed
from posviz.lab.positions_round3 import RANDOM_RANGE_FACTOR, ROUND3_CLASSES
from posviz.lab.results import load_published, validate_results
from posviz.lab.train import TrainConfig

TINY = {"n_layer": 2, "n_head": 2, "n_embd": 16}

pytestmark = pytest.mark.usefixtures("one_torch_thread", "restore_determinism")


def model(method: str, block_size: int = 8, seed: int = 0, **kw) -> GPT:
    return GPT(GPTConfig(method=method, block_size=block_size, **{**TINY, **kw}), seed=seed)


# --- the published file, the presets ---------------------------------------------------------------


def test_not_yet_published_names_exactly_the_rows_the_published_file_lacks():
    published = load_published()
    missing = [m for m in ALL_METHODS if m not in published["methods"]]
    assert missing == list(NOT_YET_PUBLISHED)  # empty this tuple when the republish lands
    assert published["method_order"] == [m for m in ALL_METHODS if m in published["methods"]]
    from posviz.lab import paired_table, perplexity_table

    assert all(f"| {m} " not in perplexity_table(published) for m in NOT_YET_PUBLISHED)
    assert "| alibi |" in paired_table(published)


def test_publish_runs_every_method_and_quick_one_per_family():
    full = full_config()
    assert full.methods == list(ALL_METHODS) and set(ROUND3_METHODS) <= set(full.methods)
    check_publishable(full)  # the default full run, new rows included, is what --publish takes
    quick = quick_config()
    assert quick.methods == list(QUICK_METHODS)
    assert set(CLASSIC_METHODS) <= set(quick.methods) and "rope-llama3" in quick.methods
    assert {"rope-random", "fire", "cope", "xpos"} <= set(quick.methods)


def test_every_new_method_is_registered_and_position_parameters_are_exactly_the_trainable_ones():
    for name in ROUND3_METHODS:
        assert name in METHODS and name in METHOD_KIND and name in ALL_METHODS
        assert lab_positions._POSITION_CLASSES[name] is ROUND3_CLASSES[name]
    for name in METHODS:
        has = any(p.requires_grad for p in model(name).position.parameters())
        assert (name in POSITION_PARAMETERS) == has, name  # the lr search runs exactly where it can matter


def test_classic_methods_draw_their_parameters_as_before():
    """The default init (N(0, 0.02^2) per parameter, in order, from the position stream) is the old loop."""
    for name in ("learned", "shaw", "t5"):
        m = model(name, seed=5)
        g = torch.Generator().manual_seed(derive_seed(5, "position"))
        for p in m.position.parameters():
            assert torch.equal(p.detach(), torch.empty_like(p).normal_(0.0, 0.02, generator=g)), name


# --- randomized positions ----------------------------------------------------------------------------


def test_training_draws_sorted_random_positions_and_evaluation_uses_0_to_n_minus_1():
    m = model("learned-random", block_size=8)
    position = m.position
    assert position.table.max_len == RANDOM_RANGE_FACTOR * 8  # the table covers 16x
    position.train()
    draws = []
    for _ in range(30):
        position.add_to_input(8, torch.device("cpu"), torch.float32)
        p = position._positions
        assert bool((p[1:] > p[:-1]).all()) and int(p.min()) >= 0 and int(p.max()) < 16 * 8
        draws.append(tuple(p.tolist()))
    assert len(set(draws)) == 30 and max(max(d) for d in draws) >= 8  # fresh per batch, past the training length
    with torch.no_grad():  # a pass that learns nothing reads the evaluation positions, in either mode
        assert torch.equal(position.add_to_input(8, torch.device("cpu"), torch.float32), position.table.rows(8))
    position.eval()
    for n in (8, 64, 128):
        assert torch.equal(position.add_to_input(n, torch.device("cpu"), torch.float32), position.table.rows(n))
    with pytest.raises(lab_positions.BeyondLearnedTable, match="max_len=128"):
        position.add_to_input(129, torch.device("cpu"), torch.float32)


def test_draws_are_seeded_and_resume_from_the_state_dict():
    def sequence(m: GPT, k: int) -> list[tuple[int, ...]]:
        m.position.train()
        out = []
        for _ in range(k):
            m.position.add_to_input(8, torch.device("cpu"), torch.float32)
            out.append(tuple(m.position._positions.tolist()))
        return out

    a, b, c = model("rope-random", seed=1), model("rope-random", seed=1), model("rope-random", seed=2)
    first = sequence(a, 6)
    assert first == sequence(b, 6) and first != sequence(c, 6)
    resumed = model("rope-random", seed=1)
    sequence(resumed, 3)
    state = resumed.state_dict()
    fresh = model("rope-random", seed=9)
    fresh.load_state_dict(state)
    assert sequence(fresh, 3) == first[3:]  # the counter travels with the checkpoint


def test_rope_random_rotates_by_the_draw_in_training_and_by_0_to_n_minus_1_in_evaluation():
    m = model("rope-random")
    position = m.position
    q, k = torch.randn(2, 2, 8, 8), torch.randn(2, 2, 8, 8)
    position.train()
    position.add_to_input(8, torch.device("cpu"), torch.float32)
    drawn = position._positions
    rq, rk = position.rotate(q, k)
    assert torch.equal(rq, posviz.apply_rope(q, drawn)) and torch.equal(rk, posviz.apply_rope(k, drawn))
    assert not torch.equal(drawn, torch.arange(8))
    position.eval()
    position.add_to_input(8, torch.device("cpu"), torch.float32)
    rq, rk = position.rotate(q, k)
    assert torch.equal(rq, posviz.apply_rope(q)) and torch.equal(rk, posviz.apply_rope(k))
    x = torch.randint(0, 256, (1, 8))
    m.train()
    assert not torch.equal(m(x), m(x))  # a new draw per pass
    m.eval()
    with torch.no_grad():
        assert torch.equal(m(x), m(x))


# --- FIRE, KERPLE, CoPE, xPos in the model -------------------------------------------------------


def test_bias_methods_use_their_posviz_modules_shared_by_all_layers():
    fire = model("fire", block_size=16).position
    assert fire.fire.init_threshold == pytest.approx(4.0)  # a quarter of the training length
    assert torch.equal(fire.bias(10, torch.device("cpu"), torch.float32), fire.fire(10).detach().float())
    kerple = model("kerple-log").position
    b = kerple.bias(6, torch.device("cpu"), torch.float64)
    assert torch.allclose(b, posviz.kerple_log_bias(kerple.kerple.r1.double(), kerple.kerple.r2.double(), 6))
    assert bool((kerple.kerple.r1 > 0).all()) and bool((kerple.kerple.r1 <= 2).all())  # drawn as KERPLE's code


def test_cope_attention_adds_q_dot_e_p_to_the_scores():
    torch.manual_seed(0)
    m = model("cope").double()
    position = m.position
    q, k, v = (torch.randn(1, 2, 6, 8, dtype=torch.float64) for _ in range(3))
    out = position.attend(q, k, v, None, layer=1)
    scores = q @ k.transpose(-1, -2) / 8**0.5
    bias = position.layers[1](q, scores)
    expected, _ = posviz.attention(q, k, v, bias=bias, causal=True)
    assert torch.allclose(out, expected)
    other, _ = posviz.attention(q, k, v, bias=position.layers[0](q, scores), causal=True)
    assert not torch.allclose(out, other)  # one table per layer
    assert m.set_attention("sdpa") == "posviz"  # a q-dependent bias: never SDPA


def test_xpos_in_the_model_is_posviz_apply_xpos():
    position = model("xpos").position
    q, k = torch.randn(1, 2, 9, 8), torch.randn(1, 2, 9, 8)
    xq, xk = position.rotate(q, k)
    eq, ek = posviz.apply_xpos(q, k)
    assert torch.equal(xq, eq) and torch.equal(xk, ek)


@pytest.mark.parametrize("method", ["learned-random", "rope-random", "fire", "kerple-log", "xpos"])
def test_sdpa_computes_the_same_function(method):
    m = model(method, block_size=8).double().eval()
    x = torch.randint(0, 256, (2, 24))
    with torch.no_grad():
        ref = m(x)
        assert m.set_attention("sdpa") == "sdpa"
        assert torch.allclose(m(x), ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("method", ["learned-random", "fire", "kerple-log", "cope"])
def test_a_training_step_reaches_every_position_parameter(method):
    m = model(method)
    m.train()
    x = torch.randint(0, 256, (4, 8))
    logits = m(x)
    torch.nn.functional.cross_entropy(logits.flatten(0, 1), x.roll(-1, 1).flatten()).backward()
    for name, p in m.position.named_parameters():
        assert p.grad is not None and float(p.grad.abs().sum()) > 0, (method, name)


def test_new_methods_are_causal():
    for method in ROUND3_METHODS:
        m = model(method).double().eval()
        x = torch.randint(0, 256, (1, 10))
        y = x.clone()
        y[0, 7:] = (y[0, 7:] + 1) % 256  # change the future of position 6
        with torch.no_grad():
            assert torch.allclose(m(x)[0, :7], m(y)[0, :7], rtol=0, atol=1e-12), method


# --- the protocol ------------------------------------------------------------------------------------


def test_a_tiny_run_of_the_new_methods_searches_their_learning_rates_and_leaves_other_rows_alone():
    def cfg(methods: list[str]) -> LabConfig:
        return LabConfig(
            methods=methods,
            seeds=[0, 1],
            train_len=8,
            eval_multipliers=[1, 2, 16],
            model=dict(TINY),
            train=TrainConfig(steps=3, warmup_steps=1, batch_size=4, log_every=1),
            eval_tokens_per_batch=128,
            eval_max_tokens=128,
            validation_max_tokens=256,
            position_lr_grid=[1.0, 10.0],
            mode="test",
        )

    r = run_experiment(cfg(["none", "alibi", *ROUND3_METHODS]), progress=False)
    validate_results(r)
    assert r["method_order"] == ["none", "alibi", *ROUND3_METHODS]
    for name in ROUND3_METHODS:
        entry = r["methods"][name]
        assert entry["kind"] == METHOD_KIND[name] and entry["trained_as"] == name
        assert all(c is None for s in entry["seeds"] for c in s["cannot_run"])  # 16x runs, learned-random too
        searched = [p["position_lr_mult"] for p in entry["lr_search"]]
        assert searched == ([1.0, 10.0] if name in POSITION_PARAMETERS else []), name
    assert r["methods"]["learned-random"]["max_length"] == 16 * 8 and r["methods"]["fire"]["max_length"] is None
    alone = run_experiment(cfg(["none", "alibi"]), progress=False)
    for name in ("none", "alibi"):  # adding methods to a run changes no other row's numbers
        for a, b in zip(alone["methods"][name]["seeds"], r["methods"][name]["seeds"]):
            assert a["perplexity"] == b["perplexity"] and a["final_train_loss"] == b["final_train_loss"]
