"""Verbatim overlap between the splits: the 64-byte strings they share, the bytes and windows that
hold one, and the counts a run records to show that none reaches training or validation
(:mod:`posviz.lab.data` explains the rule)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from .data import Corpus

__all__ = [
    "OVERLAP_N",
    "allowed_starts",
    "fraction",
    "ngram_hits",
    "ngram_set",
    "tainted_bytes",
    "training_overlap",
    "validation_overlap",
    "windows_with_ngram",
]

OVERLAP_N = 64
"""Length of the verbatim strings checked between splits (bytes)."""


def ngram_set(tokens: torch.Tensor, n: int = OVERLAP_N) -> set[bytes]:
    """Every ``n``-byte string of ``tokens`` (values 0..255), as ``bytes``."""
    raw = bytes(tokens.to(torch.uint8).tolist())
    return {raw[i : i + n] for i in range(len(raw) - n + 1)}


def ngram_hits(tokens: torch.Tensor, reference: set[bytes], n: int = OVERLAP_N) -> torch.Tensor:
    """Int32 ``(max(0, N - n + 1),)``: 1 where the ``n``-byte string of ``tokens`` starting there is
    in ``reference``."""
    raw = bytes(tokens.to(torch.uint8).tolist())
    return torch.tensor([raw[i : i + n] in reference for i in range(max(0, len(raw) - n + 1))], dtype=torch.int32)


def tainted_bytes(tokens: torch.Tensor, reference: set[bytes], n: int = OVERLAP_N) -> torch.Tensor:
    """Bool ``(N,)``: byte ``i`` lies inside an ``n``-byte string of ``tokens`` that is in ``reference``."""
    raw_len = len(tokens)
    hit = ngram_hits(tokens, reference, n)
    # byte i is covered by the n-grams starting at i-n+1 .. i
    covered = torch.zeros(raw_len + 1, dtype=torch.int32)
    if len(hit):
        covered[: len(hit)] += hit
        covered[n : n + len(hit)] -= hit
    return covered.cumsum(0)[:raw_len] > 0


def windows_with_ngram(hits: torch.Tensor, starts: torch.Tensor, length: int, n: int = OVERLAP_N) -> int:
    """How many windows ``s .. s + length`` (``length + 1`` bytes, ``s`` in ``starts``) hold a whole
    ``n``-byte string marked in ``hits`` (:func:`ngram_hits`); 0 when a window is shorter than ``n``."""
    span = length + 2 - n  # the n-byte strings inside window s start at s .. s + length + 1 - n
    if span <= 0 or len(starts) == 0:
        return 0
    before = torch.cat([torch.zeros(1, dtype=torch.long), hits.long().cumsum(0)])  # hits starting before i
    return int(((before[starts + span] - before[starts]) > 0).sum())


def allowed_starts(tainted: torch.Tensor, length: int) -> torch.Tensor:
    """Starts ``s`` of every window ``s .. s+length`` (``length + 1`` bytes) that holds no tainted byte."""
    n = len(tainted)
    if n <= length:
        return torch.zeros(0, dtype=torch.long)
    bad = torch.cat([torch.zeros(1, dtype=torch.long), tainted.long().cumsum(0)])  # bad[i] = tainted bytes before i
    starts = torch.arange(n - length)
    inside = bad[starts + length + 1] - bad[starts]
    return starts[inside == 0]


def fraction(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def training_overlap(corpus: Corpus, length: int) -> dict:
    """Measured on the training windows the sampler can draw (:meth:`Corpus.train_starts`): the
    fraction of them that hold a whole ``OVERLAP_N``-byte string of the held-out text (0 when the
    taint rule works; windows shorter than ``OVERLAP_N`` bytes hold none by their length)."""
    starts = corpus.train_starts(length)
    hits = ngram_hits(corpus.train, ngram_set(corpus.heldout))
    return {"training_windows_with_heldout_ngram": fraction(windows_with_ngram(hits, starts, length), len(starts))}


def validation_overlap(corpus: Corpus, length: int, max_tokens: int | None = None) -> dict:
    """Measured on the validation windows actually scored: how many there are, how many were dropped
    for a tainted byte, and the fraction of their ``OVERLAP_N``-byte strings found in the held-out text
    (0 by construction; this counts them again)."""
    x, y = corpus.validation_windows(length, max_tokens)
    n_all = (len(corpus.validation) - 1) // length
    if max_tokens is not None:
        n_all = min(n_all, max(1, max_tokens // length))
    held = ngram_set(corpus.heldout)
    windows = torch.cat([x, y[:, -1:]], dim=1)  # (W, L+1): the bytes each window reads
    grams = found = 0
    for row in windows.tolist():
        raw = bytes(row)
        for i in range(len(raw) - OVERLAP_N + 1):
            grams += 1
            found += raw[i : i + OVERLAP_N] in held
    return {
        "validation_windows": int(x.shape[0]),
        "validation_windows_dropped": int(n_all - x.shape[0]),
        "validation_ngrams_in_heldout": fraction(found, grams),
    }
