r"""Learned position tables: their cost, a tiny model that trains one, and how to read the result.

A learned table adds a trained row to each token embedding, :math:`x_m \mapsto x_m + P[m]`
(:class:`posviz.LearnedPositionalEmbedding`, as in BERT and GPT). This module trains such a
table on a toy task small enough to run in a few seconds on a laptop CPU, so that the book can
show a real learned table instead of describing one:

* the task, :func:`sliding_window_max`: at every position output the largest of the last
  ``window + 1`` tokens. Which keys are "the last few" is a question about position only;
* the model, :class:`OneLayerModel`: token embedding + learned position table, one causal
  attention layer (:func:`posviz.attention`) and a linear read-out;
* the loop, :func:`train_window_max`: seeded, single-threaded and deterministic, keeping a
  :class:`Snapshot` of the table at a dozen chosen steps;
* the readings: :func:`cosine_similarity_matrix` (which positions look alike),
  :func:`mean_by_offset` (the same, averaged along each diagonal :math:`r = m - n`) and
  :func:`positional_attention` (the attention the table alone asks for);
* the bill: :func:`learned_table_parameters`.

Book chapter: *Learned position tables*.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import torch
from torch import nn
from torch.nn import functional as F

from ._validate import check_int, check_positive
from .absolute import LearnedPositionalEmbedding
from .attention import attention

__all__ = [
    "DEFAULT_CHECKPOINTS",
    "OneLayerModel",
    "Snapshot",
    "TrainConfig",
    "TrainingRun",
    "cosine_similarity_matrix",
    "explained_variance",
    "learned_table_parameters",
    "mean_by_offset",
    "positional_attention",
    "principal_coordinates",
    "sliding_window_max",
    "train_grid",
    "train_window_max",
]

DEFAULT_CHECKPOINTS: tuple[int, ...] = (0, 5, 10, 15, 20, 30, 40, 50, 75, 100, 125, 150)
"""Training steps at which :func:`train_window_max` keeps a snapshot by default (a dozen,
denser early, where the table changes fastest)."""


def learned_table_parameters(max_len: int, dim: int) -> int:
    r"""Number of trained numbers in a learned position table.

    .. math:: \#P = L_{\max} \cdot d

    BERT-base (Devlin et al., 2019): :math:`512 \cdot 768 = 393{,}216`; GPT-2 small (Radford et
    al., 2019): :math:`1024 \cdot 768 = 786{,}432`; a table for GPT-3 175B's context and width
    (Brown et al., 2020): :math:`2048 \cdot 12288 = 25{,}165{,}824`.

    Args:
        max_len: rows of the table :math:`L_{\max}`, an integer >= 1.
        dim: model dimension :math:`d`, an integer >= 1.
    """
    return check_int("max_len", max_len, minimum=1) * check_int("dim", dim, minimum=1)


def cosine_similarity_matrix(table: torch.Tensor) -> torch.Tensor:
    r"""Cosine similarity between every pair of rows of a position table, shape ``[L, L]``.

    .. math::

        S_{mn} = \frac{p_m^\top p_n}{\lVert p_m \rVert\, \lVert p_n \rVert} \in [-1, 1]

    :math:`S` is symmetric with ones on the diagonal. A row of zeros has no direction: its
    similarities are defined as 0 (its diagonal entry too). Works for any table (learned,
    sinusoidal); keeps its device, computes in float64 for float64 input, else float32.

    Args:
        table: ``[L, d]`` floating-point tensor, one position vector :math:`p_m` per row.
    """
    if not isinstance(table, torch.Tensor):
        raise TypeError(f"table must be a torch.Tensor, got {type(table).__name__}")
    if not table.is_floating_point():
        raise TypeError(f"table must be a floating-point tensor, got {table.dtype}")
    if table.dim() != 2:
        raise ValueError(f"table must have shape [positions, dim], got {list(table.shape)}")
    work = torch.float64 if table.dtype == torch.float64 else torch.float32
    p = table.detach().to(work)  # [L, d]
    norm = p.norm(dim=-1, keepdim=True)  # ||p_m||, [L, 1]
    unit = torch.where(norm > 0, p / norm.clamp_min(torch.finfo(work).tiny), torch.zeros_like(p))  # [L, d]
    return unit @ unit.T  # S_mn, [L, L]


def explained_variance(table: torch.Tensor) -> torch.Tensor:
    r"""Share of a table's variance along each principal direction, largest first, ``[min(L, d)]``.

    With :math:`\bar p = \frac1L \sum_m p_m` and :math:`\sigma_1 \ge \sigma_2 \ge \dots` the
    singular values of the centred table :math:`P - \mathbf 1 \bar p^\top`,

    .. math::

        v_k = \frac{\sigma_k^2}{\sum_j \sigma_j^2}, \qquad \sum_k v_k = 1 .

    :math:`v_1 \approx 1` means the rows lie close to one line: position is, to that extent, a
    single number along one direction. A table whose rows are all equal has no variance: all
    zeros are returned.

    Args:
        table: ``[L, d]`` floating-point tensor, ``L >= 1``.
    """
    if not isinstance(table, torch.Tensor):
        raise TypeError(f"table must be a torch.Tensor, got {type(table).__name__}")
    if not table.is_floating_point():
        raise TypeError(f"table must be a floating-point tensor, got {table.dtype}")
    if table.dim() != 2 or table.shape[0] == 0:
        raise ValueError(f"table must have shape [positions, dim] with positions >= 1, got {list(table.shape)}")
    p = table.detach().to(torch.float64)
    sigma = torch.linalg.svdvals(p - p.mean(0))  # singular values of the centred table
    power = sigma**2
    total = power.sum()
    return (power / total if total > 0 else power).to(torch.float64 if table.dtype == torch.float64 else torch.float32)


def principal_coordinates(table: torch.Tensor, k: int = 1) -> torch.Tensor:
    r"""Coordinates of the centred rows along the table's ``k`` principal directions, ``[L, k]``.

    .. math::

        t_{m,j} = (p_m - \bar p)^\top u_j, \qquad j = 1, \dots, k,

    where :math:`u_j` is the :math:`j`-th right singular vector of the centred table (the
    direction of :math:`\sigma_j` in :func:`explained_variance`). A singular vector's sign is
    arbitrary; it is fixed here so that :math:`t_{L-1,j} \ge t_{0,j}` (the coordinate does not
    fall from the first row to the last).

    Args:
        table: ``[L, d]`` floating-point tensor, ``L >= 1``.
        k: how many directions, in ``[1, min(L, d)]``.
    """
    if not isinstance(table, torch.Tensor):
        raise TypeError(f"table must be a torch.Tensor, got {type(table).__name__}")
    if not table.is_floating_point():
        raise TypeError(f"table must be a floating-point tensor, got {table.dtype}")
    if table.dim() != 2 or table.shape[0] == 0:
        raise ValueError(f"table must have shape [positions, dim] with positions >= 1, got {list(table.shape)}")
    k = check_int("k", k, minimum=1, maximum=min(table.shape))
    p = table.detach().to(torch.float64)
    centred = p - p.mean(0)  # [L, d]
    _, _, vh = torch.linalg.svd(centred, full_matrices=False)  # rows of vh: u_1, u_2, ...
    t = centred @ vh[:k].T  # t_mj, [L, k]
    t = t * torch.where(t[-1] >= t[0], 1.0, -1.0)  # sign: the last row is not below the first
    return t.to(torch.float64 if table.dtype == torch.float64 else torch.float32)


def mean_by_offset(matrix: torch.Tensor) -> torch.Tensor:
    r"""Average of a square matrix along each diagonal below the main one, by offset :math:`r`.

    .. math::

        \bar S(r) = \frac{1}{L - r} \sum_{m=r}^{L-1} S_{m,\,m-r}, \qquad r = m - n = 0, \dots, L-1

    :math:`r` is query minus key, as everywhere in the book: :math:`r = 1` pairs each position
    with the one just before it. For a symmetric :math:`S` (a similarity matrix) this is the
    whole story; for a causal attention map it is the part that is not masked.

    Args:
        matrix: ``[L, L]`` floating-point tensor, ``L >= 1``.

    Returns:
        ``[L]`` tensor, entry ``r`` is :math:`\bar S(r)`.
    """
    if not isinstance(matrix, torch.Tensor):
        raise TypeError(f"matrix must be a torch.Tensor, got {type(matrix).__name__}")
    if not matrix.is_floating_point():
        raise TypeError(f"matrix must be a floating-point tensor, got {matrix.dtype}")
    if matrix.dim() != 2 or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] == 0:
        raise ValueError(f"matrix must be square with at least one row, got shape {list(matrix.shape)}")
    return torch.stack([matrix.diagonal(-r).mean() for r in range(matrix.shape[0])])


def sliding_window_max(tokens: torch.Tensor, window: int) -> torch.Tensor:
    r"""The toy task's targets: the largest token among the current one and the ``window`` before it.

    .. math::

        y_m = \max\{\, t_n : \max(0, m - w) \le n \le m \,\}

    (:math:`t_n` the token at position :math:`n`). The query at position :math:`m` needs the
    keys with :math:`0 \le m - n \le w`: without position, attention cannot tell them from the
    rest.

    Args:
        tokens: ``[..., L]`` integer tensor of token ids.
        window: :math:`w`, how many earlier tokens count, an integer >= 0.

    Returns:
        ``[..., L]`` tensor of the same dtype.
    """
    if not isinstance(tokens, torch.Tensor):
        raise TypeError(f"tokens must be a torch.Tensor, got {type(tokens).__name__}")
    if tokens.is_floating_point() or tokens.dtype == torch.bool or tokens.dim() == 0:
        raise TypeError(f"tokens must be an integer tensor of shape [..., L], got {tokens.dtype} {list(tokens.shape)}")
    window = check_int("window", window, minimum=0)
    y = tokens.clone()
    for back in range(1, min(window, tokens.shape[-1] - 1) + 1):  # y_m = max(y_m, x_{m-back})
        y[..., back:] = torch.maximum(y[..., back:], tokens[..., :-back])
    return y


@dataclass(frozen=True)
class TrainConfig:
    r"""Everything that defines a training run of :func:`train_window_max` (it is seeded).

    Attributes:
        max_len: rows of the learned table, :math:`L_{\max}`.
        dim: model width :math:`d` (token and position vectors, queries, keys, values).
        vocab: number of token ids; tokens are drawn uniformly from ``0 .. vocab-1``.
        window: the task's :math:`w`: target = max of the last ``window + 1`` tokens.
        seq_len: training sequence length, ``<= max_len`` (``None``: ``max_len``). Rows
            ``seq_len ..`` then never receive a gradient.
        steps: optimiser steps (Adam, no weight decay).
        batch: sequences per step.
        lr: Adam's learning rate.
        seed: seeds the initial weights and every batch.
        checkpoints: steps at which a :class:`Snapshot` is kept (those ``<= steps``).
        probe: size of the fixed batch on which snapshots measure loss, accuracy, attention.
    """

    max_len: int = 48
    dim: int = 32
    vocab: int = 16
    window: int = 3
    seq_len: int | None = None
    steps: int = 150
    batch: int = 32
    lr: float = 1e-2
    seed: int = 0
    checkpoints: tuple[int, ...] = DEFAULT_CHECKPOINTS
    probe: int = 128

    def __post_init__(self) -> None:
        check_int("max_len", self.max_len, minimum=1)
        check_int("dim", self.dim, minimum=1)
        check_int("vocab", self.vocab, minimum=2)
        check_int("window", self.window, minimum=0)
        if self.seq_len is not None:
            check_int("seq_len", self.seq_len, minimum=1, maximum=self.max_len)
        check_int("steps", self.steps, minimum=0)
        check_int("batch", self.batch, minimum=1)
        check_positive("lr", self.lr)
        check_int("seed", self.seed, minimum=0)
        check_int("probe", self.probe, minimum=1)
        if not isinstance(self.checkpoints, tuple) or not all(isinstance(c, int) for c in self.checkpoints):
            raise TypeError(f"checkpoints must be a tuple of ints, got {self.checkpoints!r}")
        if any(c < 0 for c in self.checkpoints):
            raise ValueError(f"checkpoints must be steps >= 0, got {self.checkpoints}")

    @property
    def length(self) -> int:
        """The training sequence length: ``seq_len``, or ``max_len`` when that is ``None``."""
        return self.max_len if self.seq_len is None else self.seq_len


class OneLayerModel(nn.Module):
    r"""Token embedding + learned position table, one causal attention layer, a linear read-out.

    .. math::

        x_m = E[t_m] + P[m], \qquad
        o_m = \sum_{n \le m} a_{mn}\, W_v x_n, \qquad
        \text{logits}_m = W_o\, o_m + b_o

    with :math:`a_{mn}` the causal attention weights of :func:`posviz.attention`
    (:math:`q_m = W_q x_m`, :math:`k_n = W_k x_n`, scale :math:`1/\sqrt d`). The table ``P``
    is a :class:`posviz.LearnedPositionalEmbedding`: a sequence longer than ``max_len`` raises
    its ``IndexError``.
    """

    def __init__(self, vocab: int, max_len: int, dim: int) -> None:
        super().__init__()
        self.token = nn.Embedding(vocab, dim)  # E: [vocab, d]
        self.position = LearnedPositionalEmbedding(max_len, dim)  # P: [max_len, d]
        self.w_q = nn.Linear(dim, dim, bias=False)
        self.w_k = nn.Linear(dim, dim, bias=False)
        self.w_v = nn.Linear(dim, dim, bias=False)
        self.readout = nn.Linear(dim, vocab)

    def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``tokens``: ``[B, L]`` token ids. Returns ``(logits [B, L, vocab], weights [B, L, L])``."""
        x = self.token(tokens) + self.position(tokens.shape[-1])  # x_m = E[t_m] + P[m], [B, L, d]
        out, weights = attention(self.w_q(x), self.w_k(x), self.w_v(x), causal=True)  # [B, L, d], [B, L, L]
        return self.readout(out), weights  # [B, L, vocab], [B, L, L]


def positional_attention(model: OneLayerModel, length: int | None = None) -> torch.Tensor:
    r"""The attention the position table alone asks for: causal weights from :math:`P` with no tokens.

    .. math::

        a^{\text{pos}}_{mn} = \operatorname{softmax}_{n \le m}
            \frac{(W_q\, p_m)^\top (W_k\, p_n)}{\sqrt d}

    This is the position–position term of the expanded score
    :math:`(e_m + p_m)^\top W_q^\top W_k (e_n + p_n)/\sqrt d`, pushed through the causal softmax
    (:func:`posviz.attention`): where the model would look if every token were the same.

    Args:
        model: a :class:`OneLayerModel`.
        length: positions ``0 .. length-1`` (default: the whole table; more raises ``IndexError``).

    Returns:
        ``[length, length]`` weights, rows summing to 1, zero above the diagonal.
    """
    if not isinstance(model, OneLayerModel):
        raise TypeError(f"model must be a OneLayerModel, got {type(model).__name__}")
    length = model.position.max_len if length is None else length
    with torch.no_grad():
        p = model.position(length)  # [L, d]
        _, weights = attention(model.w_q(p), model.w_k(p), causal=True)  # [L, L]
    return weights


@dataclass(frozen=True)
class Snapshot:
    """The state of a run at one training step.

    Attributes:
        step: optimiser steps taken so far.
        table: a copy of the position table ``P`` (``[max_len, dim]``, CPU, float32).
        positional_attention: :func:`positional_attention` over the training length.
        attention: the model's causal attention weights averaged over the probe batch,
            ``[length, length]``.
        loss: cross-entropy on the probe batch (nats per position).
        accuracy: fraction of probe positions whose most likely token is the target.
    """

    step: int
    table: torch.Tensor
    positional_attention: torch.Tensor
    attention: torch.Tensor
    loss: float
    accuracy: float


@dataclass(frozen=True)
class TrainingRun:
    """What :func:`train_window_max` returns: its config, the trained model and the snapshots."""

    config: TrainConfig
    model: OneLayerModel
    snapshots: tuple[Snapshot, ...] = field(default_factory=tuple)

    def embedding(self, index: int = -1) -> LearnedPositionalEmbedding:
        """A :class:`posviz.LearnedPositionalEmbedding` holding snapshot ``index``'s table."""
        snap = self.snapshots[index]
        with torch.random.fork_rng(devices=[]):  # its random init is overwritten: leave the RNG alone
            emb = LearnedPositionalEmbedding(self.config.max_len, self.config.dim)
        with torch.no_grad():
            emb.table.weight.copy_(snap.table)
        return emb


def _snapshot(model: OneLayerModel, step: int, probe: torch.Tensor, target: torch.Tensor) -> Snapshot:
    with torch.no_grad():
        logits, weights = model(probe)  # [N, L, V], [N, L, L]
        loss = F.cross_entropy(logits.flatten(0, 1), target.flatten()).item()
        accuracy = (logits.argmax(-1) == target).double().mean().item()
        return Snapshot(
            step=step,
            table=model.position.table.weight.detach().clone().cpu(),
            positional_attention=positional_attention(model, probe.shape[-1]).cpu(),
            attention=weights.mean(0).cpu(),
            loss=loss,
            accuracy=accuracy,
        )


def train_window_max(config: TrainConfig | None = None) -> TrainingRun:
    r"""Train a :class:`OneLayerModel` on :func:`sliding_window_max`; keep a snapshot at each checkpoint.

    Minimises the cross-entropy :math:`-\frac{1}{BL}\sum_{b,m} \log p(y_{bm} \mid x_{b,\le m})`
    with Adam (no weight decay) on fresh uniform random tokens at every step. Deterministic:
    the weights come from ``torch.manual_seed(config.seed)`` (the caller's global RNG state is
    left as it was), the batches from a generator seeded with ``config.seed``, and the loop runs
    on the CPU with one thread (faster for tensors this small, and independent of the
    machine's core count).

    A row of the table that no training sequence reaches (``m >= seq_len``) gets a zero
    gradient at every step, and Adam then leaves it exactly at its initial value.
    """
    config = TrainConfig() if config is None else config
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    length, threads = config.length, torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            model = OneLayerModel(config.vocab, config.max_len, config.dim)
        data = torch.Generator().manual_seed(config.seed)
        probe = torch.randint(config.vocab, (config.probe, length), generator=data)  # [N, L]
        probe_target = sliding_window_max(probe, config.window)  # [N, L]
        optimiser = torch.optim.Adam(model.parameters(), lr=config.lr)
        keep = set(config.checkpoints)
        snapshots = []
        for step in range(config.steps + 1):
            if step in keep:
                snapshots.append(_snapshot(model, step, probe, probe_target))
            if step == config.steps:
                break
            tokens = torch.randint(config.vocab, (config.batch, length), generator=data)  # [B, L]
            logits, _ = model(tokens)  # [B, L, V]
            loss = F.cross_entropy(logits.flatten(0, 1), sliding_window_max(tokens, config.window).flatten())
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            optimiser.step()
    finally:
        torch.set_num_threads(threads)
    model.eval()
    return TrainingRun(config=config, model=model, snapshots=tuple(snapshots))


def train_grid(
    max_lens: Iterable[int],
    dims: Iterable[int],
    seeds: Iterable[int] = (0,),
    *,
    base: TrainConfig | None = None,
    runs: Mapping[tuple[int, int, int], TrainingRun] | None = None,
) -> dict[tuple[int, int, int], TrainingRun]:
    """One :func:`train_window_max` run per ``(max_len, dim, seed)``, keyed by that triple.

    Every run uses ``base`` (default :class:`TrainConfig`) with only those three fields
    replaced, so all runs share the same checkpoints. A run in ``runs`` whose config is exactly
    the one wanted is reused instead of trained again.
    """
    base = TrainConfig() if base is None else base
    if not isinstance(base, TrainConfig):
        raise TypeError(f"base must be a TrainConfig, got {type(base).__name__}")
    given = dict(runs or {})
    grid = {}
    for max_len in max_lens:
        for dim in dims:
            for seed in seeds:
                config = replace(base, max_len=max_len, dim=dim, seed=seed)
                key = (config.max_len, config.dim, config.seed)
                old = given.get(key)
                grid[key] = old if old is not None and old.config == config else train_window_max(config)
    return grid
