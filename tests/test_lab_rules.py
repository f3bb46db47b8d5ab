"""posviz.lab: the evaluation-time RoPE rules (YaRN with and without its temperature, dynamic NTK,
llama3 by-parts) and ``--merge-into`` (adding such rows to a results file after a rope-only rerun)."""

from __future__ import annotations

import copy
import json
import math

import pytest
import torch

import posviz
from posviz.lab import GPT, ROPE_VARIANTS, GPTConfig, LabConfig, run_experiment
from posviz.lab.cli import main
from posviz.lab.merge import RerunMismatch, check_mergeable_config, code_version, merge_rerun
from posviz.lab.positions import DYNAMIC_FACTOR, LLAMA3_FREQ_FACTORS, ROPE_SCALINGS, rope_scaling_config
from posviz.lab.results import save_results, validate_results
from posviz.lab.train import TrainConfig

TINY = {"n_layer": 1, "n_head": 2, "n_embd": 16}
NEW_RULES = ("yarn", "yarn-no-temp", "dynamic", "llama3")

pytestmark = pytest.mark.usefixtures("one_torch_thread", "restore_determinism")


def rope_model(block_size: int = 8, **kw) -> GPT:
    torch.manual_seed(0)
    return GPT(GPTConfig(method="rope", block_size=block_size, **{**TINY, **kw}))


def rotated(rule: str, q: torch.Tensor, k: torch.Tensor, block_size: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    model = rope_model(block_size)
    model.set_rope_scaling(rule)
    return model.position.rotate(q, k)


# --- the rules -------------------------------------------------------------------------------------


def test_variant_names_map_to_the_rules():
    assert set(ROPE_VARIANTS.values()) == set(ROPE_SCALINGS) - {"none"}
    assert {ROPE_VARIANTS[f"rope-{r}"] for r in NEW_RULES} == set(NEW_RULES)


@pytest.mark.parametrize("rule", NEW_RULES)
def test_every_new_rule_is_the_plain_model_up_to_the_training_length(rule):
    q, k = torch.randn(1, 2, 8, 8), torch.randn(1, 2, 8, 8)
    rq, rk = rotated(rule, q, k)
    assert torch.equal(rq, posviz.apply_rope(q)) and torch.equal(rk, posviz.apply_rope(k))  # bit for bit
    assert rope_scaling_config(rule, 8, 8) is None and rope_scaling_config(rule, 4, 8) is None


@pytest.mark.parametrize("rule", NEW_RULES)
def test_new_rules_are_posviz_rope_frequencies_and_attention_factor_of_their_mapping(rule):
    q, k = torch.randn(1, 2, 32, 8), torch.randn(1, 2, 32, 8)  # 4x the training length 8
    rq, rk = rotated(rule, q, k)
    config = rope_scaling_config(rule, 32, 8)
    theta = posviz.rope_frequencies(8, 10000.0, scaling=config, seq_len=32, dtype=torch.float64)
    a = posviz.rope_attention_factor(config)
    torch.testing.assert_close(rq, posviz.apply_rope(q, frequencies=theta, attention_factor=a))
    torch.testing.assert_close(rk, posviz.apply_rope(k, frequencies=theta, attention_factor=a))


def test_the_mappings_are_the_documented_settings():
    s = 1024 / 64
    assert rope_scaling_config("pi", 1024, 64) == {"rope_type": "linear", "factor": s}
    assert rope_scaling_config("ntk", 1024, 64) == {
        "rope_type": "dynamic", "factor": 1.0, "max_position_embeddings": 64,
    }
    assert rope_scaling_config("dynamic", 1024, 64) == {
        "rope_type": "dynamic", "factor": 2.0, "max_position_embeddings": 64,
    }
    assert rope_scaling_config("yarn", 1024, 64) == {
        "rope_type": "yarn", "factor": s, "original_max_position_embeddings": 64,
    }
    assert rope_scaling_config("yarn-no-temp", 1024, 64)["attention_factor"] == 1.0
    assert rope_scaling_config("llama3", 1024, 64) == {
        "rope_type": "llama3", "factor": s, "original_max_position_embeddings": 64,
        "low_freq_factor": 1.0, "high_freq_factor": 4.0,
    }
    assert DYNAMIC_FACTOR == 2.0 and LLAMA3_FREQ_FACTORS == (1.0, 4.0)
    with pytest.raises(ValueError, match="must be one of"):
        rope_scaling_config("ntk-by-parts", 1024, 64)


def test_the_pi_and_ntk_mappings_describe_what_the_lab_computes():
    """rope-pi and rope-ntk keep their own arithmetic (the published numbers); their mappings agree."""
    for rule in ("pi", "ntk"):
        q = torch.randn(1, 2, 32, 8, dtype=torch.float64)
        config = rope_scaling_config(rule, 32, 8)
        theta = posviz.rope_frequencies(8, 10000.0, scaling=config, seq_len=32, dtype=torch.float64)
        torch.testing.assert_close(rotated(rule, q, q)[0], posviz.apply_rope(q, frequencies=theta))


def test_yarn_temperature_multiplies_both_sides_so_scores_grow_by_its_square():
    q, k = torch.randn(1, 2, 32, 8, dtype=torch.float64), torch.randn(1, 2, 32, 8, dtype=torch.float64)
    yq, yk = rotated("yarn", q, k)
    nq, nk = rotated("yarn-no-temp", q, k)
    t = 0.1 * math.log(4.0) + 1  # YaRN's sqrt(1/t) at s = 4 (Peng et al., 2024)
    torch.testing.assert_close(yq, t * nq)
    torch.testing.assert_close(yk, t * nk)
    torch.testing.assert_close(yq @ yk.transpose(-1, -2), t**2 * (nq @ nk.transpose(-1, -2)))
    assert t > 1  # a sharper softmax, not a flatter one


def test_yarn_no_temperature_keeps_the_norms():
    q = torch.randn(1, 2, 32, 8, dtype=torch.float64)
    nq, _ = rotated("yarn-no-temp", q, q)
    torch.testing.assert_close(nq.norm(dim=-1), q.norm(dim=-1))


def test_dynamic_row_is_not_the_ntk_row_it_is_ntk_at_twice_the_factor_minus_one():
    q = torch.randn(1, 2, 16, 8, dtype=torch.float64)  # 2x the training length: s = 2, s_eff = 2 * 2 - 1 = 3
    dq, _ = rotated("dynamic", q, q)
    ntk, _ = rotated("ntk", q, q)
    assert not torch.allclose(dq, ntk)
    torch.testing.assert_close(dq, posviz.apply_rope(q, base=10000.0 * 3.0 ** (8 / 6)))  # b s_eff^(d/(d-2))


def test_llama3_row_keeps_fast_pairs_and_interpolates_slow_ones():
    """Defining property (Llama 3.1's rule): pairs turning more than 4 times over the training
    length keep theta_i, pairs turning less than once get theta_i / s; between, a ramp."""
    dim, train, length = 32, 64, 256
    s = length / train
    config = rope_scaling_config("llama3", length, train)
    plain = posviz.rope_frequencies(dim, 10000.0, dtype=torch.float64)
    theta = posviz.rope_frequencies(dim, 10000.0, scaling=config, seq_len=length, dtype=torch.float64)
    turns = train * plain / (2 * math.pi)
    fast, slow = turns > 4, turns < 1
    assert fast.any() and slow.any() and (~fast & ~slow).any()  # all three bands exist at d = 32, L = 64
    torch.testing.assert_close(theta[fast], plain[fast])
    torch.testing.assert_close(theta[slow], plain[slow] / s)
    middle = ~fast & ~slow
    assert bool(((theta[middle] < plain[middle]) & (theta[middle] > plain[middle] / s)).all())


def test_yarn_row_at_the_labs_size_interpolates_every_pair_but_the_fastest():
    """With L_train = 64 no pair turns 32 times (beta_fast): the ramp starts at pair 0 (truncated
    to the index 0), so YaRN leaves only pair 0 alone, a fact the chapter states; the slowest
    pairs (under one turn) are divided by s exactly."""
    dim, train, length = 32, 64, 1024
    s = length / train
    plain = posviz.rope_frequencies(dim, 10000.0, dtype=torch.float64)
    theta = posviz.rope_frequencies(
        dim, 10000.0, scaling=rope_scaling_config("yarn", length, train), seq_len=length, dtype=torch.float64
    )
    turns = train * plain / (2 * math.pi)
    assert float(turns.max()) < 32
    assert theta[0] == plain[0] and bool((theta[1:] < plain[1:]).all())
    torch.testing.assert_close(theta[turns < 1], plain[turns < 1] / s)


def test_new_rules_agree_with_transformers():
    transformers = pytest.importorskip("transformers", reason="the reference tests need the test extra")
    from transformers import LlamaConfig
    from transformers import modeling_rope_utils as hf_rope

    transformers.logging.set_verbosity_error()
    for rule in ROPE_SCALINGS[1:]:
        for length in (128, 1024):
            rp = rope_scaling_config(rule, length, 64)
            max_pos = rp.get("max_position_embeddings", length)
            config = LlamaConfig(
                hidden_size=128, num_attention_heads=4, head_dim=32, max_position_embeddings=max_pos,
                rope_parameters={**rp, "rope_theta": 10000.0},
            )
            inv_freq, factor = hf_rope.ROPE_INIT_FUNCTIONS[rp["rope_type"]](config, "cpu", seq_len=length)
            ours = posviz.rope_frequencies(32, 10000.0, scaling=rp, seq_len=length, dtype=torch.float64)
            torch.testing.assert_close(inv_freq.double(), ours, rtol=1e-6, atol=0)
            assert factor == pytest.approx(posviz.rope_attention_factor(rp), rel=1e-12)


def test_set_rope_scaling_refuses_an_unknown_rule():
    with pytest.raises(ValueError, match="scaling must be one of"):
        rope_model().set_rope_scaling("longrope")


# --- --merge-into ----------------------------------------------------------------------------------


def tiny_cfg(methods: list[str], **kw) -> LabConfig:
    base = dict(
        methods=methods,
        seeds=[0, 1],
        train_len=8,
        eval_multipliers=[1, 2, 4],
        model=dict(TINY),
        train=TrainConfig(steps=4, warmup_steps=1, batch_size=4, log_every=2),
        eval_tokens_per_batch=64,
        eval_max_tokens=256,
        validation_max_tokens=512,
        position_lr_grid=[10.0],
        mode="test",
    )
    return LabConfig(**{**base, **kw})


@pytest.fixture(scope="module")
def target():
    return run_experiment(tiny_cfg(["none", "rope", "rope-pi"]), progress=False)


@pytest.fixture(scope="module")
def rerun():
    return run_experiment(tiny_cfg(["rope-pi", "rope-yarn", "rope-llama3"]), progress=False)


def test_merge_adds_the_new_rows_with_paired_differences_and_a_record(target, rerun):
    code = {"git_commit": "0" * 40, "dirty_paths": []}
    merged = merge_rerun(target, rerun, code=code)
    validate_results(merged)
    assert merged["method_order"] == ["none", "rope", "rope-pi", "rope-yarn", "rope-llama3"]
    assert merged["config"]["methods"] == merged["method_order"]
    assert merged["methods"]["rope-yarn"] == rerun["methods"]["rope-yarn"]
    for name in ("none", "rope", "rope-pi"):  # the file's rows are kept as they were
        assert merged["methods"][name] == target["methods"][name]
        assert merged["paired"]["methods"][name] == target["paired"]["methods"][name]
    diff = merged["paired"]["methods"]["rope-llama3"]["diff"]
    none = {s["seed"]: s["perplexity"] for s in target["methods"]["none"]["seeds"]}
    mine = {s["seed"]: s["perplexity"] for s in rerun["methods"]["rope-llama3"]["seeds"]}
    assert diff[2] == [mine[seed][2] - none[seed][2] for seed in (0, 1)]
    (record,) = merged["reruns"]
    assert record["rows"] == ["rope-yarn", "rope-llama3"]
    assert record["verified_identical"] == ["rope", "rope-pi"]
    assert record["code"] == code and record["machine"] == rerun["machine"]
    assert target.get("reruns") is None  # not changed in place
    again = merge_rerun(merged, rerun, code=code)  # nothing new: a second record, no new rows
    assert again["reruns"][1]["rows"] == [] and again["method_order"] == merged["method_order"]


def test_merge_refuses_a_rerun_that_does_not_reproduce_the_file(target, rerun):
    tampered = copy.deepcopy(target)
    ppl = tampered["methods"]["rope"]["seeds"][1]["perplexity"]
    ppl[2] = math.nextafter(ppl[2], math.inf)  # one ulp
    with pytest.raises(RerunMismatch, match="rope, seed 1, length 32"):
        merge_rerun(tampered, rerun)
    tampered = copy.deepcopy(target)
    tampered["methods"]["rope-pi"]["seeds"][0]["perplexity"][1] += 1e-9
    with pytest.raises(RerunMismatch, match="rope-pi, seed 0, length 16"):
        merge_rerun(tampered, rerun)


def test_merge_refuses_another_configuration_torch_or_method(target, rerun):
    other = copy.deepcopy(rerun)
    other["config"]["train"]["steps"] = 5
    with pytest.raises(RerunMismatch, match="train"):
        merge_rerun(target, other)
    for key, value in (("torch", "0.0.0"), ("torch_threads", 2), ("cpu", "another CPU")):
        other = copy.deepcopy(rerun)
        other["machine"][key] = value
        with pytest.raises(RerunMismatch, match=f"this machine's {key} is"):
            merge_rerun(target, other)
    with pytest.raises(RerunMismatch, match="rope and its variants only"):
        check_mergeable_config(tiny_cfg(["alibi", "rope"]).to_dict(), target)
    check_mergeable_config(tiny_cfg(["rope-dynamic"], device="cpu").to_dict(), target)  # where it runs: free
    no_rope = copy.deepcopy(target)
    for key in ("methods", "paired"):
        no_rope[key] = None if key == "paired" else {"none": target["methods"]["none"]}
    no_rope["method_order"] = ["none"]
    with pytest.raises(RerunMismatch, match="no rope row"):
        merge_rerun(no_rope, rerun)


def test_code_version_names_the_commit():
    code = code_version()
    assert code["git_commit"] is None or len(code["git_commit"]) == 40
    assert isinstance(code["dirty_paths"], list)
    assert code_version("/") == {"git_commit": None, "dirty_paths": []}


TINY_FLAGS = (
    "--threads 1 --seeds 0 --train-len 8 --d-model 16 --layers 1 --heads 2 --steps 3 --eval-multipliers 1 2 "
    "--eval-max-tokens 64 --no-progress"
).split()


def test_cli_merge_into_a_file_and_its_errors(tmp_path, capsys):
    out = tmp_path / "first"
    assert main([*TINY_FLAGS, "--methods", "none", "rope", "--out", str(out), "--plotlyjs", "cdn"]) == 0
    target = tmp_path / "target.json"
    target.write_text((out / "results.json").read_text())
    before = json.loads(target.read_text())
    assert main([*TINY_FLAGS, "--methods", "rope", "rope-dynamic", "--merge-into", str(target)]) == 0
    merged = json.loads(target.read_text())
    assert merged["method_order"] == ["none", "rope", "rope-dynamic"]
    assert merged["reruns"][0]["rows"] == ["rope-dynamic"]
    assert isinstance(merged["reruns"][0]["command"], list)  # sys.argv of the process (pytest's here)
    assert merged["methods"]["rope"] == before["methods"]["rope"]
    capsys.readouterr()
    # refused before anything trains: another configuration, a method outside rope, a missing file, --publish
    assert main([*TINY_FLAGS, "--steps", "4", "--methods", "rope", "--merge-into", str(target)]) == 2
    assert "this run differs in train" in capsys.readouterr().err
    assert main([*TINY_FLAGS, "--methods", "rope", "alibi", "--merge-into", str(target)]) == 2
    assert "rope and its variants only" in capsys.readouterr().err
    assert main([*TINY_FLAGS, "--methods", "rope", "--merge-into", str(tmp_path / "nope.json")]) == 2
    assert "nope.json" in capsys.readouterr().err
    assert main(["--methods", "rope", "--publish", "--merge-into", str(target)]) == 2
    assert "cannot be combined" in capsys.readouterr().err
    elsewhere = json.loads(target.read_text())
    elsewhere["machine"]["cpu"] = "a CPU this is not"
    other = tmp_path / "elsewhere.json"
    save_results(elsewhere, other)
    assert main([*TINY_FLAGS, "--methods", "rope", "--merge-into", str(other)]) == 2
    assert "this machine's cpu is" in capsys.readouterr().err
    # a file the rerun does not reproduce: nothing merged, the file unchanged
    tampered = json.loads(target.read_text())
    tampered["methods"]["rope"]["seeds"][0]["perplexity"][1] *= 1.001
    save_results(tampered, target)
    text = target.read_text()
    assert main([*TINY_FLAGS, "--methods", "rope", "rope-llama3", "--merge-into", str(target)]) == 2
    assert "does not reproduce the file" in capsys.readouterr().err
    assert target.read_text() == text


# --- posviz.lab.rules: the table the chapter shows ---------------------------------------------------


def test_rule_frequencies_and_table_read_the_results_model(target):
    from posviz.lab.rules import RULE_ROWS, rule_frequencies, rules_table, turns_over_training

    turns = turns_over_training(target)  # d = 8, L_train = 8
    theta = posviz.rope_frequencies(8, 10000.0, dtype=torch.float64)
    torch.testing.assert_close(turns, 8 * theta / (2 * math.pi))
    ratio, factor = rule_frequencies(target, "rope-pi", 32)
    torch.testing.assert_close(ratio, torch.full((4,), 0.25, dtype=torch.float64))
    assert factor == 1.0
    ratio, factor = rule_frequencies(target, "rope-yarn", 32)
    assert factor == pytest.approx(0.1 * math.log(4.0) + 1)
    ratio_nt, factor_nt = rule_frequencies(target, "rope-yarn-no-temp", 32)
    assert torch.equal(ratio, ratio_nt) and factor_nt == 1.0
    assert torch.equal(rule_frequencies(target, "rope-llama3", 8)[0], torch.ones(4, dtype=torch.float64))  # 1x
    with pytest.raises(ValueError, match="name must be one of"):
        rule_frequencies(target, "rope", 32)
    lines = rules_table(target, length=32).splitlines()
    assert lines[0] == "θ′ᵢ/θᵢ at L = 32"
    assert lines[2].split(" | ")[2:] == [*RULE_ROWS[:-1], RULE_ROWS[-1] + " |"]
    assert len(lines) == 4 + 4 + 1  # title, blank, head, rule, 4 pairs, the attention-factor row
    assert lines[-1].startswith("| cos, sin × |") and f"{0.1 * math.log(4.0) + 1:.3f}" in lines[-1]


def test_perplexity_table_rows_can_be_chosen(target):
    from posviz.lab import perplexity_table

    lines = perplexity_table(target, methods=["rope-pi", "rope"]).splitlines()
    assert [line.split(" | ")[0] for line in lines[2:]] == ["| rope", "| rope-pi"]  # the results' order
    with pytest.raises(ValueError, match="not in these results"):
        perplexity_table(target, methods=["rope-yarn"])
