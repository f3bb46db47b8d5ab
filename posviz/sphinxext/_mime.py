"""myst-nb render plugin for ``application/vnd.plotly.v1+json`` outputs."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import plotly.io as pio
from docutils import nodes
from myst_nb.core.render import MimeData, NbElementRenderer

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


def plotly_nodes(data: Any) -> list[nodes.Element] | None:
    """A raw HTML node for a plotly output (a myst-nb ``MimeData``), ``None`` for anything else."""
    if data.mime_type != PLOTLY_MIME:
        return None
    content = data.content
    figure = json.loads(content) if isinstance(content, (str, bytes)) else content
    html = plotly_html(figure, key=f"{data.cell_index}-{data.output_index}")
    return [nodes.raw(text=html, format="html", classes=["output", "text_html", "posviz-plotly"])]


MIME_PRIORITY_OVERRIDES: list[tuple[str, str, int]] = [(builder, PLOTLY_MIME, 0) for builder in _HTML_BUILDERS]
"""What the book's ``nb_mime_priority_overrides`` must hold: plotly's mime type first for HTML
builders, ahead of the ``text/html`` and ``text/plain`` fallbacks in the same output."""


class PlotlyNbRenderer(NbElementRenderer):
    """myst-nb's element renderer, plus plotly's JSON mime bundle rendered as HTML.

    A *named* render plugin (entry point ``myst_nb.renderers: posviz-plotly``), so it acts only
    in a project whose configuration asks for it (``nb_render_plugin: posviz-plotly``, as the
    book's ``_config.yml`` does). Installing posviz changes nothing in any other project's docs.
    """

    def render_mime_type(self, data: MimeData) -> list[nodes.Element]:
        return plotly_nodes(data) or super().render_mime_type(data)

    def render_mime_type_inline(self, data: MimeData) -> list[nodes.Element]:
        return plotly_nodes(data) or super().render_mime_type_inline(data)
