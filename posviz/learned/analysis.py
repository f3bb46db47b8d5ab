r"""Reading a position table: similarity, principal directions, averages along offsets, its cost.

Book chapter: *Learned position tables*.
"""

from __future__ import annotations

import torch

from .._validate import check_int

__all__ = [
    "cosine_similarity_matrix",
    "explained_variance",
    "learned_table_parameters",
    "mean_by_offset",
    "principal_coordinates",
]


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


def _check_table(table: object, *, rows: int) -> None:
    """A floating-point ``[L, d]`` tensor with ``L >= rows``."""
    if not isinstance(table, torch.Tensor):
        raise TypeError(f"table must be a torch.Tensor, got {type(table).__name__}")
    if not table.is_floating_point():
        raise TypeError(f"table must be a floating-point tensor, got {table.dtype}")
    if table.dim() != 2 or table.shape[0] < rows:
        least = f" with positions >= {rows}" if rows else ""
        raise ValueError(f"table must have shape [positions, dim]{least}, got {list(table.shape)}")


def _result_dtype(table: torch.Tensor) -> torch.dtype:
    """float64 for a float64 table, else float32 (half-precision tables are read in float32)."""
    return torch.float64 if table.dtype == torch.float64 else torch.float32


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
    _check_table(table, rows=0)
    work = _result_dtype(table)
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
    _check_table(table, rows=1)
    p = table.detach().to(torch.float64)
    sigma = torch.linalg.svdvals(p - p.mean(0))  # singular values of the centred table
    power = sigma**2
    total = power.sum()
    return (power / total if total > 0 else power).to(_result_dtype(table))


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
    _check_table(table, rows=1)
    k = check_int("k", k, minimum=1, maximum=min(table.shape))
    p = table.detach().to(torch.float64)
    centred = p - p.mean(0)  # [L, d]
    _, _, vh = torch.linalg.svd(centred, full_matrices=False)  # rows of vh: u_1, u_2, ...
    t = centred @ vh[:k].T  # t_mj, [L, k]
    t = t * torch.where(t[-1] >= t[0], 1.0, -1.0)  # sign: the last row is not below the first
    return t.to(_result_dtype(table))


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
