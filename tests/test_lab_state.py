"""posviz.lab leaves the process as it found it: determinism switch and global random state."""

import torch

import posviz.lab.experiment as experiment
from posviz.lab.train import deterministic, seed_everything


def test_seed_everything_only_seeds():
    before = torch.are_deterministic_algorithms_enabled()
    seed_everything(3)
    assert torch.are_deterministic_algorithms_enabled() == before
    a = torch.rand(2)
    seed_everything(3)
    torch.testing.assert_close(torch.rand(2), a)


def test_deterministic_restores_the_callers_setting():
    torch.use_deterministic_algorithms(False)
    with deterministic():
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.is_deterministic_algorithms_warn_only_enabled()
    assert not torch.are_deterministic_algorithms_enabled()
    try:
        torch.use_deterministic_algorithms(True)  # a caller who wants errors, not warnings
        with deterministic():
            pass
        assert torch.are_deterministic_algorithms_enabled()
        assert not torch.is_deterministic_algorithms_warn_only_enabled()
    finally:
        torch.use_deterministic_algorithms(False)


def test_run_experiment_restores_determinism_and_the_global_generator(monkeypatch):
    seen = {}

    class FakeRun:
        def __init__(self, cfg, rt, *, progress, resume):
            seen["deterministic"] = torch.are_deterministic_algorithms_enabled()
            seed_everything(123)  # what a run does

        def results(self):
            return {"ok": True}

    monkeypatch.setattr(experiment, "_Run", FakeRun)
    torch.use_deterministic_algorithms(False)
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    assert experiment.run_experiment(experiment.quick_config(), progress=False) == {"ok": True}
    assert seen["deterministic"] and not torch.are_deterministic_algorithms_enabled()
    torch.testing.assert_close(torch.rand(3), expected)  # the caller's random stream goes on untouched
