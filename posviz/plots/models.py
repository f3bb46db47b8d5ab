r"""Slider figures for the chapter *Positions in today's models* (static page, no kernel).

Every number drawn comes from posviz: :func:`posviz.rope_frequencies` with a ``scaling`` mapping
(the rules of released models), :func:`posviz.rope_scaling.ntk_aware_base`,
:func:`posviz.rope_attention_factor` and :func:`posviz.apply_rope` (the rotations whose
mistakes the last figure measures).

Conventions: pair :math:`i` turns by :math:`\theta_i` radians per token and has wavelength
:math:`\lambda_i = 2\pi/\theta_i` tokens; a rule replaces :math:`\theta_i` by :math:`\theta'_i`,
and the figures show the ratio :math:`\theta'_i/\theta_i` (1: unchanged, :math:`1/s`: interpolated
as position interpolation does for a context :math:`s` times longer).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import torch

from .._validate import check_int, check_positive
from ..frequencies import rope_frequencies
from ..i18n import N_, tr, translatable
from ..rope import apply_rope
from ..rope_scaling import ntk_aware_base, rope_attention_factor
from ._numbers import significant
from ._sliders import slider_figure
from .models_tables import family_row, family_table, spectrum_counts, spectrum_spec, spectrum_table  # re-exported

__all__ = [
    "RULES",
    "family_row",
    "family_table",
    "rope_bug_figure",
    "rope_spectrum_figure",
    "rule_frequencies",
    "scaling_rules_figure",
    "spectrum_counts",
    "spectrum_spec",
    "spectrum_table",
]

RULES: tuple[str, ...] = ("pi", "ntk", "dynamic", "yarn", "llama3")
"""The rules the scaling figure draws, in order (LongRoPE's factors are searched per model, not a rule
of the wavelength: the chapter shows a released model's lists instead)."""

_RULE_NAMES = {
    "pi": N_("PI (linear)"),
    "ntk": N_("NTK-aware"),
    "dynamic": N_("dynamic NTK at L′ = sL"),
    "yarn": N_("YaRN"),
    "llama3": N_("llama3"),
}
_RULE_COLORS = {"pi": "#2ca02c", "ntk": "#17becf", "dynamic": "#9467bd", "yarn": "#d62728", "llama3": "#ff7f0e"}
_CONTEXT_COLOR = "#7f7f7f"


def rule_frequencies(rule: str, dim: int, base: float, factor: float, context: int) -> torch.Tensor:
    r"""The frequencies :math:`\theta'_i` of one named rule, float64, shape ``[dim // 2]``.

    ``rule`` is one of :data:`RULES`; each is a ``transformers``-style mapping passed to
    :func:`posviz.rope_frequencies` (``ntk``: the NTK-aware base :math:`b\,s^{d/(d-2)}` of
    :func:`~posviz.rope_scaling.ntk_aware_base`, which ``transformers`` has only in its dynamic
    form; ``dynamic`` is evaluated at the extended length :math:`\ell = sL`, where its
    effective factor is :math:`s\cdot\ell/L - (s - 1) = s^2 - s + 1`). YaRN uses its default
    :math:`\beta_{\text{fast}} = 32`, :math:`\beta_{\text{slow}} = 1`; llama3 uses Llama 3.1's
    ``low_freq_factor = 1``, ``high_freq_factor = 4``.
    """
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    context = check_int("context", context, minimum=1)
    factor = check_positive("factor", factor)
    f64 = {"device": "cpu", "dtype": torch.float64}
    if rule == "ntk":
        return rope_frequencies(dim, ntk_aware_base(base, factor, dim), **f64)
    scaling: dict[str, Any] = {
        "pi": {"rope_type": "linear", "factor": factor},
        "dynamic": {"rope_type": "dynamic", "factor": factor, "max_position_embeddings": context},
        "yarn": {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": context},
        "llama3": {
            "rope_type": "llama3",
            "factor": factor,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": context,
        },
    }[rule]
    seq_len = round(factor * context) if rule == "dynamic" else None
    return rope_frequencies(dim, base, scaling=scaling, seq_len=seq_len, **f64)


def _context_line(context: int, y: tuple[float, float], name: str, dash: str, legend: bool) -> go.Scatter:
    return go.Scatter(
        x=[context, context],
        y=list(y),
        mode="lines",
        line={"color": _CONTEXT_COLOR, "dash": dash, "width": 1.5},
        name=name,
        showlegend=legend,
        hoverinfo="skip",
    )


@translatable
def scaling_rules_figure(
    dim: int = 128,
    base: float = 500000.0,
    factors: Sequence[float] = (2.0, 4.0, 8.0, 16.0, 32.0),
    contexts: Sequence[int] = (4096, 8192),
    *,
    active: int = 2,
) -> go.Figure:
    r"""Each pair's frequency ratio :math:`\theta'_i/\theta_i` against its trained wavelength, per rule.

    The slider sets the factor :math:`s` (the context multiplier); the buttons pick the original
    context :math:`L`, drawn as a dashed line. The title gives YaRN's attention factor
    :math:`0.1\ln s + 1` for the same :math:`s` (:func:`posviz.rope_attention_factor`).
    """
    dim = check_int("dim", dim, minimum=4)
    if not factors or not contexts:
        raise ValueError("factors and contexts must not be empty")
    theta = rope_frequencies(dim, base, device="cpu", dtype=torch.float64)
    wavelength = (2 * math.pi / theta).numpy()
    pairs = np.arange(dim // 2)
    y_range = (1 / (max(factors) ** 2 * 1.4), 1.4)
    per_context = len(RULES) + 1

    def traces(s: float) -> list[go.Scatter]:
        out: list[go.Scatter] = []
        for c, context in enumerate(contexts):
            for rule in RULES:
                ratio = (rule_frequencies(rule, dim, base, s, context) / theta).numpy()
                out.append(
                    go.Scatter(
                        x=significant(wavelength),
                        y=significant(ratio),
                        customdata=pairs,
                        mode="lines+markers",
                        marker={"size": 4},
                        line={"color": _RULE_COLORS[rule], "width": 2, "dash": "dot" if rule == "dynamic" else "solid"},
                        name=tr(_RULE_NAMES[rule]),
                        legendgroup=rule,
                        showlegend=c == 0,
                        hovertemplate=tr(
                            "pair i = %{customdata}<br>λ<sub>i</sub> = %{x:.4g} tokens<br>θ′/θ = %{y:.4g}"
                        )
                        + f"<extra>{tr(_RULE_NAMES[rule])}</extra>",
                    )
                )
            out.append(_context_line(context, y_range, tr("original context L"), "dash", c == 0))
        return out

    steps = [
        (
            f"{s:g}",
            (lambda s=s: traces(s)),
            {
                "title.text": tr(
                    "Frequency ratio of each pair for a context s = {s:g} times longer"
                    "<br>(YaRN also multiplies cos and sin by {t:.3f})",
                    s=s,
                    t=rope_attention_factor({"rope_type": "yarn", "factor": s, "original_max_position_embeddings": 1}),
                )
            },
        )
        for s in factors
    ]
    views = [
        (tr("L = {context}", context=context), list(range(c * per_context, (c + 1) * per_context)))
        for c, context in enumerate(contexts)
    ]
    layout = {
        "height": 540,
        "margin": {"t": 120, "b": 60, "l": 70, "r": 20},
        "title": {"y": 0.97, "yanchor": "top"},
        "xaxis": {
            "title": {"text": tr("trained wavelength λ<sub>i</sub> = 2π/θ<sub>i</sub> (tokens, log scale)")},
            "type": "log",
        },
        "yaxis": {
            "title": {"text": tr("θ′<sub>i</sub> / θ<sub>i</sub> (log scale; 1 = unchanged)")},
            "type": "log",
            "range": [math.log10(y_range[0]), math.log10(y_range[1])],
        },
        "legend": {"x": 0.01, "y": 0.02, "xanchor": "left", "yanchor": "bottom", "bgcolor": "rgba(255,255,255,0.8)"},
    }
    return slider_figure(steps, slider_label=tr("factor s"), layout=layout, views=views, active=active)


def _spectrum_traces(spec: Mapping[str, Any]) -> list[go.Scatter]:
    dim, base = spec["dim"], spec["base"]
    theta = rope_frequencies(dim, base, device="cpu", dtype=torch.float64)
    scaled = rope_frequencies(
        dim, base, scaling=spec.get("scaling"), seq_len=spec["extended"], device="cpu", dtype=torch.float64
    )
    pairs = np.arange(dim // 2)
    lam, lam_scaled = (2 * math.pi / theta).numpy(), (2 * math.pi / scaled).numpy()
    return [
        go.Scatter(
            x=pairs,
            y=significant(lam),
            mode="markers",
            marker={"color": "#1f77b4", "size": 6},
            name=tr("trained wavelength λ<sub>i</sub>"),
            hovertemplate=tr("pair i = %{x}<br>λ<sub>i</sub> = %{y:.4g} tokens") + "<extra></extra>",
        ),
        go.Scatter(
            x=pairs,
            y=significant(lam_scaled),
            mode="markers",
            marker={"color": "#d62728", "size": 5, "symbol": "x"},
            name=tr("after the model's scaling"),
            hovertemplate=tr("pair i = %{x}<br>scaled λ′<sub>i</sub> = %{y:.4g} tokens") + "<extra></extra>",
        ),
        go.Scatter(
            x=[0, dim // 2 - 1],
            y=[spec["trained"]] * 2,
            mode="lines",
            line={"color": _CONTEXT_COLOR, "dash": "dash"},
            name=tr("original context L"),
            hoverinfo="skip",
        ),
        go.Scatter(
            x=[0, dim // 2 - 1],
            y=[spec["extended"]] * 2,
            mode="lines",
            line={"color": "#000000", "dash": "dot"},
            name=tr("extended context L<sub>max</sub>"),
            hoverinfo="skip",
        ),
    ]


def _scaled_top(spec: Mapping[str, Any]) -> float:
    f64 = {"device": "cpu", "dtype": torch.float64}
    scaled = rope_frequencies(spec["dim"], spec["base"], scaling=spec.get("scaling"), seq_len=spec["extended"], **f64)
    return float(2 * math.pi / scaled.min())


@translatable
def rope_spectrum_figure(specs: Sequence[Mapping[str, Any]], *, active: int = 0) -> go.Figure:
    r"""A model's spectrum: every rotated pair's wavelength against the trained and extended context.

    ``specs``: one mapping per model, with ``name``, ``dim`` (rotated dimensions), ``base``,
    ``scaling`` (a ``transformers``-style mapping or ``None``), ``trained`` and ``extended``
    (context lengths). A pair below the trained context completed at least one turn in training;
    a pair above the extended context never completes one, whatever the input.
    """
    if not specs:
        raise ValueError("specs must not be empty")
    steps = []
    for spec in specs:
        lam = 2 * math.pi / rope_frequencies(spec["dim"], spec["base"], device="cpu", dtype=torch.float64)
        turned = int((lam <= spec["trained"]).sum())
        steps.append(
            (
                str(spec["name"]),
                (lambda spec=spec: _spectrum_traces(spec)),
                {
                    "title.text": tr(
                        "{name}: {turned} of {pairs} pairs turn at least once"
                        " within the original context L = {trained}",
                        name=spec["name"],
                        turned=turned,
                        pairs=spec["dim"] // 2,
                        trained=spec["trained"],
                    ),
                    "xaxis.range": [-1, spec["dim"] // 2],
                    "yaxis.range": [0.5, math.log10(max(_scaled_top(spec), spec["extended"]) * 3)],
                },
            )
        )
    layout = {
        "height": 500,
        "margin": {"t": 80, "b": 60, "l": 70, "r": 20},
        "xaxis": {"title": {"text": tr("pair index i (0 = fastest)")}},
        "yaxis": {"title": {"text": tr("wavelength (tokens, log scale)")}, "type": "log"},
        "legend": {"x": 0.01, "y": 0.99, "xanchor": "left", "yanchor": "top", "bgcolor": "rgba(255,255,255,0.8)"},
    }
    return slider_figure(steps, slider_label=tr("model"), layout=layout, active=active)


BUGS: tuple[str, ...] = ("llama3-dropped", "rotary-share", "layout", "offset", "prefill-only")
_BUG_NAMES = {
    "llama3-dropped": N_("llama3 scaling dropped"),
    "rotary-share": N_("every coordinate rotated instead of 25%"),
    "layout": N_("interleaved pairs for half-layout weights"),
    "offset": N_("positions off by 2 (a forgotten offset)"),
    "prefill-only": N_("scaling at prefill, not at decode"),
}
_BUG_BUTTONS = {
    "llama3-dropped": N_("llama3 dropped"),
    "rotary-share": N_("rotary share"),
    "layout": N_("pair layout"),
    "offset": N_("offset"),
    "prefill-only": N_("prefill only"),
}
_BUG_COLORS = {
    "llama3-dropped": "#ff7f0e",
    "rotary-share": "#9467bd",
    "layout": "#1f77b4",
    "offset": "#8c564b",
    "prefill-only": "#d62728",
}


def bug_similarity(
    bug: str,
    positions: torch.Tensor,
    *,
    dim: int = 128,
    base: float = 500000.0,
    llama3: Mapping[str, Any] | None = None,
    prefill: int = 8192,
) -> torch.Tensor:
    r"""How much a mistaken rotation keeps of each key, at each position: the mean cosine of the
    right and the wrong key for a key of random direction.

    .. math:: c(m) = \frac{\mathbb{E}\,\langle R_m k,\ \tilde R_m k\rangle}{\mathbb{E}\,\lVert k\rVert^2}
        = \frac{\operatorname{tr}(R_m^\top \tilde R_m)}{d}

    for any isotropic key :math:`k` (e.g. Gaussian), computed exactly by rotating the :math:`d`
    basis vectors, with the correct rotation :math:`R_m` and the mistaken one :math:`\tilde R_m`
    of ``bug`` (:data:`BUGS`):
    ``llama3-dropped`` (Llama 3.1's frequencies replaced by the plain ladder), ``rotary-share``
    (a GPT-NeoX head that rotates its first 25% of coordinates rotated whole), ``layout`` (half
    pairs read as interleaved), ``offset`` (positions :math:`m - 2` instead of :math:`m`) and
    ``prefill-only`` (the llama3 frequencies used for positions below ``prefill``, the plain
    ladder after). 1 means the model sees what it was trained to see.
    """
    if bug not in BUGS:
        raise ValueError(f"bug must be one of {BUGS}, got {bug!r}")
    scaling = dict(
        llama3
        or {
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        }
    )
    k = torch.eye(dim, dtype=torch.float64)[:, None, :].expand(dim, len(positions), dim)  # the basis e_1..e_d
    pos = positions.to(torch.float64)
    plain = rope_frequencies(dim, base, device="cpu", dtype=torch.float64)
    scaled = rope_frequencies(dim, base, scaling=scaling, device="cpu", dtype=torch.float64)

    def rot(x: torch.Tensor, p: torch.Tensor, **kw: Any) -> torch.Tensor:
        return apply_rope(x, p, layout=kw.pop("layout", "half"), **kw)

    if bug == "llama3-dropped":
        right, wrong = rot(k, pos, frequencies=scaled), rot(k, pos, frequencies=plain)
    elif bug == "rotary-share":
        share = dim // 4
        short = rope_frequencies(share, base, device="cpu", dtype=torch.float64)  # the ladder of the rotated slice
        right = rot(k, pos, rotary_dim=share, frequencies=short)
        wrong = rot(k, pos, frequencies=plain)
    elif bug == "layout":
        right, wrong = rot(k, pos, frequencies=plain), rot(k, pos, frequencies=plain, layout="interleaved")
    elif bug == "offset":
        right, wrong = rot(k, pos, frequencies=plain), rot(k, pos - 2, frequencies=plain)
    else:
        right = rot(k, pos, frequencies=scaled)
        decode = pos >= prefill
        wrong = torch.where(decode[None, :, None], rot(k, pos, frequencies=plain), right)
    return (right * wrong).sum(-1).mean(0)  # tr(R^T R~) / d: each basis key has norm 1


@translatable
def rope_bug_figure(
    *,
    dim: int = 128,
    base: float = 500000.0,
    max_position: int = 131072,
    prefill: int = 8192,
    points: int = 161,
) -> go.Figure:
    r"""The bugs people hit, computed: :func:`bug_similarity` against the position, one trace per bug.

    The slider shows all the bugs, then one at a time. Llama 3.1's head (``dim`` 128, base 500 000,
    ``llama3`` factor 8 from 8192 tokens) is the default model.
    """
    max_position = check_int("max_position", max_position, minimum=16)
    positions = torch.unique(torch.logspace(0, math.log10(max_position), points, dtype=torch.float64).round())
    x = positions.numpy()
    curves = {
        bug: significant(bug_similarity(bug, positions, dim=dim, base=base, prefill=prefill).numpy()) for bug in BUGS
    }
    hover = tr("position m = %{x:.0f}<br>mean cosine = %{y:.3f}") + "<extra></extra>"
    legend = tr("prefill length / original context ({prefill})", prefill=prefill)

    def traces(shown: tuple[str, ...]) -> list[go.Scatter]:
        out = [
            go.Scatter(
                x=x if bug in shown else [],
                y=curves[bug] if bug in shown else [],
                mode="lines",
                line={"color": _BUG_COLORS[bug], "width": 2},
                name=tr(_BUG_NAMES[bug]),
                showlegend=bug in shown,
                hovertemplate=hover,
            )
            for bug in BUGS
        ]
        return [*out, _context_line(prefill, (-1.05, 1.05), legend, "dash", True)]

    steps = [(tr("all"), (lambda: traces(BUGS)))]
    steps += [(tr(_BUG_BUTTONS[bug]), (lambda bug=bug: traces((bug,)))) for bug in BUGS]
    layout = {
        "height": 560,
        "margin": {"t": 80, "b": 60, "l": 70, "r": 20},
        "title": {"text": tr("How much of each key a mistaken rotation keeps (1 = what training saw)")},
        # every decade labelled: on a phone Plotly's own ticks label every other one (1, 100, 10k),
        # and the axis, which runs to max_position, read as ending near 30k (issue 22)
        "xaxis": {"title": {"text": tr("position m (tokens, log scale)")}, "type": "log", "dtick": 1},
        "yaxis": {"title": {"text": tr("mean cosine of right and wrong key")}, "range": [-1.05, 1.05]},
        "legend": {"x": 0.01, "y": 0.02, "xanchor": "left", "yanchor": "bottom", "bgcolor": "rgba(255,255,255,0.8)"},
    }
    return slider_figure(steps, slider_label=tr("bug"), layout=layout)
