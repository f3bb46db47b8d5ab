r"""The learned-table chapter's toy task and tiny model.

* the task, :func:`sliding_window_max`: at every position output the largest of the last
  ``window + 1`` tokens. Which keys are "the last few" is a question about position only;
* the model, :class:`OneLayerModel`: token embedding + learned position table, one causal
  attention layer (:func:`posviz.attention`) and a linear read-out;
* :func:`positional_attention`: the attention the table alone asks for.

Book chapter: *Learned position tables*.
"""

from __future__ import annotations

import torch
from torch import nn

from .._validate import check_int
from ..absolute import LearnedPositionalEmbedding
from ..dot_product import attention, attention_weights

__all__ = ["OneLayerModel", "positional_attention", "sliding_window_max"]


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
        x = self.token(tokens) + self.position.rows(tokens.shape[-1])  # x_m = E[t_m] + P[m], [B, L, d]
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
        p = model.position.rows(length)  # [L, d]
        weights = attention_weights(model.w_q(p), model.w_k(p), causal=True)  # [L, L]
    return weights
