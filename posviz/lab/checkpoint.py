"""Save and load a trained lab model (``state_dict`` plus its :class:`GPTConfig`)."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from .model import GPT, GPTConfig

__all__ = ["load_checkpoint", "save_checkpoint"]


def save_checkpoint(model: GPT, path: str | os.PathLike) -> Path:
    """Write ``{"config": dict, "state_dict": ...}`` with ``torch.save`` (tensors and plain types only)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"config": model.config.to_dict(), "state_dict": model.state_dict()}, path)
    return path


def load_checkpoint(path: str | os.PathLike, device: torch.device | str = "cpu") -> GPT:
    """Rebuild the model from a checkpoint; ``torch.load(..., weights_only=True)``, so no pickled code runs."""
    blob = torch.load(path, map_location=device, weights_only=True)
    model = GPT(GPTConfig(**blob["config"])).to(device)
    model.load_state_dict(blob["state_dict"])
    model.eval()
    return model
