r"""The corpus: the Python documentation text shipped inside CPython, byte-level.

``pydoc_data.topics.topics`` is a dict of ``help()`` topics (about 465k characters for Python
3.11); we join its values in sorted-key order, encode as UTF-8 and use the bytes as tokens
(vocabulary 256), so no tokenizer and no download are needed. The first 90% of the bytes train,
the last 10% are held out. The text differs between Python versions, so :func:`load_corpus`
records the SHA-256 of the text and of each split together with ``sys.version``.

Evaluation windows (:func:`eval_windows`) are **non-overlapping**: window :math:`w` of length
:math:`L` predicts tokens :math:`x_{wL+1} \dots x_{wL+L}` from :math:`x_{wL} \dots x_{wL+L-1}`,
and the loss is averaged over every token of every window (the ALiBi paper's "nonoverlapping"
evaluation). Every length scores the *same* held-out tokens: the first
:math:`\lfloor (N-1)/L_{\max}\rfloor L_{\max}` targets (optionally capped), so the lengths differ only in how much
context each token sees.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass

import torch

__all__ = ["Corpus", "eval_windows", "load_corpus", "load_text", "sample_batch", "scored_tokens"]


def load_text() -> str:
    """The joined ``pydoc_data.topics.topics`` values, in sorted-key order."""
    from pydoc_data.topics import topics

    return "".join(topics[key] for key in sorted(topics))


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Corpus:
    """Byte tokens of the train and held-out splits, plus what identifies them."""

    train: torch.Tensor  # (N_train,) long, values 0..255
    heldout: torch.Tensor  # (N_heldout,) long
    info: dict

    @property
    def vocab_size(self) -> int:
        return 256


def load_corpus(train_fraction: float = 0.9) -> Corpus:
    """Encode the text as UTF-8 bytes and split it: first ``train_fraction`` trains, the rest is held out."""
    if not 0.0 < train_fraction < 1.0:
        raise ValueError(f"train_fraction must be in (0, 1), got {train_fraction}")
    text = load_text()
    raw = text.encode("utf-8")
    cut = int(len(raw) * train_fraction)
    train_bytes, heldout_bytes = raw[:cut], raw[cut:]
    tokens = torch.frombuffer(bytearray(raw), dtype=torch.uint8).long()
    info = {
        "source": "pydoc_data.topics.topics (values joined in sorted-key order), UTF-8 bytes",
        "python": sys.version,
        "tokenization": "bytes (vocab 256)",
        "n_chars": len(text),
        "n_tokens": len(raw),
        "train_fraction": train_fraction,
        "n_train_tokens": len(train_bytes),
        "n_heldout_tokens": len(heldout_bytes),
        "sha256": {"text": _sha256(raw), "train": _sha256(train_bytes), "heldout": _sha256(heldout_bytes)},
    }
    return Corpus(train=tokens[:cut].clone(), heldout=tokens[cut:].clone(), info=info)


def sample_batch(
    tokens: torch.Tensor, batch_size: int, length: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch_size`` random windows of ``length`` tokens and their next-token targets.

    Returns ``(x, y)``, both ``(B, T)`` long, with ``y[b, t] = x[b, t + 1]`` in the text.
    Offsets are drawn from ``generator`` (on the CPU), so a seed fixes the batch order.
    """
    if len(tokens) <= length:
        raise ValueError(f"need more than length={length} tokens to sample a window, got {len(tokens)}")
    starts = torch.randint(0, len(tokens) - length, (batch_size,), generator=generator)  # (B,)
    idx = starts[:, None] + torch.arange(length + 1)  # (B, T+1)
    window = tokens[idx]
    return window[:, :-1], window[:, 1:]


def scored_tokens(n_tokens: int, max_length: int, max_tokens: int | None = None) -> int:
    """How many targets are scored: ``floor((min(N - 1, max_tokens)) / max_length) * max_length``."""
    usable = n_tokens - 1 if max_tokens is None else min(n_tokens - 1, max_tokens)
    return max(0, usable) // max_length * max_length


def eval_windows(
    tokens: torch.Tensor, length: int, max_length: int, max_tokens: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Non-overlapping windows of ``length`` over the first :func:`scored_tokens` targets.

    Returns ``(x, y)``, both ``(W, length)``: the same scored tokens for every ``length`` that
    divides ``max_length``. ``max_tokens`` caps the scored tokens (the quick preset uses it).
    """
    if max_length % length:
        raise ValueError(f"length={length} must divide max_length={max_length}")
    scored = scored_tokens(len(tokens), max_length, max_tokens)
    if scored == 0:
        raise ValueError(f"the held-out split ({len(tokens)} tokens) is shorter than max_length+1={max_length + 1}")
    x = tokens[:scored].view(-1, length)  # (W, L)
    y = tokens[1 : scored + 1].view(-1, length)  # (W, L)
    return x, y
