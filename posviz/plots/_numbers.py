"""Numbers as the pages store them: CPU float64 arrays, rounded so that the JSON stays short.

Two rules, one place: :func:`rounded` keeps a fixed number of decimals (values of one scale, e.g.
a table in [-1, 1]); :func:`significant` keeps significant digits (values spanning many scales,
e.g. attention weights or angles).
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["as_numpy", "rounded", "significant"]


def as_numpy(values: object) -> np.ndarray:
    """``values`` (a tensor on any device, an array or numbers) as a float64 numpy array."""
    if isinstance(values, torch.Tensor):
        values = values.detach().to("cpu", torch.float64).numpy()
    return np.asarray(values, dtype=np.float64)


def rounded(values: object, decimals: int) -> np.ndarray:
    """``values`` rounded to ``decimals`` decimal places."""
    return np.round(as_numpy(values), decimals)


def significant(values: object, digits: int = 4) -> np.ndarray:
    """``values`` rounded to ``digits`` significant digits; magnitudes below 1e-30 become 0."""
    a = as_numpy(values)
    a = np.where(np.abs(a) < 1e-30, 0.0, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        exponent = np.where(a == 0, 0, np.floor(np.log10(np.abs(a))))
    decimals = (digits - 1 - exponent).astype(int)
    out = np.empty_like(a)
    for dec in np.unique(decimals):  # np.round takes one number of decimals at a time
        sel = decimals == dec
        out[sel] = np.round(a[sel], int(dec))
    return out
