"""posviz.lab past one CPU (issue #14): torchrun / DDP equivalence, the CUDA paths as far as a CPU can
check them (SDPA with the bias as mask, bf16 autocast), checkpoints and --resume, presets, --corpus,
and the command-line checks that name the offending flag."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from posviz.lab import GPT, METHODS, GPTConfig, LabConfig, run_experiment
from posviz.lab.cli import main
from posviz.lab.data import load_file_corpus
from posviz.lab.distributed import Runtime
from posviz.lab.evaluate import evaluate
from posviz.lab.experiment import PRESETS, gpu_config, quick_config
from posviz.lab.results import load_results
from posviz.lab.train import TrainConfig, train

TINY = {"n_layer": 1, "n_head": 2, "n_embd": 16}
ROOT = Path(__file__).resolve().parents[1]
CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine (CUDA-only path)")


pytestmark = pytest.mark.usefixtures("one_torch_thread", "restore_determinism")


# --- torchrun: 2 processes = 1 process ---------------------------------------------------------------


def _torchrun() -> list[str]:
    exe = Path(sys.executable).parent / "torchrun"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "torch.distributed.run"]


def test_torchrun_two_processes_match_one_process(tmp_path, capsys):
    """The issue's exact command on a CPU-only machine (gloo), against the same flags in one process:
    same global batches and schedule, so the numbers agree to floating-point tolerance."""
    flags = ["--quick", "--methods", "alibi", "--seeds", "0", "--steps", "3"]
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR")}
    env["CUDA_VISIBLE_DEVICES"] = ""  # CPU only, as in CI
    two = tmp_path / "two"
    cmd = [*_torchrun(), "--standalone", "--nproc_per_node=2", "-m", "posviz.lab", *flags]
    done = subprocess.run(
        [*cmd, "--out", str(two), "--no-progress"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("| alibi |") >= 1  # only rank 0 prints the tables: once per table
    assert done.stdout.count("Held-out perplexity") == 1
    one = tmp_path / "one"
    assert main([*flags, "--out", str(one), "--no-progress", "--device", "cpu"]) == 0
    capsys.readouterr()
    r1, r2 = load_results(one / "results.json"), load_results(two / "results.json")
    assert (r1["config"]["world_size"], r2["config"]["world_size"]) == (1, 2)
    assert r2["machine"]["world_size"] == 2 and r2["machine"]["distributed_backend"] == "gloo"
    assert r2["config"]["device"] == r2["machine"]["device"] == "cpu"
    s1, s2 = r1["methods"]["alibi"]["seeds"][0], r2["methods"]["alibi"]["seeds"][0]
    for key in ("perplexity", "loss"):
        torch.testing.assert_close(torch.tensor(s2[key]), torch.tensor(s1[key]), rtol=1e-5, atol=0)
    for key in ("final_train_loss", "validation_loss"):
        assert s2[key] == pytest.approx(s1[key], rel=1e-5)
    assert s2["loss_curve"]["step"] == s1["loss_curve"]["step"] and s2["loss_curve"]["lr"] == s1["loss_curve"]["lr"]
    torch.testing.assert_close(torch.tensor(s2["loss_curve"]["loss"]), torch.tensor(s1["loss_curve"]["loss"]))
    assert r2["data"]["eval_scored_tokens"] == r1["data"]["eval_scored_tokens"]  # the shards add up to all


def test_runtime_shards_every_batch_and_every_evaluation_batch():
    ranks = [Runtime(world_size=3, rank=r) for r in range(3)]
    assert [list(range(12))[rt.shard(12)] for rt in ranks] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    mine = [list(rt.mine(7)) for rt in ranks]
    assert sorted(i for m in mine for i in m) == list(range(7)) and mine[0] == [0, 3, 6]
    assert ranks[0].backend == "gloo" and Runtime().backend is None and list(Runtime().mine(3)) == [0, 1, 2]
    with pytest.raises(ValueError, match="--batch-size 10 must be divisible by the number of processes"):
        ranks[0].shard(10)


# --- the CUDA paths, checked on the CPU ----------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_sdpa_with_the_bias_as_mask_equals_posviz_attention_in_float64(method):
    model = GPT(GPTConfig(method=method, block_size=8, **{**TINY, "n_layer": 2}), seed=0).double()
    with torch.no_grad():
        for p in model.position.parameters():
            p.normal_(0, 0.5)  # position parameters large enough to matter
    idx = torch.randint(0, 256, (2, 8), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        reference = model(idx)
        used = model.set_attention("sdpa")
        fused = model(idx)
    assert used == ("posviz" if method in ("shaw", "cope") else "sdpa")  # Shaw's, CoPE's biases use q: never SDPA
    torch.testing.assert_close(fused, reference, rtol=1e-12, atol=1e-12)


def test_sdpa_is_called_with_the_mask_or_the_fused_causal_path(monkeypatch):
    calls = []
    real = torch.nn.functional.scaled_dot_product_attention

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", spy)
    idx = torch.randint(0, 256, (1, 8))
    for method in ("alibi", "rope"):
        model = GPT(GPTConfig(method=method, block_size=8, **TINY), seed=0)
        model.set_attention("sdpa")
        model(idx)
    alibi, rope = calls
    assert alibi["attn_mask"].shape == (2, 8, 8) and torch.isinf(alibi["attn_mask"][:, 0, 1]).all()
    assert "attn_mask" not in rope and rope["is_causal"] is True


def test_bf16_autocast_trains_and_evaluates_close_to_float32(corpus):
    cfg = TrainConfig(steps=4, warmup_steps=1, batch_size=4, log_every=2)
    results = {}
    for precision in ("fp32", "bf16"):
        model = GPT(GPTConfig(method="alibi", block_size=16, **TINY), seed=0)
        rt = Runtime(precision=precision)
        tr = train(model, corpus.train, cfg, 0, runtime=rt)
        ev = evaluate(model, corpus.heldout, [16, 32], max_tokens=256, runtime=rt)
        results[precision] = (tr, ev, model)
    (t32, e32, _), (t16, e16, m16) = results["fp32"], results["bf16"]
    assert all(p.dtype == torch.float32 for p in m16.parameters())  # autocast: weights stay float32
    assert t16.step_loss != t32.step_loss  # bf16 really ran
    torch.testing.assert_close(torch.tensor(t16.step_loss), torch.tensor(t32.step_loss), rtol=0.02, atol=0)
    for a, b in zip(e16, e32):
        assert a.perplexity == pytest.approx(b.perplexity, rel=0.03)


def test_compile_wraps_the_training_forward(corpus, monkeypatch):
    wrapped = []
    monkeypatch.setattr(torch, "compile", lambda module, **kw: wrapped.append(module) or module)
    model = GPT(GPTConfig(method="rope", block_size=16, **TINY), seed=0)
    train(model, corpus.train, TrainConfig(steps=1, warmup_steps=1, batch_size=2), 0, runtime=Runtime(compile=True))
    assert wrapped == [model]


@CUDA
def test_cuda_bf16_sdpa_run_records_gpu_memory_and_precision():
    cfg = LabConfig(
        methods=["none", "alibi", "shaw"],
        seeds=[0],
        train_len=16,
        eval_multipliers=[1, 2],
        model=dict(TINY),
        train=TrainConfig(steps=3, warmup_steps=1, batch_size=4),
        eval_max_tokens=256,
        validation_max_tokens=256,
        position_lr_grid=[10.0],
        device="cuda",
        precision="bf16",
        attention="sdpa",
        mode="test",
    )
    r = run_experiment(cfg, progress=False)
    assert r["machine"]["gpu"] and r["config"]["precision"] == "bf16"
    assert [r["methods"][m]["attention"] for m in ("none", "alibi", "shaw")] == ["sdpa", "sdpa", "posviz"]
    assert all(r["methods"][m]["memory"]["train"]["step_peak_bytes"] > 0 for m in ("none", "alibi"))


@CUDA
def test_cuda_sdpa_matches_posviz_attention_in_float32():
    for method in ("alibi", "t5", "rope"):
        model = GPT(GPTConfig(method=method, block_size=8, **TINY), seed=0).cuda()
        idx = torch.randint(0, 256, (2, 32), device="cuda")
        with torch.no_grad():
            reference = model(idx)
            model.set_attention("sdpa")
            torch.testing.assert_close(model(idx), reference, rtol=1e-4, atol=1e-4)


# --- checkpoints and --resume -------------------------------------------------------------------------


def test_resume_after_an_interruption_gives_the_weights_of_an_uninterrupted_run(corpus, tmp_path, monkeypatch):
    cfg = TrainConfig(steps=7, warmup_steps=2, batch_size=4, log_every=2)

    def run(state, *, resume=False, stop_after=None):
        model = GPT(GPTConfig(method="t5", block_size=16, **TINY), seed=0)

        def on_step(step, loss):
            if stop_after is not None and step + 1 == stop_after:
                raise KeyboardInterrupt

        tr = train(model, corpus.train, cfg, 0, on_step=on_step, state_path=state, checkpoint_every=2, resume=resume)
        return model, tr

    whole, whole_tr = run(tmp_path / "a.pt")
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "b.pt", stop_after=5)  # interrupted after 5 steps; last state: after 4
    assert torch.load(tmp_path / "b.pt", weights_only=True)["step"] == 4
    loads = []
    real_load = torch.load
    monkeypatch.setattr(torch, "load", lambda *a, **kw: loads.append(kw) or real_load(*a, **kw))
    resumed, resumed_tr = run(tmp_path / "b.pt", resume=True)
    assert loads and all(kw.get("weights_only") is True for kw in loads)
    for (name, a), (_, b) in zip(whole.state_dict().items(), resumed.state_dict().items()):
        assert torch.equal(a, b), name
    assert resumed_tr.step_loss == whole_tr.step_loss and resumed_tr.curve_loss == whole_tr.curve_loss
    assert resumed_tr.step_lr == whole_tr.step_lr and resumed_tr.final_loss == whole_tr.final_loss
    other = TrainConfig(steps=7, warmup_steps=3, batch_size=4, log_every=2)
    with pytest.raises(ValueError, match="another configuration"):
        model = GPT(GPTConfig(method="t5", block_size=16, **TINY), seed=0)
        train(model, corpus.train, other, 0, state_path=tmp_path / "b.pt", checkpoint_every=2, resume=True)


# --- presets, corpus, command-line checks -------------------------------------------------------------


def test_presets_quick_and_gpu():
    assert set(PRESETS) == {"full", "quick", "gpu"}
    gpu = gpu_config()
    assert 256 <= gpu.train_len <= 512 and max(gpu.eval_multipliers) == 16
    params = GPT(gpu.gpt_config("alibi"), seed=0).num_params()
    assert 1_000_000 <= params and gpu.train.batch_size % 8 == 0  # millions; 8 GPUs divide the batch
    quick = quick_config()
    assert quick.mode == "quick" and len(quick.seeds) == 2 and max(quick.eval_multipliers) == 16


def test_file_corpus_is_split_into_contiguous_blocks_with_its_sha256(tmp_path):
    text = "".join(f"Line {i}: the quick brown fox — jumps over {i * 7 % 13} lazy dogs.\n" for i in range(600))
    path = tmp_path / "book.txt"
    path.write_text(text, encoding="utf-8")
    c = load_file_corpus(path)
    raw = text.encode("utf-8")
    assert bytes(torch.cat([c.train, c.validation, c.heldout]).tolist()) == raw
    assert c.info["sha256"]["text"] == hashlib.sha256(raw).hexdigest()
    a, b = c.info["blocks"]["validation"]
    assert c.info["blocks"]["train"] == [0, a] and c.info["blocks"]["heldout"] == [b, len(raw)]
    assert len(c.heldout) == len(raw) - b and abs(len(c.heldout) / len(raw) - 0.1) < 0.01
    assert "contiguous blocks" in c.info["source"]
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe" * 1000)
    with pytest.raises(ValueError, match="--corpus .* is not UTF-8"):
        load_file_corpus(tmp_path / "bin.txt")
    with pytest.raises(ValueError, match="--corpus"):
        load_file_corpus(tmp_path / "missing.txt")


@pytest.mark.parametrize(
    ("flags", "env", "message"),
    [
        (["--heads", "3", "--d-model", "64"], {}, r"--heads 3\) must divide n_embd=64 \(--d-model 64"),
        (["--heads", "4", "--d-model", "36"], {}, r"head size .*\(--d-model/--heads\) = 36/4 = 9 must be even"),
        (["--batch-size", "30"], {"WORLD_SIZE": "4"}, "--batch-size 30 must be divisible by the number of processes"),
        (["--resume"], {}, "--resume needs --checkpoint-every"),
        (["--warmup", "5", "--steps", "5"], {}, "--warmup 5 must be smaller than --steps 5"),
        (["--train-len", "64", "--corpus", "SMALL"], {}, "shorter than the longest evaluation length 1024"),
        (["--corpus", "BINARY"], {}, "--corpus .*bin.txt is not UTF-8"),
        (["--quick", "--preset", "gpu"], {}, "--quick is --preset quick"),
        # 1000 bytes: 100 held out (enough for L = 64), 50 of validation (no window of 65 bytes)
        (["--train-len", "64", "--eval-multipliers", "1", "--corpus", "TINY"], {}, "validation split .* no window"),
        (["--train-len", "64", "--eval-multipliers", "1", "--corpus", "TINY"], {}, "--corpus .* at least 1321 bytes"),
        (["--replot"], {}, "--replot: there is no .*results.json"),
        (["--publish", "--precision", "bf16"], {}, "--publish takes the float32 posviz.attention path"),
    ],
)
def test_cli_names_the_flag_of_bad_input(flags, env, message, tmp_path, monkeypatch, capsys):
    small, binary, tiny = tmp_path / "small.txt", tmp_path / "bin.txt", tmp_path / "tiny.txt"
    small.write_text("posviz " * 1100, encoding="utf-8")  # 770 held-out bytes
    binary.write_bytes(b"\xff" * 5000)
    import random

    tiny.write_text("".join(random.Random(0).choices("abcdefghijklmnopqrstuvwxyz .", k=1000)), encoding="utf-8")
    flags = [{"SMALL": str(small), "BINARY": str(binary), "TINY": str(tiny)}.get(f, f) for f in flags]
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    ran = []
    import posviz.lab.experiment as lab_experiment

    monkeypatch.setattr(lab_experiment, "run_experiment", lambda *a, **kw: ran.append(a))
    assert main([*flags, "--no-progress", "--device", "cpu", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err), err
    assert not ran
    with pytest.raises(SystemExit):
        main(["--d-model", "0"])  # argparse: "must be > 0"
    assert "--d-model: must be > 0" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "flag"),
    [(["--threads", "0"], "--threads"), (["--device", "foo"], "--device"), (["--device", "cpu:abc"], "--device")],
)
def test_cli_rejects_bad_flag_values_as_argparse_does(flags, flag, capsys):
    """Bugs: --threads 0, --device foo and --device cpu:abc ending in a torch traceback."""
    with pytest.raises(SystemExit) as stop:
        main([*flags, "--no-progress"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}" in err and "Traceback" not in err


def test_small_corpus_is_refused_before_training_not_in_mean_loss(tmp_path):
    """Bug: a corpus whose validation block holds no window trained, then divided by zero."""
    import random

    from posviz.lab.config import check_corpus

    path = tmp_path / "tiny.txt"
    path.write_text("".join(random.Random(0).choices("abcdefghijklmnopqrstuvwxyz .", k=1000)), encoding="utf-8")
    cfg = LabConfig(methods=["alibi"], seeds=[0], train_len=64, eval_multipliers=[1], model=dict(TINY),
                    train=TrainConfig(steps=2, warmup_steps=1, batch_size=2), corpus=str(path), mode="test")
    with pytest.raises(ValueError, match="--corpus .* needs at least 1321 bytes"):
        check_corpus(load_file_corpus(path), cfg)
    with pytest.raises(ValueError, match="validation split"):
        run_experiment(cfg, progress=False)


def test_cli_corpus_and_model_flags_reach_the_results(tmp_path, capsys):
    text = "".join(f"{i} squared is {i * i}; {i} cubed is {i**3}.\n" for i in range(2000))
    path = tmp_path / "numbers.txt"
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    flags = ["--methods", "rope", "--seeds", "0", "--steps", "2", "--train-len", "16", "--eval-multipliers", "1", "2"]
    flags += ["--d-model", "16", "--layers", "1", "--heads", "2", "--batch-size", "4", "--lr", "1e-3", "--warmup", "1"]
    flags += ["--corpus", str(path), "--eval-max-tokens", "256", "--checkpoint-every", "1"]
    assert main([*flags, "--no-progress", "--device", "cpu", "--out", str(out), "--plotlyjs", "cdn"]) == 0
    r = load_results(out / "results.json")
    assert r["data"]["sha256"]["text"] == hashlib.sha256(text.encode()).hexdigest()
    assert r["config"]["model"]["n_embd"] == 16 and r["config"]["train"]["lr"] == 1e-3
    assert r["config"]["train"]["warmup_steps"] == 1 and r["config"]["corpus"] == str(path)
    assert (out / "checkpoints" / "state" / "rope-seed0-lr1.pt").exists()
    # --resume: the finished run is loaded, not retrained, and gives the same numbers
    assert main([*flags, "--resume", "--no-progress", "--device", "cpu", "--out", str(out), "--plotlyjs", "cdn"]) == 0
    again = load_results(out / "results.json")
    assert again["methods"]["rope"]["seeds"][0]["perplexity"] == r["methods"]["rope"]["seeds"][0]["perplexity"]
    capsys.readouterr()


def test_results_json_round_trips_the_new_config_fields(tmp_path):
    cfg = LabConfig(world_size=2, precision="bf16", attention="sdpa", corpus="x.txt", train=TrainConfig(batch_size=8))
    d = json.loads(json.dumps(cfg.to_dict()))
    assert (d["world_size"], d["precision"], d["attention"], d["corpus"]) == (2, "bf16", "sdpa", "x.txt")
    with pytest.raises(ValueError, match="--precision"):
        LabConfig(precision="fp16")

