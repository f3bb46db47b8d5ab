"""What the lab's figures share: method colours and labels, subtitles, hover text, axes and bars."""

from __future__ import annotations

import math
import re

import plotly.graph_objects as go

from ..i18n import N_, tr
from .tables import spread_words

__all__ = ["METHOD_COLORS", "method_label"]

METHOD_COLORS: dict[str, str] = {
    "none": "#7f7f7f",
    "sinusoidal": "#1f77b4",
    "learned": "#8c564b",
    "shaw": "#9467bd",
    "t5": "#ff7f0e",
    "rope": "#2ca02c",
    "rope-pi": "#98df8a",
    "rope-ntk": "#17becf",
    "rope-yarn": "#bcbd22",
    "rope-yarn-no-temp": "#dbdb8d",
    "rope-dynamic": "#9edae5",
    "rope-llama3": "#e377c2",
    "alibi": "#d62728",
    "learned-random": "#c49c94",
    "rope-random": "#006d2c",
    "fire": "#3949ab",
    "kerple-log": "#1a1a1a",
    "cope": "#ce6dbd",
    "xpos": "#17a589",
}
_LABELS = {
    "none": N_("NoPE (none)"),
    "sinusoidal": N_("sinusoidal"),
    "learned": N_("learned"),
    "shaw": N_("Shaw (relative k/v)"),
    "t5": N_("T5 bias"),
    "rope": N_("RoPE"),
    "rope-pi": N_("RoPE + position interpolation"),
    "rope-ntk": N_("RoPE + NTK-aware base"),
    "rope-yarn": N_("RoPE + YaRN"),
    "rope-yarn-no-temp": N_("RoPE + YaRN, no temperature"),
    "rope-dynamic": N_("RoPE + dynamic NTK (factor 2)"),
    "rope-llama3": N_("RoPE + llama3 by-parts"),
    "alibi": N_("ALiBi"),
    "learned-random": N_("learned, randomized positions"),
    "rope-random": N_("RoPE, randomized positions"),
    "fire": N_("FIRE"),
    "kerple-log": N_("KERPLE (log)"),
    "cope": N_("CoPE"),
    "xpos": N_("xPos"),
}
_PAPER_SET = ("sinusoidal", "rope", "t5", "alibi")  # the ALiBi paper's Figure 1


def _label(name: str) -> str:
    return tr(_LABELS[name]) if name in _LABELS else name


def _color(name: str) -> str:
    return METHOD_COLORS.get(name, "#333333")


def _subtitle(results: dict) -> str:
    cfg = results["config"]
    model = cfg["model"]
    seeds = len(cfg["seeds"])
    fields = {
        "train_len": results["train_len"],
        "d": model["n_embd"],
        "layers": model["n_layer"],
        "heads": model["n_head"],
        "steps": cfg["train"]["steps"],
        "seeds": seeds,
    }
    if seeds == 1:
        return tr(
            "trained at {train_len} bytes; d={d}, {layers} layers, {heads} heads, {steps} steps; 1 seed", **fields
        )
    return tr(
        "trained at {train_len} bytes; d={d}, {layers} layers, {heads} heads, {steps} steps; {seeds} seeds", **fields
    )


def _threads(results: dict) -> str:
    n = results["machine"].get("torch_threads")
    return tr("1 thread") if n == 1 else tr("{n} threads", n=n)


def _errors(agg: dict) -> tuple[list, list]:
    up = [None if m is None else hi - m for m, hi in zip(agg["mean"], agg["max"])]
    down = [None if m is None else m - lo for m, lo in zip(agg["mean"], agg["min"])]
    return up, down


# The one reason a method cannot run that the lab records (posviz.lab.model): as a message.
_PAST_TABLE = re.compile(
    r"length (\d+) is past the learned table: max_len=(\d+) has rows for positions 0\.\.(\d+) only "
    r"\(a learned table cannot extrapolate\)"
)


def _reason(text: str | None) -> str:
    match = _PAST_TABLE.fullmatch(text or "")
    if not match:
        return text or ""
    return tr(
        "length {length} is past the learned table: max_len={max_len} has rows for positions 0..{last} only "
        "(a learned table cannot extrapolate)",
        length=int(match[1]),
        max_len=int(match[2]),
        last=int(match[3]),
    )


def _hover(name: str, lengths: list[int], agg: dict, reasons: list, unit: str) -> list[str]:
    out = []
    for i, length in enumerate(lengths):
        if agg["mean"][i] is None:
            out.append(
                tr(
                    "{label}<br>L = {length}: cannot run<br>{value}",
                    label=_label(name),
                    length=length,
                    value=_reason(reasons[i]),
                )
            )
            continue
        std = agg["std"][i]
        out.append(
            f"{_label(name)}<br>L = {length}<br>{unit} {_number(agg['mean'][i], 4)}"
            + (tr(" ± {std} (std)", std=_number(std, 2)) if std is not None else "")
            + (
                "<br>" + spread_words(None)  # one seed: no min-max to show
                if agg["n"][i] == 1
                else tr(
                    "<br>min {agg}, max {agg2} over {agg3} seeds",
                    agg=_number(agg["min"][i], 4),
                    agg2=_number(agg["max"][i], 4),
                    agg3=agg["n"][i],
                )
            )
        )
    return out


def _number(value: float, digits: int) -> str:
    """``value`` to ``digits`` significant digits, never in scientific notation (a throughput of
    38,000 tokens reads 38,000, not 3.8e+04; Chinese drops the separator later)."""
    if value != 0 and abs(value) >= 10 ** (digits - 1):
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def _ticks_125(values: list[float | None]) -> list[float]:
    """1-2-5 tick values spanning the finite positive ``values`` (for a log axis: labelled with their
    full value, not Plotly's single minor digits such as a lone "2" for 200); a denser ladder
    (1, 1.5, 2, 3, ..., 8) when fewer than three 1-2-5 values fall inside the values' range."""
    finite = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    if not finite:
        return []
    lo, hi = min(finite), max(finite)
    for digits in ((1, 2, 5), (1, 1.5, 2, 3, 4, 5, 6, 7, 8)):  # the denser ladder for a narrow range
        ticks = []
        for exponent in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
            for digit in digits:
                tick = digit * 10.0**exponent
                if lo / 1.25 <= tick <= hi * 1.25:
                    ticks.append(tick)
        if sum(lo <= t <= hi for t in ticks) >= 3:  # three labels inside the drawn range
            break
    return ticks


def _length_axis(lengths: list[int], train_len: int) -> dict:
    return {
        "type": "log",
        "tickvals": lengths,
        "ticktext": [f"{n}<br>({n // train_len}×)" if n % train_len == 0 else str(n) for n in lengths],
        "title": {"text": tr("evaluation length L (bytes per window; multiple of the training length)")},
    }


def _length_label(length: int, train_len: int) -> str:
    return f"{length} ({length // train_len}×)" if length % train_len == 0 else str(length)


def _bar(names: list[str], values: list, texts: list[str], hover: list[str], **kw: object) -> go.Bar:
    return go.Bar(
        y=[_label(n) for n in names],
        x=[0.0 if v is None else v for v in values],
        orientation="h",
        marker_color=[_color(n) for n in names],
        text=texts,
        textposition="outside",
        cliponaxis=False,
        hovertext=hover,
        hoverinfo="text",
        showlegend=False,
        **kw,
    )


def _method_axes(names: list[str]) -> dict:
    """Two y axes listing the methods top to bottom in ``names`` order (a fixed category array, so
    slider updates never reorder them)."""
    order = {"categoryorder": "array", "categoryarray": [_label(n) for n in reversed(names)]}
    return {
        "yaxis": {**order, "automargin": True, "title": {"text": tr("position method")}},
        "yaxis2": {**order, "anchor": "x2", "showticklabels": False},
    }


def method_label(name: str) -> str:
    """A method's name as figures and legends show it, in the current language."""
    return _label(name)
