r"""The corpus: the Python documentation text shipped inside CPython, byte-level, split by topic.

``pydoc_data.topics.topics`` is a dict of ``help()`` topics (79 topics, about 466k bytes for
Python 3.11), used as UTF-8 bytes (vocabulary 256), so no tokenizer and no download are needed.

**Splits, by topic.** A topic goes whole into one split, so the held-out text is never the second
half of a topic whose first half trained. Several topics are verbatim copies of parts of others,
so topics that share a 64-byte string are first grouped (:func:`topic_clusters`, transitively) and
a group goes whole into one split. Groups are taken in the order of the SHA-256 of their first key
(a fixed, content-free shuffle); going down that list, a group joins *held-out* while the held-out
split stays within ``heldout_fraction`` of all bytes, else *validation* while that stays within
``validation_fraction``, else *train*. Inside a split the topics are joined in sorted-key
order. Validation is carved from what would otherwise be training text; it is used only to choose
learning rates (:mod:`posviz.lab.experiment`), never for the reported numbers.

**Verbatim overlap.** With the grouping no 64-byte string of the held-out text occurs in the
other splits; as a safeguard (for other Python versions' text, or other fractions), with
:math:`n` = ``OVERLAP_N`` = 64 bytes, a byte of the training or validation text is *tainted* when
it lies inside an :math:`n`-byte string that also occurs anywhere in the held-out text. Training
windows are drawn only where they hold no tainted byte (:meth:`Corpus.train_starts`) and
validation windows with a tainted byte are dropped, so neither the model nor the learning-rate
choice ever sees a 64-byte string of the held-out text. :func:`load_corpus` records, in
``info["overlap"]``, how much overlap there was before this; :func:`training_overlap` and
:func:`validation_overlap` count, on the windows a run actually draws and scores, that none is
left after it (the results check that both counts are 0).

**Your own text** (:func:`load_file_corpus`, ``python -m posviz.lab --corpus FILE``): any UTF-8
file, as bytes, split into **contiguous blocks**: the first 85% of the bytes train, the next 5%
validate, the last 10% are held out (the same fractions). Contiguous blocks keep held-out text
away from the text it continues; the same 64-byte overlap check then removes any repeated string
(licence headers, boilerplate) from training and validation. The file's SHA-256 is recorded.

Evaluation windows (:func:`eval_windows`) are **non-overlapping**: window :math:`w` of length
:math:`L` predicts tokens :math:`x_{wL+1} \dots x_{wL+L}` from :math:`x_{wL} \dots x_{wL+L-1}`,
and the loss is averaged over every token of every window (the ALiBi paper's "nonoverlapping"
evaluation). Every length scores the *same* held-out tokens: the first
:math:`\lfloor (N-1)/L_{\max}\rfloor L_{\max}` targets (optionally capped), so the lengths differ
only in how much context each token sees.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .overlap import (
    OVERLAP_N,
    allowed_starts,
    fraction,
    ngram_hits,
    ngram_set,
    tainted_bytes,
    training_overlap,
    validation_overlap,
    windows_with_ngram,
)

__all__ = [
    "OVERLAP_N",
    "Corpus",
    "allowed_starts",
    "eval_windows",
    "load_corpus",
    "load_file_corpus",
    "load_text",
    "load_topics",
    "ngram_hits",
    "ngram_set",
    "sample_batch",
    "scored_tokens",
    "split_topics",
    "tainted_bytes",
    "topic_clusters",
    "training_overlap",
    "validation_overlap",
    "windows_with_ngram",
]


def load_topics() -> dict[str, str]:
    """``pydoc_data.topics.topics``: topic key -> text."""
    from pydoc_data.topics import topics

    return dict(topics)


def load_text() -> str:
    """All topics joined in sorted-key order (what :func:`load_corpus` hashes as ``text``)."""
    topics = load_topics()
    return "".join(topics[key] for key in sorted(topics))


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def topic_clusters(topics: dict[str, str], n: int = OVERLAP_N) -> list[list[str]]:
    """Group topics that share a verbatim ``n``-byte string (transitively): the connected components.

    Several ``help()`` topics are copies of sections of others (``class`` inside ``compound``,
    ``numeric-types`` inside ``specialnames``), so a split by single topics would put the same text
    on both sides. Returns sorted key lists, in the order of their first key.
    """
    parent = {k: k for k in topics}

    def find(k: str) -> str:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    owner: dict[bytes, str] = {}
    for key in sorted(topics):
        raw = topics[key].encode("utf-8")
        for i in range(len(raw) - n + 1):
            first = owner.setdefault(raw[i : i + n], key)
            if first != key:
                parent[find(first)] = find(key)
    groups: dict[str, list[str]] = {}
    for key in sorted(topics):
        groups.setdefault(find(key), []).append(key)
    return sorted(groups.values())


def split_topics(
    topics: dict[str, str], heldout_fraction: float = 0.1, validation_fraction: float = 0.05
) -> dict[str, list[str]]:
    """Assign every topic to ``"train"``, ``"validation"`` or ``"heldout"`` (rule in the module docstring).

    Whole clusters (:func:`topic_clusters`) are assigned, in the order of the SHA-256 of their first
    key. Returns sorted key lists; every key is in exactly one.
    """
    _check_fractions(heldout_fraction, validation_fraction)
    sizes = {k: len(v.encode("utf-8")) for k, v in topics.items()}
    total = sum(sizes.values())
    clusters = sorted(topic_clusters(topics), key=lambda c: hashlib.sha256(c[0].encode("utf-8")).hexdigest())
    splits: dict[str, list[str]] = {"train": [], "validation": [], "heldout": []}
    held = val = 0
    for cluster in clusters:
        n = sum(sizes[k] for k in cluster)
        if held + n <= heldout_fraction * total:
            splits["heldout"] += cluster
            held += n
        elif val + n <= validation_fraction * total:
            splits["validation"] += cluster
            val += n
        else:
            splits["train"] += cluster
    return {name: sorted(keys) for name, keys in splits.items()}


def _check_fractions(heldout_fraction: float, validation_fraction: float) -> None:
    if not (0 < heldout_fraction < 1 and 0 < validation_fraction < 1 and heldout_fraction + validation_fraction < 1):
        raise ValueError(
            f"heldout_fraction and validation_fraction must be > 0 with a sum < 1, got {heldout_fraction}, "
            f"{validation_fraction}"
        )


@dataclass(frozen=True)
class Corpus:
    """Byte tokens of the three splits, the allowed training starts, and what identifies them."""

    train: torch.Tensor  # (N_train,) long, values 0..255
    heldout: torch.Tensor  # (N_heldout,) long
    info: dict
    validation: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))  # (N_val,) long
    train_tainted: torch.Tensor | None = None  # (N_train,) bool: inside a 64-byte string of the held-out text
    validation_tainted: torch.Tensor | None = None  # (N_val,) bool

    @property
    def vocab_size(self) -> int:
        return 256

    def train_starts(self, length: int) -> torch.Tensor:
        """Starts of the training windows of ``length`` (+1) bytes that hold no tainted byte."""
        if self.train_tainted is None:
            return torch.arange(max(0, len(self.train) - length))
        return allowed_starts(self.train_tainted, length)

    def validation_windows(self, length: int, max_tokens: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Non-overlapping validation windows ``(x, y)``, ``(W, length)``, without any tainted byte."""
        n_windows = (len(self.validation) - 1) // length
        if max_tokens is not None:
            n_windows = min(n_windows, max(1, max_tokens // length))
        starts = torch.arange(n_windows) * length
        if self.validation_tainted is not None:
            bad = torch.cat([torch.zeros(1, dtype=torch.long), self.validation_tainted.long().cumsum(0)])
            starts = starts[(bad[starts + length + 1] - bad[starts]) == 0]
        idx = starts[:, None] + torch.arange(length + 1)  # (W, L+1)
        window = self.validation[idx]
        return window[:, :-1], window[:, 1:]


@functools.lru_cache(maxsize=4)
def load_corpus(heldout_fraction: float = 0.1, validation_fraction: float = 0.05) -> Corpus:
    """Split the topics (:func:`split_topics`), encode each split, and measure the verbatim overlap.

    Cached (a few seconds of string work); do not modify the returned tensors in place."""
    topics = load_topics()
    splits = split_topics(topics, heldout_fraction, validation_fraction)
    texts = {name: "".join(topics[k] for k in keys) for name, keys in splits.items()}
    raw_all = load_text().encode("utf-8")
    info = {
        "source": "pydoc_data.topics.topics, split by clusters of topics sharing 64-byte strings "
        "(SHA-256 order), UTF-8 bytes",
        "python": sys.version,
        "tokenization": "bytes (vocab 256)",
        "n_chars": len(load_text()),
        "n_tokens": len(raw_all),
        "heldout_fraction": heldout_fraction,
        "validation_fraction": validation_fraction,
        "topics": splits,
    }
    return _build_corpus({k: v.encode("utf-8") for k, v in texts.items()}, raw_all, info)


def _build_corpus(raw: dict[str, bytes], raw_all: bytes, info: dict) -> Corpus:
    """Tokens of the three splits, the taint masks and the overlap and SHA-256 records."""
    tokens = {name: _tokens_of(data) for name, data in raw.items()}
    held_grams = ngram_set(tokens["heldout"])
    train_tainted = tainted_bytes(tokens["train"], held_grams)
    val_tainted = tainted_bytes(tokens["validation"], held_grams)
    train_grams = ngram_set(tokens["train"])
    overlap = {
        "n": OVERLAP_N,
        "what": f"verbatim {OVERLAP_N}-byte strings shared between splits; tainted = inside such a string",
        "heldout_ngrams_in_train_text": fraction(sum(g in train_grams for g in held_grams), len(held_grams)),
        "train_bytes_tainted": fraction(int(train_tainted.sum()), len(train_tainted)),
        "validation_bytes_tainted": fraction(int(val_tainted.sum()), len(val_tainted)),
    }
    info = {
        **info,
        "n_train_tokens": len(tokens["train"]),
        "n_validation_tokens": len(tokens["validation"]),
        "n_heldout_tokens": len(tokens["heldout"]),
        "overlap": overlap,
        "sha256": {
            "text": _sha256(raw_all),
            "train": _sha256(raw["train"]),
            "validation": _sha256(raw["validation"]),
            "heldout": _sha256(raw["heldout"]),
        },
    }
    return Corpus(
        train=tokens["train"],
        heldout=tokens["heldout"],
        info=info,
        validation=tokens["validation"],
        train_tainted=train_tainted,
        validation_tainted=val_tainted,
    )


def _tokens_of(raw: bytes) -> torch.Tensor:
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).long() if raw else torch.zeros(0, dtype=torch.long)


def load_file_corpus(
    path: str | os.PathLike, heldout_fraction: float = 0.1, validation_fraction: float = 0.05
) -> Corpus:
    """A UTF-8 text file as a byte-level corpus, split into contiguous blocks (module docstring).

    Raises ``ValueError`` naming ``--corpus`` when the file is missing, too small or not UTF-8. The
    overlap check is plain Python (about 10 s per MB on a busy core): keep the file to tens of MB.
    Cached per path, size and modification time (do not modify the returned tensors in place).
    """
    path = Path(path)
    try:
        stat = path.stat()
    except OSError as err:
        raise ValueError(f"--corpus {path}: cannot read the file ({err.strerror})") from None
    return _load_file_corpus(str(path), stat.st_size, stat.st_mtime_ns, heldout_fraction, validation_fraction)


@functools.lru_cache(maxsize=2)
def _load_file_corpus(
    name: str, size: int, mtime_ns: int, heldout_fraction: float, validation_fraction: float
) -> Corpus:
    path = Path(name)
    try:
        raw_all = path.read_bytes()
    except OSError as err:
        raise ValueError(f"--corpus {path}: cannot read the file ({err.strerror})") from None
    try:
        text = raw_all.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"--corpus {path} is not UTF-8 text (byte {err.start}: {err.reason})") from None
    if len(raw_all) < 1000:
        raise ValueError(f"--corpus {path} holds {len(raw_all)} bytes; it needs at least 1000")
    _check_fractions(heldout_fraction, validation_fraction)
    n = len(raw_all)
    a = int(n * (1 - heldout_fraction - validation_fraction))  # train: [0, a)
    b = int(n * (1 - heldout_fraction))  # validation: [a, b); held-out: [b, n)
    info = {
        "source": f"file {path.name} (--corpus), contiguous blocks: bytes [0, {a}) train, [{a}, {b}) validation, "
        f"[{b}, {n}) held-out, UTF-8 bytes",
        "python": sys.version,
        "tokenization": "bytes (vocab 256)",
        "n_chars": len(text),
        "n_tokens": n,
        "heldout_fraction": heldout_fraction,
        "validation_fraction": validation_fraction,
        "blocks": {"train": [0, a], "validation": [a, b], "heldout": [b, n]},
    }
    return _build_corpus({"train": raw_all[:a], "validation": raw_all[a:b], "heldout": raw_all[b:]}, raw_all, info)


def sample_batch(
    tokens: torch.Tensor,
    batch_size: int,
    length: int,
    generator: torch.Generator,
    starts: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch_size`` random windows of ``length`` tokens and their next-token targets.

    Returns ``(x, y)``, both ``(B, T)`` long, with ``y[b, t] = x[b, t + 1]`` in the text. Window
    starts are drawn uniformly from ``starts`` (default: every start ``0 .. N - length - 1``)
    with ``generator`` (on the CPU), so a seed fixes the batch order.
    """
    if len(tokens) <= length:
        raise ValueError(f"need more than length={length} tokens to sample a window, got {len(tokens)}")
    if starts is None:
        chosen = torch.randint(0, len(tokens) - length, (batch_size,), generator=generator)  # (B,)
    else:
        if len(starts) == 0:
            raise ValueError("no allowed window start")
        chosen = starts[torch.randint(0, len(starts), (batch_size,), generator=generator)]  # (B,)
    idx = chosen[:, None] + torch.arange(length + 1)  # (B, T+1)
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
