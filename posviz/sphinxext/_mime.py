"""myst-nb render plugin: plotly's ``application/vnd.plotly.v1+json`` outputs as static HTML,
posviz's self-check blocks and the tables posviz prints, in the edition's language.

The figure is translated (:func:`posviz.i18n.translate_figure`), rounded to what it shows
(:mod:`._rounding`), stored compactly (:mod:`._compact`) and described in words
(:mod:`._describe`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import html
import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import plotly.io as pio
from docutils import nodes
from myst_nb.core.render import MimeData, NbElementRenderer

from ..i18n import META_KEY, translate, translate_figure
from ..selfcheck import MIME as SELFCHECK_MIME
from ..selfcheck import SelfCheck
from ._compact import COMPACT_KEYS, compact_figure
from ._describe import describe_figure
from ._language import edition_language
from ._rounding import round_to_shown

__all__ = [
    "COMPACT_KEYS",
    "MIME_PRIORITY_OVERRIDES",
    "PLOTLY_MIME",
    "PlotlyNbRenderer",
    "describe_figure",
    "markdown_in_language",
    "plotly_html",
    "plotly_nodes",
    "selfcheck_nodes",
]

PLOTLY_MIME = "application/vnd.plotly.v1+json"
_HTML_BUILDERS = ("html", "dirhtml", "singlehtml")


SHARED_TEMPLATE = "plotly"
"""The template that the page script (``posviz.sphinxext``'s ``figures.js``) holds once for every
figure: a figure that uses it exactly does not carry its own copy."""


@lru_cache(maxsize=1)
def _shared_template() -> str:
    return json.dumps(pio.templates[SHARED_TEMPLATE].to_plotly_json(), sort_keys=True, separators=(",", ":"))


_ESCAPED_SLASH = re.compile(r"(?<!\\)((?:\\\\)*)\\u002f")


def plotly_html(figure: Mapping[str, Any], key: str = "", language: str = "en") -> str:
    """HTML for one figure: a ``div`` and an inline ``Plotly.newPlot`` script in a ``<figure>``.

    plotly.js must already be on the page; MathJax is not added and an animation does not
    start on load. The ``div`` id hashes the figure JSON and ``key`` (e.g. the output's cell
    and output index, so that two identical figures on one page still get distinct ids): the
    same figure always gives the same HTML, whatever the order of its keys.

    The figure's text alternative (:func:`describe_figure`) is the ``<figure>``'s accessible name
    and description, and a collapsed "Figure in words" caption any reader can open. A figure that
    uses plotly's default template exactly refers to it by name (``data-posviz-template``)
    instead of carrying it: the page script supplies it once for the whole site.
    """
    fig = translate_figure(json.loads(json.dumps(figure)), language)  # a copy: the record is removed
    config = fig.pop("config", None)
    # Keys sorted: a freshly executed output and the same output read back from the
    # execution cache (which sorts keys) must give the same HTML.
    canonical = json.dumps(fig, sort_keys=True, separators=(",", ":"))
    div_id = "plotly-" + hashlib.sha256(f"{canonical}\0{key}".encode()).hexdigest()[:16]
    fig = json.loads(canonical)
    layout = fig.get("layout") or {}
    template = layout.get("template")
    shared = template is not None and json.dumps(template, sort_keys=True, separators=(",", ":")) == _shared_template()
    if shared:
        del layout["template"]
    name, description = describe_figure(fig, language)
    width = layout.get("width")
    round_to_shown(fig)
    fig = compact_figure(fig)
    out = pio.to_html(
        fig,
        config=config,
        auto_play=False,
        include_plotlyjs=False,
        include_mathjax=False,
        full_html=False,
        validate=False,
        div_id=div_id,
    )
    # plotly writes every "/" of the JSON as \u002f (6 characters; base64 is full of them): only
    # "<" must be escaped inside a <script>, and it stays escaped (\u003c).
    out = _ESCAPED_SLASH.sub(r"\1/", out)
    if shared:
        out = out.replace(
            f'<div id="{div_id}" class="plotly-graph-div"',
            f'<div id="{div_id}" class="plotly-graph-div" data-posviz-template="{SHARED_TEMPLATE}"',
            1,
        )
    if isinstance(width, (int, float)):  # the fixed width becomes a maximum: a phone's column is narrower
        out = re.sub(
            r'style="height:([^;"]+); width:\d+px;"',
            rf'style="height:\1; width:100%; max-width:{width}px;"',
            out,
            count=1,
        )
    words = html.escape(translate("Figure in words", language))
    caption = (
        f'<figcaption class="posviz-figure-words"><details><summary>{words}</summary>'
        f'<p id="{div_id}-words">{html.escape(description)}</p></details></figcaption>'
    )
    # The <figure> (role figure, which may hold the slider and buttons) is named and described;
    # role="img" on the plot would hide its controls and nest interactive content.
    return (
        f'<figure class="posviz-figure" aria-label="{html.escape(name)}" aria-describedby="{div_id}-words">'
        f"{out}{caption}</figure>"
    )


def plotly_nodes(data: Any, language: str = "en") -> list[nodes.Element] | None:
    """A raw HTML node for a plotly output (a myst-nb ``MimeData``), ``None`` for anything else.

    The figure is drawn in ``language`` (the edition's: :func:`posviz.i18n.translate_figure`)."""
    if data.mime_type != PLOTLY_MIME:
        return None
    content = data.content
    figure = json.loads(content) if isinstance(content, (str, bytes)) else content
    html = plotly_html(figure, key=f"{data.cell_index}-{data.output_index}", language=language)
    return [nodes.raw(text=html, format="html", classes=["output", "text_html", "posviz-plotly"])]


def selfcheck_nodes(data: Any, language: str = "en") -> list[nodes.Element] | None:
    """A self-check block (``posviz.selfcheck``'s data) as HTML in ``language``; ``None`` for anything else."""
    if data.mime_type != SELFCHECK_MIME:
        return None
    content = data.content
    block = SelfCheck.from_json(json.loads(content) if isinstance(content, (str, bytes)) else content, language)
    return [nodes.raw(text=block._repr_html_(), format="html", classes=["output", "text_html"])]


MIME_PRIORITY_OVERRIDES: list[tuple[str, str, int]] = [
    (builder, mime, 0) for builder in _HTML_BUILDERS for mime in (PLOTLY_MIME, SELFCHECK_MIME)
]
"""What the book's ``nb_mime_priority_overrides`` must hold: plotly's and the self-check's mime
types first for HTML builders, ahead of the ``text/html`` and ``text/plain`` fallbacks in the
same output."""


class PlotlyNbRenderer(NbElementRenderer):
    """myst-nb's element renderer, plus plotly's JSON mime bundle rendered as HTML.

    A *named* render plugin (entry point ``myst_nb.renderers: posviz-plotly``), so it acts only
    in a project whose configuration asks for it (``nb_render_plugin: posviz-plotly``, as the
    book's ``_config.yml`` does). Installing posviz changes nothing in any other project's docs.
    """

    @property
    def language(self) -> str:
        """The edition's language (Sphinx's ``language``), English outside Sphinx."""
        env = getattr(self.renderer, "sphinx_env", None)
        return edition_language(getattr(getattr(env, "config", None), "language", None))

    def render_mime_type(self, data: MimeData) -> list[nodes.Element]:
        return (
            plotly_nodes(data, self.language) or selfcheck_nodes(data, self.language) or super().render_mime_type(data)
        )

    def render_mime_type_inline(self, data: MimeData) -> list[nodes.Element]:
        return plotly_nodes(data, self.language) or super().render_mime_type_inline(data)

    def render_markdown(self, data: MimeData) -> list[nodes.Element]:
        return super().render_markdown(markdown_in_language(data, self.language))

    def render_markdown_inline(self, data: MimeData) -> list[nodes.Element]:
        return super().render_markdown_inline(markdown_in_language(data, self.language))


def markdown_in_language(data: MimeData, language: str) -> MimeData:
    """A ``text/markdown`` output in the edition's language: a table made by posviz (a
    :class:`posviz.lab.tables.Table`) leaves the messages it was made of in the output's metadata
    (``posviz_i18n``), and is translated through them (:func:`posviz.lab.tables.translate_output`);
    any other Markdown output is shown as it is."""
    metadata = data.output_metadata or {}
    inner = metadata.get("text/markdown")
    if language == "en" or META_KEY not in (inner if isinstance(inner, dict) else metadata):
        return data
    from ..lab.tables import translate_output

    return dataclasses.replace(data, content=translate_output(data.string, metadata, language))
