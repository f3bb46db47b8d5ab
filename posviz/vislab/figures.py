"""The miniature's figure and tables, in the reader's language.

:func:`accuracy_figure` is a :func:`posviz.i18n.translatable` Plotly figure (its text through
:func:`posviz.i18n.tr`, its buttons work in a static page); :func:`accuracy_table` and
:func:`paired_table` are the lab's :class:`posviz.lab.Table` (Markdown that remembers its messages,
so the Chinese edition translates it). Catalog: ``posviz/locale/zh_CN/LC_MESSAGES/figures/vislab.po``.
"""

from __future__ import annotations

import plotly.graph_objects as go

from ..i18n import N_, tr, translatable
from ..lab.tables import _rows, _table
from .results import validate_results

__all__ = ["METHOD_COLORS", "accuracy_figure", "accuracy_table", "format_tables", "method_label", "paired_table"]

METHOD_COLORS: dict[str, str] = {
    "none": "#7f7f7f",
    "learned": "#8c564b",
    "sincos-2d": "#1f77b4",
    "rope-axial": "#2ca02c",
    "rope-mixed": "#17becf",
    "swin-bias": "#ff7f0e",
}
_LABELS = {
    "none": N_("none (no positions)"),
    "learned": N_("learned table, resized"),
    "sincos-2d": N_("2-D sin-cos"),
    "rope-axial": N_("RoPE-Axial"),
    "rope-mixed": N_("RoPE-Mixed"),
    "swin-bias": N_("Swin relative bias"),
}


def method_label(name: str) -> str:
    """A method's name as the figure's legend shows it, in the current language."""
    return tr(_LABELS[name]) if name in _LABELS else name


def _grid(g: int) -> str:
    return f"{g}×{g}"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}"


@translatable
def accuracy_figure(results: dict) -> go.Figure:
    """Held-out accuracy against the grid size, one line per method: the mean over seeds with the
    seeds' min–max as error bars; a dotted line at the training grid and one at chance (25%).
    Buttons show every method or one at a time."""
    validate_results(results)
    grids, train = results["eval_grids"], results["train_grid"]
    names = results["method_order"]
    fig = go.Figure()
    for name in names:
        agg = results["methods"][name]["aggregate"]["accuracy"]
        mean = [100 * v for v in agg["mean"]]
        hover = [
            tr(
                "{label}<br>grid {grid}: {mean}% (min {lo}%, max {hi}%, {n} seeds)",
                label=method_label(name), grid=_grid(g), mean=_pct(agg["mean"][i]), lo=_pct(agg["min"][i]),
                hi=_pct(agg["max"][i]), n=agg["n"][i],
            )
            for i, g in enumerate(grids)
        ]
        fig.add_trace(
            go.Scatter(
                x=grids, y=mean, mode="lines+markers", name=method_label(name),
                line={"color": METHOD_COLORS.get(name, "#333333")},
                error_y={"type": "data", "symmetric": False,
                         "array": [100 * (hi - m) for hi, m in zip(agg["max"], agg["mean"])],
                         "arrayminus": [100 * (m - lo) for lo, m in zip(agg["min"], agg["mean"])]},
                hovertext=hover, hoverinfo="text",
            )
        )
    fig.add_vline(x=train, line_dash="dot", line_color="#888888")
    fig.add_hline(y=25, line_dash="dash", line_color="#bbbbbb")
    n = len(names)
    buttons = [{"label": tr("all methods"), "method": "restyle", "args": [{"visible": [True] * n}]}]
    buttons += [
        {"label": method_label(m), "method": "restyle", "args": [{"visible": [j == i for j in range(n)]}]}
        for i, m in enumerate(names)
    ]
    cfg = results["config"]
    fig.update_layout(
        title={"text": tr(
            "Trained at {grid}, evaluated larger (accuracy, mean over {seeds} seeds, bars min–max)",
            grid=_grid(train), seeds=len(cfg["seeds"]),
        ), "y": 0.98, "yanchor": "top"},  # at the top, clear of the menu above the plot (a phone wraps it)
        xaxis={"title": {"text": tr("grid size (patches per side; trained at {grid})", grid=_grid(train))},
               "tickvals": grids, "ticktext": [_grid(g) for g in grids]},
        yaxis={"title": {"text": tr("accuracy (%; chance 25%)")}, "range": [0, 102]},
        legend={"orientation": "h", "y": -0.25},
        margin={"l": 60, "r": 20, "t": 110, "b": 40},
        updatemenus=[{"type": "dropdown", "buttons": buttons, "x": 1.0, "xanchor": "right", "y": 1.0,
                      "yanchor": "bottom", "showactive": True}],
        template="plotly_white",
    )
    return fig


@_table
def accuracy_table(results: dict) -> str:
    """Markdown table, method x grid: held-out accuracy in percent, mean ± sample std over seeds [min–max]."""
    validate_results(results)
    rows = []
    for name in results["method_order"]:
        agg = results["methods"][name]["aggregate"]["accuracy"]
        cells = [name]
        for i in range(len(results["eval_grids"])):
            std = agg["std"][i]
            cells.append(
                _pct(agg["mean"][i]) + (f" ± {100 * std:.1f}" if std is not None else "")
                + f" [{_pct(agg['min'][i])}–{_pct(agg['max'][i])}]"
            )
        rows.append(cells)
    return _rows([tr("method"), *[tr("accuracy % at {grid}", grid=_grid(g)) for g in results["eval_grids"]]], rows)


@_table
def paired_table(results: dict) -> str:
    """Markdown table, method x grid: accuracy minus the baseline's, same seed, in percentage points
    (mean ± sample std of the per-seed differences); "(inside spread)" marks a difference inside the
    seed spread (:func:`posviz.lab.inside_spread`), "(one seed: no spread)" one measured with one seed."""
    validate_results(results)
    paired = results.get("paired")
    if paired is None:
        raise ValueError("these results have no paired differences (the baseline method was not run)")
    rows = []
    for name in results["method_order"]:
        if name == paired["baseline"]:
            continue
        p = paired["methods"][name]
        cells = [name]
        for i in range(len(results["eval_grids"])):
            cell = f"{100 * p['mean'][i]:+.1f}" + (f" ± {100 * p['std'][i]:.1f}" if p["std"][i] is not None else "")
            if p["inside_spread"][i] is None:
                cell = tr("{value} (one seed: no spread)", value=cell)
            elif p["inside_spread"][i]:
                cell = tr("{value} (inside spread)", value=cell)
            cells.append(cell)
        rows.append(cells)
    head = [tr("method − {baseline}", baseline=paired["baseline"])]
    head += [tr("points at {grid}", grid=_grid(g)) for g in results["eval_grids"]]
    return _rows(head, rows)


def format_tables(results: dict) -> str:
    """What the CLI prints: the accuracy table and the paired differences, each with a line of explanation."""
    parts = [tr("Held-out accuracy in % (mean ± std over seeds [min–max]); chance is 25%"), accuracy_table(results)]
    if results.get("paired") is not None:
        parts += [
            tr(
                "Paired by seed: accuracy minus {baseline}'s in percentage points, mean ± std of the per-seed "
                "differences; '(inside spread)': not all seeds agree in sign, or |mean| <= std",
                baseline=results["paired"]["baseline"],
            ),
            paired_table(results),
        ]
    return "\n\n".join(parts)
