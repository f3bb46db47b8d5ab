"""Plotly figures from a results dictionary (the JSON written by ``python -m posviz.lab``).

Every control is a Plotly ``updatemenus`` button over precomputed states, so the figures work in
a static page with no kernel. The book builds its figures from the committed JSON with these
functions; the CLI also writes them as HTML next to the JSON.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Literal

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .results import validate_results

__all__ = ["METHOD_COLORS", "cost_figure", "perplexity_figure", "training_curve_figure", "write_figures"]

METHOD_COLORS: dict[str, str] = {
    "none": "#7f7f7f",
    "sinusoidal": "#1f77b4",
    "learned": "#8c564b",
    "shaw": "#9467bd",
    "t5": "#ff7f0e",
    "rope": "#2ca02c",
    "rope-pi": "#98df8a",
    "rope-ntk": "#17becf",
    "alibi": "#d62728",
}
_LABELS = {
    "none": "NoPE (none)",
    "sinusoidal": "sinusoidal",
    "learned": "learned",
    "shaw": "Shaw (relative k/v)",
    "t5": "T5 bias",
    "rope": "RoPE",
    "rope-pi": "RoPE + position interpolation",
    "rope-ntk": "RoPE + NTK-aware base",
    "alibi": "ALiBi",
}
_PAPER_SET = ("sinusoidal", "rope", "t5", "alibi")  # the ALiBi paper's Figure 1


def _label(name: str) -> str:
    return _LABELS.get(name, name)


def _color(name: str) -> str:
    return METHOD_COLORS.get(name, "#333333")


def _subtitle(results: dict) -> str:
    cfg = results["config"]
    model = cfg["model"]
    seeds = len(cfg["seeds"])
    return (f"trained at {results['train_len']} bytes; d={model['n_embd']}, {model['n_layer']} layers, "
            f"{model['n_head']} heads, {cfg['train']['steps']} steps; {seeds} seed{'s' if seeds > 1 else ''}")


def _threads(results: dict) -> str:
    n = results["machine"].get("torch_threads")
    return f"{n} thread{'' if n == 1 else 's'}"


def _errors(agg: dict) -> tuple[list, list]:
    up = [None if m is None else hi - m for m, hi in zip(agg["mean"], agg["max"])]
    down = [None if m is None else m - lo for m, lo in zip(agg["mean"], agg["min"])]
    return up, down


def _hover(name: str, lengths: list[int], agg: dict, reasons: list, unit: str) -> list[str]:
    out = []
    for i, length in enumerate(lengths):
        if agg["mean"][i] is None:
            out.append(f"{_label(name)}<br>L = {length}: cannot run<br>{reasons[i] or ''}")
            continue
        std = agg["std"][i]
        out.append(
            f"{_label(name)}<br>L = {length}<br>{unit} {agg['mean'][i]:.4g}"
            + (f" ± {std:.2g} (std)" if std is not None else "")
            + f"<br>min {agg['min'][i]:.4g}, max {agg['max'][i]:.4g} over {agg['n'][i]} seeds"
        )
    return out


def _length_axis(lengths: list[int], train_len: int) -> dict:
    return {
        "type": "log",
        "tickvals": lengths,
        "ticktext": [f"{n}<br>({n // train_len}×)" if n % train_len == 0 else str(n) for n in lengths],
        "title": {"text": "evaluation length L (bytes per window; multiple of the training length)"},
    }


def perplexity_figure(results: dict, *, methods: list[str] | None = None, log_y: bool = True) -> go.Figure:
    """Held-out perplexity vs evaluation length, one line per method (mean over seeds, min–max bars).

    Buttons switch the y axis between log and linear and choose which methods are shown (all,
    trained only, the ALiBi paper's Figure 1 set, or one at a time). A dotted line marks the
    training length; ``learned`` has no points past its table ("cannot run", in the hover text
    of the JSON, never a number).
    """
    validate_results(results)
    lengths = results["eval_lengths"]
    train_len = results["train_len"]
    names = [m for m in (methods or results["method_order"]) if m in results["methods"]]
    fig = go.Figure()
    for name in names:
        m = results["methods"][name]
        agg = m["aggregate"]["perplexity"]
        up, down = _errors(agg)
        reasons = m["seeds"][0]["cannot_run"]
        label = _label(name)
        if any(r is not None for r in reasons):
            label += f" (no positions past {m.get('max_length') or train_len})"
        fig.add_trace(go.Scatter(
            x=lengths, y=agg["mean"], name=label, mode="lines+markers",
            line={"color": _color(name), "dash": "dash" if m["trained_as"] != name else "solid"},
            error_y={"type": "data", "array": up, "arrayminus": down, "visible": True, "thickness": 1},
            hovertext=_hover(name, lengths, agg, reasons, "perplexity"), hoverinfo="text",
        ))
    trained = [results["methods"][n]["trained_as"] == n for n in names]

    def visible(mask: list[bool]) -> dict:
        return {"visible": [True if v else "legendonly" for v in mask]}

    method_buttons = [
        {"label": "all methods", "method": "restyle", "args": [visible([True] * len(names))]},
        {"label": "trained methods only", "method": "restyle", "args": [visible(trained)]},
        {"label": "ALiBi paper's Fig. 1 set", "method": "restyle", "args": [visible([n in _PAPER_SET for n in names])]},
    ] + [
        {"label": f"only {_label(n)}", "method": "restyle", "args": [visible([k == n for k in names])]} for n in names
    ]
    fig.update_layout(
        title={"text": f"Train short, test long: held-out perplexity<br><sup>{_subtitle(results)}</sup>"},
        xaxis=_length_axis(lengths, train_len),
        yaxis={"type": "log" if log_y else "linear",
               "title": {"text": "perplexity (exp of mean nats per byte; lower is better)"}},
        legend={"title": {"text": "method (bars: min–max over seeds)"}, "x": 1.02, "xanchor": "left",
                "y": 0.78, "yanchor": "top"},
        hovermode="closest",
        template="plotly_white",
        height=560,
        margin={"t": 90, "r": 20},
        shapes=[{"type": "line", "xref": "x", "yref": "paper", "x0": train_len, "x1": train_len, "y0": 0, "y1": 1,
                 "line": {"dash": "dot", "color": "#555", "width": 1}}],
        # annotations on a log axis take log10 of the value (shapes take the value itself)
        annotations=[{"x": math.log10(train_len), "xref": "x", "y": 1, "yref": "paper", "text": "training length",
                      "showarrow": False, "xanchor": "left", "yanchor": "bottom", "font": {"size": 11}}],
        updatemenus=[
            {"type": "buttons", "direction": "right", "x": 1.02, "y": 1.0, "xanchor": "left", "yanchor": "top",
             "active": 0 if log_y else 1, "showactive": True,
             "buttons": [{"label": "log y", "method": "relayout", "args": [{"yaxis.type": "log"}]},
                         {"label": "linear y", "method": "relayout", "args": [{"yaxis.type": "linear"}]}]},
            {"type": "dropdown", "x": 1.02, "y": 0.9, "xanchor": "left", "yanchor": "top", "active": 0,
             "buttons": method_buttons},
        ],
    )
    return fig


def cost_figure(
    results: dict, *, methods: list[str] | None = None, clock: Literal["auto", "cpu", "wall"] = "auto"
) -> go.Figure:
    """Costs, 2x2: training throughput and peak training memory per trained method (bars), and
    inference throughput and peak inference memory vs evaluation length (lines).

    ``clock="cpu"`` plots tokens per CPU second (``time.process_time``: robust on a shared
    machine), ``"wall"`` tokens per wall-clock second; ``"auto"`` picks CPU time for a CPU run
    and wall time for a CUDA run (CPU time misses the GPU's work).
    """
    validate_results(results)
    lengths = results["eval_lengths"]
    names = [m for m in (methods or results["method_order"]) if m in results["methods"]]
    trained = [n for n in names if results["methods"][n]["trained_as"] == n]
    device = results["machine"].get("device", "?")
    if clock == "auto":
        clock = "cpu" if str(device).startswith("cpu") else "wall"
    if clock not in ("cpu", "wall"):
        raise ValueError(f"clock must be 'auto', 'cpu' or 'wall', got {clock!r}")
    suffix, unit = ("_cpu_s", "tokens / CPU s") if clock == "cpu" else ("_s", "tokens / s")
    fig = make_subplots(rows=2, cols=2, horizontal_spacing=0.12, vertical_spacing=0.2, subplot_titles=(
        f"training throughput (median step, {'CPU' if clock == 'cpu' else 'wall'} time)",
        "peak training memory (tensor bytes)",
        f"inference throughput vs length ({'CPU' if clock == 'cpu' else 'wall'} time)",
        "peak inference memory vs length (one batch)"))
    tps = [results["methods"][n]["aggregate"]["train_tokens_per" + suffix] for n in trained]
    fig.add_trace(go.Bar(
        x=[_label(n) for n in trained], y=[t["mean"] for t in tps], marker_color=[_color(n) for n in trained],
        error_y={"type": "data", "array": [t["max"] - t["mean"] for t in tps],
                 "arrayminus": [t["mean"] - t["min"] for t in tps]},
        showlegend=False, hovertemplate="%{x}: %{y:.0f} " + unit + "<extra>mean over seeds; bars min–max</extra>",
    ), row=1, col=1)
    mib = 2.0**20
    mems = [results["methods"][n]["memory"]["train"] for n in trained]
    persistent = [(mm["param_bytes"] + mm["optimizer_state_bytes"]) / mib if mm else None for mm in mems]
    step = [mm["step_peak_bytes"] / mib if mm else None for mm in mems]
    fig.add_trace(go.Bar(x=[_label(n) for n in trained], y=persistent, name="parameters + AdamW state",
                         marker_color="#bbbbbb", legendgroup="memory", legendgrouptitle={"text": "training memory"},
                         hovertemplate="%{x}: %{y:.2f} MiB<extra>parameters + AdamW state</extra>"), row=1, col=2)
    fig.add_trace(go.Bar(x=[_label(n) for n in trained], y=step, name="one step (activations, gradients)",
                         marker_color=[_color(n) for n in trained], legendgroup="memory",
                         hovertemplate="%{x}: %{y:.2f} MiB<extra>peak extra during one step</extra>"), row=1, col=2)
    for name in names:
        m = results["methods"][name]
        agg = m["aggregate"]["inference_tokens_per" + suffix]
        up, down = _errors(agg)
        dash = "dash" if m["trained_as"] != name else "solid"
        fig.add_trace(go.Scatter(
            x=lengths, y=agg["mean"], mode="lines+markers", name=_label(name), legendgroup=name,
            legendgrouptitle={"text": "method"} if name == names[0] else None,
            line={"color": _color(name), "dash": dash},
            error_y={"type": "data", "array": up, "arrayminus": down, "thickness": 1},
            hovertext=_hover(name, lengths, agg, m["seeds"][0]["cannot_run"], unit), hoverinfo="text",
        ), row=2, col=1)
        inf = [None if b is None else b / mib for b in m["memory"]["inference_peak_bytes"]]
        fig.add_trace(go.Scatter(
            x=lengths, y=inf, mode="lines+markers", name=_label(name), legendgroup=name, showlegend=False,
            line={"color": _color(name), "dash": dash},
            hovertemplate=f"{_label(name)}<br>L = %{{x}}: %{{y:.1f}} MiB<extra></extra>",
        ), row=2, col=2)
    tokens = results["config"].get("eval_tokens_per_batch")
    fig.update_yaxes(title_text=unit, row=1, col=1)
    fig.update_yaxes(title_text="MiB", row=1, col=2)
    fig.update_yaxes(title_text=f"{unit} (no grad)", row=2, col=1)
    fig.update_yaxes(title_text="MiB", type="log", dtick=1, row=2, col=2)
    for col in (1, 2):
        axis = _length_axis(lengths, results["train_len"])
        axis["title"] = {"text": "evaluation length L"}
        fig.update_xaxes(axis, row=2, col=col)
    fig.update_layout(
        title={"text": f"Cost per method on {device} ({_threads(results)})<br>"
                       f"<sup>{_subtitle(results)}; inference batches of {tokens} tokens</sup>"},
        barmode="stack", template="plotly_white", height=760, margin={"t": 110},
        legend={"groupclick": "togglegroup"},
    )
    return fig


def training_curve_figure(results: dict, *, methods: list[str] | None = None) -> go.Figure:
    """Training loss (nats/byte, mean over seeds) vs step, one line per trained method."""
    validate_results(results)
    names = [m for m in (methods or results["method_order"]) if m in results["methods"]]
    fig = go.Figure()
    for name in names:
        m = results["methods"][name]
        if m["trained_as"] != name:
            continue
        curves = [s["loss_curve"] for s in m["seeds"]]
        steps = curves[0]["step"]
        mean = [sum(c["loss"][i] for c in curves) / len(curves) for i in range(len(steps))]
        fig.add_trace(go.Scatter(x=steps, y=mean, mode="lines", name=_label(name), line={"color": _color(name)}))
    fig.update_layout(
        title={"text": f"Training loss<br><sup>{_subtitle(results)}</sup>"},
        xaxis={"title": {"text": "training step"}},
        yaxis={"title": {"text": "training loss (nats per byte)"}},
        template="plotly_white", margin={"t": 90},
    )
    return fig


def write_figures(results: dict, out_dir: str | os.PathLike, *, include_plotlyjs: str | bool = "cdn") -> list[Path]:
    """Write ``perplexity.html``, ``cost.html`` and ``training.html`` into ``out_dir``.

    ``include_plotlyjs="cdn"`` keeps each file small (the page loads plotly.js from the CDN);
    pass ``True`` for self-contained offline files (about 4.7 MB each).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for stem, fig in (("perplexity", perplexity_figure(results)), ("cost", cost_figure(results)),
                      ("training", training_curve_figure(results))):
        path = out / f"{stem}.html"
        fig.write_html(path, include_plotlyjs=include_plotlyjs, full_html=True)
        paths.append(path)
    return paths
