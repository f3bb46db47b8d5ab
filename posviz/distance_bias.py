r"""Score biases that are learned functions of the distance: KERPLE's logarithmic kernel (Chi et
al., 2022) and FIRE (Li et al., 2024).

Both add a bias :math:`b_h(m, n)` to head :math:`h`'s score of query :math:`m` and key :math:`n`,
like ALiBi (:func:`posviz.alibi_bias`), but with parameters trained with the model. Convention as
everywhere in posviz: :math:`m` (or :math:`i`) the query, :math:`n` (or :math:`j`) the key; for a
causal model only :math:`n \le m` matters, where the distance :math:`m - n \ge 0`.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ._validate import check_int, check_positive, check_real, check_tensor, resolve

__all__ = ["FIRE", "KerpleLogBias", "fire_normalized_distance", "kerple_log_bias"]


def _distances(length: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    positions = torch.arange(length, device=device, dtype=dtype)
    return positions[:, None] - positions[None, :]  # (T, T): m - n


def kerple_log_bias(r1: torch.Tensor, r2: torch.Tensor, length: int) -> torch.Tensor:
    r"""KERPLE's logarithmic bias (Chi et al. 2022, "KERPLE: Kernelized Relative Positional
    Embedding for Length Extrapolation", NeurIPS, eq. (7), the "log" variant), per head :math:`h`:

    .. math::

        b_h(m, n) = -r_{1,h}\,\log\big(1 + r_{2,h}\,|m - n|\big), \qquad r_{1,h}, r_{2,h} > 0

    Zero on the diagonal and falling with the distance, like ALiBi's :math:`-\mu_h |m-n|`, but
    logarithmically: a distant key is penalised far less than ALiBi would.

    Args:
        r1, r2: floating tensors ``[heads]``, every entry > 0 (their autograd is kept); same dtype
            and device.
        length: :math:`T \ge 1`, the number of positions.

    Returns:
        ``[heads, length, length]`` in ``r1``'s dtype, on its device.
    """
    r1 = check_tensor("r1", r1, ndim=1, shape_hint="[heads]")
    r2 = check_tensor("r2", r2, ndim=1, shape_hint="[heads]")
    if r1.shape != r2.shape:
        raise ValueError(f"r1 and r2 must have the same shape [heads], got {list(r1.shape)} and {list(r2.shape)}")
    if r1.dtype != r2.dtype or r1.device != r2.device:
        raise TypeError(f"r2 must have r1's dtype and device ({r1.dtype}, {r1.device}), got ({r2.dtype}, {r2.device})")
    for name, r in (("r1", r1), ("r2", r2)):
        if not bool(torch.isfinite(r).all()) or not bool((r > 0).all()):
            raise ValueError(f"{name} must hold finite numbers > 0 (KERPLE's r1, r2 > 0), got {r.detach().tolist()}")
    length = check_int("length", length, minimum=1)
    distance = _distances(length, r1.device, r1.dtype).abs()  # |m - n|, (T, T)
    return -r1[:, None, None] * torch.log1p(r2[:, None, None] * distance)  # -r1 log(1 + r2 |m - n|)


class KerpleLogBias(nn.Module):
    r"""KERPLE's logarithmic bias with learnable :math:`r_{1,h}, r_{2,h}` per head
    (:func:`kerple_log_bias`).

    As in the paper's code, the parameters are projected onto :math:`[\varepsilon, \infty)`,
    :math:`\varepsilon = 0.01`, before every use (a clamp of the stored values, outside autograd),
    so they stay positive whatever the optimiser does; :meth:`reset_parameters` draws them as the
    paper's code does, :math:`r_1 \sim U(0, 2)` and :math:`r_2 \sim U(0, 1)`, then projects.

    ``forward(length)`` returns ``[heads, length, length]``.
    """

    eps = 0.01

    def __init__(self, n_heads: int) -> None:
        super().__init__()
        self.n_heads = check_int("n_heads", n_heads, minimum=1)
        self.r1 = nn.Parameter(torch.empty(self.n_heads))
        self.r2 = nn.Parameter(torch.empty(self.n_heads))
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """:math:`r_1 \\sim U(0, 2)`, :math:`r_2 \\sim U(0, 1)` (``generator``: a CPU generator), projected."""
        self.r1.copy_(2.0 * torch.rand(self.n_heads, generator=generator))
        self.r2.copy_(torch.rand(self.n_heads, generator=generator))
        self.project()

    @torch.no_grad()
    def project(self) -> None:
        r"""Clamp :math:`r_1, r_2` to :math:`\ge \varepsilon` in place (the paper's projection)."""
        self.r1.clamp_(min=self.eps)
        self.r2.clamp_(min=self.eps)

    def forward(self, length: int) -> torch.Tensor:
        r"""The bias :math:`-r_1 \log(1 + r_2 |m - n|)` of every head, ``(n_heads, length, length)``."""
        self.project()
        return kerple_log_bias(self.r1, self.r2, length)  # (nh, T, T)

    def extra_repr(self) -> str:
        return f"n_heads={self.n_heads}, eps={self.eps}"


def fire_normalized_distance(
    length: int,
    c: torch.Tensor | float,
    threshold: torch.Tensor | float,
    *,
    eps: float = 1e-6,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    r"""FIRE's input: the log-scaled distance divided by the log-scaled query position, clipped below.

    .. math::

        u(i, j) = \frac{\psi(i - j)}{\psi(\max(L, i)) + \varepsilon}, \qquad \psi(x) = \log(|c\,x| + 1)

    (Li et al. 2024, "Functional Interpolation for Relative Positions Improves Long Context
    Transformers", ICLR, eq. (3) with the log transform :math:`\psi` of §3.2 and the threshold
    :math:`L` of "progressive interpolation"; the absolute value and :math:`\varepsilon` as in the
    paper's pseudo-code). For a causal model :math:`0 \le j \le i`, so :math:`u \in [0, 1]`: a
    key's distance is measured in units of the query's own position ("progressive
    interpolation"), which keeps :math:`u` inside the range seen in training at any length. Entries
    above the diagonal (:math:`j > i`) use :math:`\max(i - j, 0) = 0`: a causal mask hides them.

    Args:
        length: :math:`T \ge 1`.
        c: the log transform's scale (a float or a 0-d tensor; a tensor keeps its autograd).
        threshold: :math:`L` (float or 0-d tensor), taken as :math:`|L|`: for queries :math:`i < L`
            the normaliser is :math:`\psi(L)`, so short contexts are not stretched to :math:`[0, 1]`.
        eps: :math:`\varepsilon \ge 0` in the denominator.
        device, dtype: used when neither ``c`` nor ``threshold`` is a tensor.

    Returns:
        ``[length, length]``, rows the query :math:`i`, columns the key :math:`j`.
    """
    length = check_int("length", length, minimum=1)
    eps = check_real("eps", eps)
    if eps < 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    tensors = [t for t in (c, threshold) if isinstance(t, torch.Tensor)]
    for name, t in (("c", c), ("threshold", threshold)):
        if isinstance(t, torch.Tensor):
            check_tensor(name, t, ndim=0, shape_hint="(a 0-d tensor)")
        else:
            check_real(name, t)
    if tensors:
        device, dtype = tensors[0].device, tensors[0].dtype
    else:
        device, dtype = resolve(device, dtype)
    c = torch.as_tensor(c, device=device, dtype=dtype)
    threshold = torch.as_tensor(threshold, device=device, dtype=dtype)
    positions = torch.arange(length, device=device, dtype=dtype)  # i
    distance = (positions[:, None] - positions[None, :]).clamp(min=0)  # max(i - j, 0), (T, T)
    normaliser = torch.maximum(positions, threshold.abs())  # max(L, i), (T,)
    psi_distance = torch.log(torch.abs(c * distance) + 1)  # psi(i - j)
    psi_normaliser = torch.log(torch.abs(c * normaliser) + 1) + eps  # psi(max(L, i)) + eps
    return psi_distance / psi_normaliser[:, None]  # u(i, j)


class FIRE(nn.Module):
    r"""FIRE, the functional interpolation bias (Li et al. 2024, eq. (3)):

    .. math::

        b_h(i, j) = f_\theta\big(u(i, j)\big)_h, \qquad
        u(i, j) = \frac{\psi(i - j)}{\psi(\max(L, i))}, \qquad \psi(x) = \log(c\,x + 1)

    (:func:`fire_normalized_distance`), with :math:`f_\theta: \mathbb{R} \to \mathbb{R}^H` an MLP
    (one hidden ReLU layer of ``hidden`` units, the paper's 32; one output per head), a learnable
    scale :math:`c` (initialised to 0.1) and a learnable threshold :math:`L = |\lambda L_0|` with
    :math:`\lambda` learnable (initialised to 1) and :math:`L_0` = ``init_threshold`` fixed, as in
    the paper's pseudo-code. The bias depends on the distance :math:`i - j` and on the query
    position :math:`i` (through the normaliser), nothing else; it is causal: only :math:`j \le i`
    is meant to be used.

    ``forward(length)`` returns ``[heads, length, length]``.
    """

    def __init__(
        self,
        n_heads: int,
        *,
        hidden: int = 32,
        init_c: float = 0.1,
        init_threshold: float = 512.0,
        eps: float = 1e-6,
    ) -> None:
        super().__init__()
        self.n_heads = check_int("n_heads", n_heads, minimum=1)
        self.hidden = check_int("hidden", hidden, minimum=1)
        self.init_c = check_positive("init_c", init_c)
        self.init_threshold = check_positive("init_threshold", init_threshold)
        self.eps = check_real("eps", eps)
        self.mlp = nn.Sequential(nn.Linear(1, self.hidden), nn.ReLU(), nn.Linear(self.hidden, self.n_heads))
        self.c = nn.Parameter(torch.empty(()))
        self.threshold_scale = nn.Parameter(torch.empty(()))  # lambda: L = |lambda L_0|
        self.reset_parameters()

    @property
    def threshold(self) -> torch.Tensor:
        r""":math:`L = |\lambda L_0|` (a 0-d tensor with autograd)."""
        return torch.abs(self.threshold_scale * self.init_threshold)

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        r""":math:`c = 0.1`, :math:`\lambda = 1`; the MLP's weights and biases
        :math:`U(-1/\sqrt{\text{fan\_in}}, 1/\sqrt{\text{fan\_in}})` (PyTorch's default range),
        drawn from ``generator`` (a CPU generator) when given."""
        self.c.fill_(self.init_c)
        self.threshold_scale.fill_(1.0)
        for layer in (self.mlp[0], self.mlp[2]):
            bound = 1.0 / math.sqrt(layer.in_features)
            for p in (layer.weight, layer.bias):
                p.copy_((2.0 * torch.rand(p.shape, generator=generator) - 1.0) * bound)

    def normalized_distance(self, length: int) -> torch.Tensor:
        """:math:`u(i, j)`, ``[length, length]``, in the parameters' dtype and device."""
        return fire_normalized_distance(length, self.c, self.threshold, eps=self.eps)

    def forward(self, length: int) -> torch.Tensor:
        r"""The bias :math:`f_\theta(u_{ij})` of every head, ``(n_heads, length, length)``."""
        u = self.normalized_distance(length)  # (T, T)
        bias = self.mlp(u.unsqueeze(-1))  # f_theta(u), (T, T, nh)
        return bias.permute(2, 0, 1)  # (nh, T, T)

    def extra_repr(self) -> str:
        return (
            f"n_heads={self.n_heads}, hidden={self.hidden}, init_c={self.init_c}, init_threshold={self.init_threshold}"
        )
