"""The cost figure: training throughput and memory per method, inference cost against length."""

from __future__ import annotations

from typing import Literal

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..i18n import tr, translatable
from ._style import _color, _errors, _hover, _label, _length_axis, _subtitle, _threads
from .results import validate_results

__all__ = ["cost_figure"]


@translatable
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
    suffix, unit = ("_cpu_s", tr("tokens / CPU s")) if clock == "cpu" else ("_s", tr("tokens / s"))
    fig = make_subplots(
        rows=2,
        cols=2,
        horizontal_spacing=0.12,
        vertical_spacing=0.2,
        subplot_titles=(
            tr("training throughput (median step)"),
            tr("peak training memory"),
            tr("inference throughput vs length"),
            tr("peak inference memory (one batch)"),
        ),
    )
    tps = [results["methods"][n]["aggregate"]["train_tokens_per" + suffix] for n in trained]
    fig.add_trace(
        go.Bar(
            x=[_label(n) for n in trained],
            y=[t["mean"] for t in tps],
            marker_color=[_color(n) for n in trained],
            error_y={
                "type": "data",
                "array": [t["max"] - t["mean"] for t in tps],
                "arrayminus": [t["mean"] - t["min"] for t in tps],
            },
            showlegend=False,
            hovertemplate="%{x}: %{y:.0f} " + unit + tr("<extra>mean over seeds; bars min–max</extra>"),
        ),
        row=1,
        col=1,
    )
    mib = 2.0**20
    mems = [results["methods"][n]["memory"]["train"] for n in trained]
    persistent = [(mm["param_bytes"] + mm["optimizer_state_bytes"]) / mib if mm else None for mm in mems]
    step = [mm["step_peak_bytes"] / mib if mm else None for mm in mems]
    fig.add_trace(
        go.Bar(
            x=[_label(n) for n in trained],
            y=persistent,
            name=tr("parameters + AdamW state"),
            marker_color="#bbbbbb",
            legendgroup="memory",
            legendgrouptitle={"text": tr("training memory")},
            hovertemplate="%{x}: %{y:.2f} MiB<extra>parameters + AdamW state</extra>",
        ),
        row=1,
        col=2,
    )
    fig.add_trace(
        go.Bar(
            x=[_label(n) for n in trained],
            y=step,
            name=tr("one step (activations, gradients)"),
            marker_color=[_color(n) for n in trained],
            legendgroup="memory",
            hovertemplate="%{x}: %{y:.2f} MiB" + tr("<extra>peak extra during one step</extra>"),
        ),
        row=1,
        col=2,
    )
    for name in names:
        m = results["methods"][name]
        agg = m["aggregate"]["inference_tokens_per" + suffix]
        up, down = _errors(agg)
        dash = "dash" if m["trained_as"] != name else "solid"
        fig.add_trace(
            go.Scatter(
                x=lengths,
                y=agg["mean"],
                mode="lines+markers",
                name=_label(name),
                legendgroup=name,
                legendgrouptitle={"text": tr("method")} if name == names[0] else None,
                line={"color": _color(name), "dash": dash},
                error_y={"type": "data", "array": up, "arrayminus": down, "thickness": 1},
                hovertext=_hover(name, lengths, agg, m["seeds"][0]["cannot_run"], unit),
                hoverinfo="text",
            ),
            row=2,
            col=1,
        )
        inf = [None if b is None else b / mib for b in m["memory"]["inference_peak_bytes"]]
        fig.add_trace(
            go.Scatter(
                x=lengths,
                y=inf,
                mode="lines+markers",
                name=_label(name),
                legendgroup=name,
                showlegend=False,
                line={"color": _color(name), "dash": dash},
                hovertemplate=tr("{label}<br>L = %{x}: %{y:.1f} MiB<extra></extra>", label=_label(name)),
            ),
            row=2,
            col=2,
        )
    tokens = results["config"].get("eval_tokens_per_batch")
    fig.update_yaxes(title_text=unit, row=1, col=1)
    fig.update_yaxes(title_text="MiB", row=1, col=2)
    fig.update_yaxes(title_text=tr("{unit} (no grad)", unit=unit), row=2, col=1)
    fig.update_yaxes(title_text="MiB", type="log", dtick=1, row=2, col=2)
    for col in (1, 2):
        axis = _length_axis(lengths, results["train_len"])
        axis["title"] = {"text": tr("evaluation length L")}
        fig.update_xaxes(axis, row=2, col=col)
    fig.update_layout(
        title={
            "text": tr(
                "Cost per method on {device} ({threads})<br><sup>{subtitle}; inference batches "
                "of {tokens} tokens</sup>",
                device={"cpu": "CPU", "cuda": "GPU"}.get(device, device),
                threads=_threads(results),
                subtitle=_subtitle(results),
                tokens=tokens,
            )
        },
        barmode="stack",
        template="plotly_white",
        height=820,
        margin={"t": 110, "b": 40},
        legend={
            "groupclick": "togglegroup",
            "orientation": "h",
            "x": 0,
            "xanchor": "left",
            "y": -0.12,
            "yanchor": "top",
        },
    )
    return fig
