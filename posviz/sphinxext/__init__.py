"""Sphinx / myst-nb glue that lets the book build offline with live Plotly figures.

Two pieces, both wired up by the book's ``_config.yml``:

* :class:`PlotlyMimeRenderer`, a myst-nb mime renderer plugin (entry point group
  ``myst_nb.mime_renderers``, declared in ``pyproject.toml``): it turns the
  ``application/vnd.plotly.v1+json`` outputs that plotly >= 6 emits under a kernel into static
  HTML with a deterministic ``div`` id, without plotly.js or MathJax inlined.
* :func:`setup`, a Sphinx extension (``sphinx: extra_extensions: [posviz.sphinxext]``): it
  serves plotly's own ``plotly.min.js`` on the pages that hold a figure and a local MathJax 3
  (from ``npm ci``'s ``node_modules/mathjax``), so that no page requests anything from a CDN.
"""

from ._assets import setup
from ._mime import PlotlyMimeRenderer, plotly_html

__all__ = ["PlotlyMimeRenderer", "plotly_html", "setup"]
