"""Sphinx / myst-nb glue that lets the book build offline with live Plotly figures.

Both pieces are switched on by the book's own ``_config.yml`` and by nothing else (installing
posviz changes no other project's documentation):

* :class:`PlotlyNbRenderer`, a myst-nb render plugin selected by name
  (``nb_render_plugin: posviz-plotly``, entry point group ``myst_nb.renderers``): it turns the
  ``application/vnd.plotly.v1+json`` outputs that plotly >= 6 emits under a kernel into static
  HTML with a deterministic ``div`` id, without plotly.js or MathJax inlined. The book's config
  also gives that mime type the first place (``nb_mime_priority_overrides``).
* :func:`setup`, a Sphinx extension (``sphinx: extra_extensions: [posviz.sphinxext]``): it
  serves plotly's own ``plotly.min.js`` on the pages that hold a figure and a local MathJax 3
  (from ``npm ci``'s ``node_modules/mathjax``), so that no page requests anything from a CDN.
  In a translated edition it also keeps every translated equation (:mod:`._translated_math`),
  writes citations in the edition's language (:mod:`._citations`) and shows glued phrases in it
  (:mod:`._glue`); the render plugin draws figures, self-checks and the tables posviz prints in
  that language (:mod:`._mime`).

It imports Sphinx, docutils and myst-nb, which posviz itself does not need: install them with
``pip install "posviz[book]"``.
"""

try:
    import docutils  # noqa: F401
    import myst_nb  # noqa: F401
    import sphinx  # noqa: F401
except ImportError as err:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"posviz.sphinxext needs the book toolchain ({err.name} is missing): pip install 'posviz[book]'"
    ) from err

from typing import Any

from . import _assets, _build_speed, _citations, _translated_math
from ._mime import MIME_PRIORITY_OVERRIDES, PlotlyNbRenderer, plotly_html, plotly_nodes


def setup(app: Any) -> dict[str, Any]:
    """Register the extension (``sphinx: extra_extensions: [posviz.sphinxext]``): the offline
    assets (:mod:`._assets`), translated equations that survive the build
    (:mod:`._translated_math`), citations in the edition's language (:mod:`._citations`), and a
    build that can run in parallel with a fast Chinese search index (:mod:`._build_speed`)."""
    metadata = _assets.setup(app)
    _translated_math.setup(app)
    _citations.setup(app)
    _build_speed.setup(app)
    return metadata


__all__ = ["MIME_PRIORITY_OVERRIDES", "PlotlyNbRenderer", "plotly_html", "plotly_nodes", "setup"]
