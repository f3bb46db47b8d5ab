r"""The tables the chapters print, as Markdown in the reader's language.

Each function makes one table of a chapter from the values the chapter computed (or computes
them with the posviz function of the formula it tabulates) and returns a
``posviz.lab.tables.Table``: a Markdown ``str`` that remembers the ``posviz.i18n.tr``
messages it was made of. The book executes its chapters once, in English, and the Chinese
edition renders the same output translated (``posviz.sphinxext`` calls
``posviz.lab.tables.translate_output``); a table made after ``posviz.set_language("zh_CN")``
(the Chinese notebooks) is Chinese from the start. In Chinese, numbers have no thousands
separator and a negative number takes the minus sign U+2212 (``−5``), as the Chinese prose writes
them; listed numbers are separated by 、.

* attention chapter, *How the mask becomes a position signal*: :func:`causal_signal_table`;
* learned chapter, *A ruler, not a clock*: :func:`variance_share_table`,
  :func:`ruler_coordinates_table`, :func:`top_share_by_step_table`, :func:`ruler_grid_table`;
* relative chapter, *T5* and *What a relative term costs*: :func:`t5_sign_table`,
  :func:`t5_bucket_starts_table`, :func:`relative_cost_table`.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch

from ._validate import check_int
from .i18n import tr
from .lab.tables import Table, _rows, _table
from .learned import explained_variance, principal_coordinates
from .relative import t5_relative_bucket

if TYPE_CHECKING:  # pragma: no cover
    from .learned import Snapshot, TrainingRun

__all__ = [
    "Table",
    "causal_signal_table",
    "relative_cost_table",
    "ruler_coordinates_table",
    "ruler_grid_table",
    "t5_bucket_starts_table",
    "t5_sign_table",
    "top_share_by_step_table",
    "variance_share_table",
]


def _listed(values: Sequence[Any]) -> str:
    """Numbers listed in the reader's language: ``8, 11, 16`` in English, ``8、11、16`` in Chinese
    (each step the message ``"{some}, {next}"``, so that a table made in English is translated
    with its lists)."""
    if not values:
        return "–"
    text = str(values[0])
    for value in values[1:]:
        text = tr("{some}, {next}", some=text, next=str(value))
    return text


def _vector(name: str, values: torch.Tensor, length: int) -> torch.Tensor:
    if not isinstance(values, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(values).__name__}")
    if values.dim() != 1 or values.shape[0] < length:
        raise ValueError(
            f"{name} must be one value per position, [L] with L >= {length}, got shape {tuple(values.shape)}"
        )
    return values.detach().double()


@_table
def causal_signal_table(
    positions: Sequence[int],
    equal_weights: torch.Tensor,
    start_weights: torch.Tensor,
    coordinate: torch.Tensor,
    size: torch.Tensor,
) -> str:
    r"""The attention chapter's three measurements of a causal head without position, one row per
    query position :math:`m` in ``positions``.

    Columns: identical tokens, the weight :math:`a_{m0}` (``equal_weights[m, 0]``, :math:`1/(m+1)`);
    a start token, its weight :math:`a_{m0}` (``start_weights[m, 0]``) and the output's coordinate
    on the line from :math:`v_t` to :math:`v_s` (``coordinate[m]``); random tokens, the mean of
    :math:`\lVert o_m \rVert^2` over the sequences (``size[m]``).

    Args:
        positions: query positions, each in ``[0, L)``.
        equal_weights, start_weights: ``[L, L]`` causal attention weights.
        coordinate, size: ``[L]``, one value per query position.
    """
    for name, weights in (("equal_weights", equal_weights), ("start_weights", start_weights)):
        if not isinstance(weights, torch.Tensor) or weights.dim() != 2 or weights.shape[0] != weights.shape[1]:
            raise ValueError(
                f"{name} must be an [L, L] tensor of attention weights, got {getattr(weights, 'shape', weights)!r}"
            )
    length = equal_weights.shape[0]
    if start_weights.shape[0] != length:
        raise ValueError(
            f"equal_weights and start_weights must have the same L, got {length} and {start_weights.shape[0]}"
        )
    coordinate, size = _vector("coordinate", coordinate, length), _vector("size", size, length)
    rows = []
    for m in positions:
        m = check_int("position", m, minimum=0, maximum=length - 1)
        rows.append(
            [
                str(m),
                f"{equal_weights[m, 0].item():.4f}",
                f"{start_weights[m, 0].item():.4f}",
                f"{coordinate[m].item():.4f}",
                f"{size[m].item():.2f}",
            ]
        )
    head = [
        "m",
        tr("identical tokens: aₘ₀"),
        tr("start token: aₘ₀"),
        tr("start token: oₘ on the line"),
        tr("random tokens: mean ‖oₘ‖²"),
    ]
    return _rows(head, rows)


@_table
def t5_sign_table(pairs: Sequence[tuple[int, int]], *, num_buckets: int = 32, max_distance: int = 128) -> str:
    """T5's buckets for query/key pairs ``(m, n)``: the book's offset :math:`m - n`, T5's argument
    ``relative_position`` :math:`= n - m` (key minus query) and its bucket
    (:func:`posviz.t5_relative_bucket`) in the encoder (bidirectional) and in the decoder (causal)."""
    rows = []
    for pair in pairs:
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise ValueError(f"each pair must be (m, n), two positions; got {pair!r}")
        m, n = (check_int(name, v, minimum=0) for name, v in zip(("m", "n"), pair))
        rel = torch.tensor([n - m])  # T5's sign: key minus query
        both = t5_relative_bucket(rel, num_buckets=num_buckets, max_distance=max_distance).item()
        causal = t5_relative_bucket(rel, bidirectional=False, num_buckets=num_buckets, max_distance=max_distance).item()
        rows.append([str(m), str(n), str(m - n), str(n - m), str(both), str(causal)])
    head = ["m", "n", "m − n", tr("T5: n − m"), tr("bucket (encoder)"), tr("bucket (decoder)")]
    return _rows(head, rows)


@_table
def t5_bucket_starts_table(*, num_buckets: int = 32, max_distance: int = 128, max_offset: int = 400) -> str:
    """Where each of T5's logarithmic buckets begins: for the encoder (bidirectional) and the decoder
    (causal), the log buckets' indices and the first distance :math:`m - n` (a key at or before
    the query) that :func:`posviz.t5_relative_bucket` puts in each, over distances ``0 ..
    max_offset - 1``."""
    max_offset = check_int("max_offset", max_offset, minimum=1)
    distance = torch.arange(0, max_offset)
    rows = []
    for bidirectional, mode in ((True, tr("encoder (bidirectional)")), (False, tr("decoder (causal)"))):
        # T5's sign: relative_position = n - m = -distance
        bucket = t5_relative_bucket(
            -distance, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
        )
        starts = [int(distance[bucket == b][0]) for b in bucket.unique()]
        exact = len(starts) // 2  # buckets 0 .. exact-1 hold one distance each
        rows.append([mode, f"{exact}–{len(starts) - 1}", _listed(starts[exact:])])
    return _rows([tr("rule"), tr("log buckets"), tr("first distance of each")], rows, align="---")


@_table
def relative_cost_table(rows: Sequence[Mapping[str, float]]) -> str:
    """:func:`posviz.cost.relative_attention_cost`'s timings (seconds) as a table in milliseconds,
    one row per length, with the ratios to plain attention, under a line naming the machine."""
    if not rows:
        raise ValueError("rows must hold at least one timing (from posviz.cost.relative_attention_cost)")
    missing = [key for key in ("length", "plain", "shaw", "t5") if key not in rows[0]]
    if missing:
        raise ValueError(f"each row needs 'length', 'plain', 'shaw' and 't5'; the first lacks {missing}")
    threads = int(rows[0].get("threads", torch.get_num_threads()))
    machine = platform.processor() or platform.machine()
    if threads == 1:
        line = tr("machine: {machine}, torch {version}, 1 CPU thread", machine=machine, version=torch.__version__)
    else:
        line = tr(
            "machine: {machine}, torch {version}, {threads} CPU threads",
            machine=machine,
            version=torch.__version__,
            threads=threads,
        )
    body = []
    for row in rows:
        plain, shaw, t5 = (1000 * float(row[key]) for key in ("plain", "shaw", "t5"))
        if plain <= 0:
            raise ValueError(f"a timing must be positive, got plain = {row['plain']!r} at L = {row['length']}")
        body.append(
            [
                str(int(row["length"])),
                f"{plain:.2f}",
                f"{shaw:.2f}",
                f"{t5:.2f}",
                f"{shaw / plain:.1f}",
                f"{t5 / plain:.1f}",
            ]
        )
    head = ["L", tr("plain (ms)"), tr("Shaw (ms)"), tr("T5 bias (ms)"), tr("Shaw / plain"), tr("T5 / plain")]
    return line + "\n\n" + _rows(head, body)


def _subscript(k: int) -> str:
    return str(k).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))


@_table
def variance_share_table(learned: torch.Tensor, sinusoidal: torch.Tensor, *, directions: int = 3) -> str:
    r"""The share of the variance :math:`v_\ell` along each of the first ``directions`` principal
    directions (:func:`posviz.learned.explained_variance`), for a learned and a sinusoidal table."""
    directions = check_int("directions", directions, minimum=1)
    rows = []
    for name, table in ((tr("learned table"), learned), (tr("sinusoidal table"), sinusoidal)):
        share = explained_variance(table)
        cells = [f"{v:.3f}" for v in share[:directions].tolist()]
        rows.append([name, *cells, *["–"] * (directions - len(cells))])
    return _rows([tr("table"), *[f"v{_subscript(k)}" for k in range(1, directions + 1)]], rows)


@_table
def ruler_coordinates_table(table: torch.Tensor, positions: Sequence[int] = (0, 1, 2, -3, -2, -1)) -> str:
    r"""The coordinate :math:`t_m` of rows ``positions`` (negative: from the end) along the table's
    first principal direction (:func:`posviz.learned.principal_coordinates`), then whether it rises
    at every step of :math:`m` and the length of the mean row :math:`\lVert \bar p \rVert`."""
    t = principal_coordinates(table)[:, 0].double()
    length = t.shape[0]
    rows = []
    for position in positions:
        m = check_int("position", position, minimum=-length, maximum=length - 1) % length
        if rows and m > int(rows[-1][0]) + 1:
            rows.append(["…", "…"])
        rows.append([str(m), f"{t[m].item():.2f}"])
    rising = bool((t.diff() > 0).all())
    line = tr(
        "tₘ rises at every step of m: {answer}; length of the mean row ‖p̄‖ = {length}",
        answer=tr("yes") if rising else tr("no"),
        length=f"{table.detach().double().mean(0).norm().item():.2f}",
    )
    return _rows(["m", "tₘ"], rows) + "\n\n" + line


@_table
def top_share_by_step_table(snapshots: Sequence[Snapshot]) -> str:
    """The share :math:`v_1` of the table's top direction (:func:`posviz.learned.explained_variance`)
    and the probe accuracy at every snapshot of a training run (:class:`posviz.learned.Snapshot`)."""
    if not snapshots:
        raise ValueError("snapshots must hold at least one snapshot of a training run")
    rows = [[str(s.step), f"{explained_variance(s.table)[0].item():.2f}", f"{s.accuracy:.1%}"] for s in snapshots]
    return _rows([tr("training step"), "v₁", tr("accuracy")], rows)


@_table
def ruler_grid_table(grid: Mapping[tuple[int, int, int], TrainingRun]) -> str:
    """:func:`posviz.learned.train_grid`'s runs grouped by the dimension :math:`d`: how many runs, the
    smallest and largest share :math:`v_1` of the final table's top direction, and the smallest and
    largest final accuracy."""
    if not grid:
        raise ValueError("grid must hold at least one run (from posviz.learned.train_grid)")
    rows = []
    for dim in sorted({d for _, d, _ in grid}):
        runs = [run for (_, d, _), run in grid.items() if d == dim]
        top = [explained_variance(run.snapshots[-1].table)[0].item() for run in runs]
        accuracy = [run.snapshots[-1].accuracy for run in runs]
        rows.append(
            [
                str(dim),
                str(len(runs)),
                f"{min(top):.0%}–{max(top):.0%}",
                f"{min(accuracy):.0%}–{max(accuracy):.0%}",
            ]
        )
    return _rows(["d", tr("runs"), tr("v₁ of the final table"), tr("final accuracy")], rows)
