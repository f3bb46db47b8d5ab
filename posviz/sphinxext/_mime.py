"""myst-nb mime renderer plugin for ``application/vnd.plotly.v1+json`` outputs."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, ClassVar

import plotly.io as pio
from docutils import nodes

PLOTLY_MIME = "application/vnd.plotly.v1+json"
_HTML_BUILDERS = ("html", "dirhtml", "singlehtml")


def plotly_html(figure: Mapping[str, Any], key: str = "") -> str:
    """HTML for one figure: a ``div`` and an inline ``Plotly.newPlot`` script, nothing else.

    plotly.js must already be on the page; MathJax is not added and an animation does not
    start on load. The ``div`` id hashes the figure JSON and ``key`` (e.g. the output's cell
    and output index, so that two identical figures on one page still get distinct ids): the
    same figure always gives the same HTML, whatever the order of its keys.
    """
    fig = dict(figure)
    config = fig.pop("config", None)
    # Keys sorted: a freshly executed output and the same output read back from the
    # execution cache (which sorts keys) must give the same HTML.
    canonical = json.dumps(fig, sort_keys=True, separators=(",", ":"))
    div_id = "plotly-" + hashlib.sha256(f"{canonical}\0{key}".encode()).hexdigest()[:16]
    return pio.to_html(
        json.loads(canonical),
        config=config,
        auto_play=False,
        include_plotlyjs=False,
        include_mathjax=False,
        full_html=False,
        validate=False,
        div_id=div_id,
    )


class PlotlyMimeRenderer:
    """Render plotly's JSON mime bundle as HTML (a ``myst_nb`` ``MimeRenderPlugin``).

    For HTML builders the plotly mime type gets the highest priority, ahead of the
    ``text/html`` and ``text/plain`` fallbacks in the same output.
    """

    mime_priority_overrides: ClassVar[list[tuple[str, str, int | None]]] = [
        (builder, PLOTLY_MIME, 0) for builder in _HTML_BUILDERS
    ]

    @staticmethod
    def handle_mime(renderer: Any, data: Any, inline: bool) -> list[nodes.Element] | None:
        """Return a raw HTML node for a plotly output, ``None`` for anything else."""
        if data.mime_type != PLOTLY_MIME:
            return None
        content = data.content
        figure = json.loads(content) if isinstance(content, (str, bytes)) else content
        html = plotly_html(figure, key=f"{data.cell_index}-{data.output_index}")
        return [nodes.raw(text=html, format="html", classes=["output", "text_html", "posviz-plotly"])]
