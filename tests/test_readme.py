"""The README's library example runs as written, also on a machine where CUDA is available."""

import re
from pathlib import Path

import torch

README = Path(__file__).resolve().parents[1] / "README.md"


def _example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    (block,) = [b for b in blocks if "import torch, posviz" in b]
    return block


def test_readme_example_runs(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # as on a GPU machine: nothing may move there
    scope: dict = {}
    exec(compile(_example(), str(README), "exec"), scope)
    out, weights = scope["out"], scope["weights"]
    assert out.shape == (1, 8, 128, 64) and weights.shape == (1, 8, 128, 128)
    assert out.device == scope["q"].device == scope["bias"].device
    torch.testing.assert_close(weights.sum(-1), torch.ones(1, 8, 128))
