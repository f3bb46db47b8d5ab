"""Sphinx extension: serve plotly.js and MathJax 3 from the built site, never from a CDN.

It also resolves the short names that posviz's module docstrings use for the public API
(``:func:`apply_rope``` in ``posviz.rope``) to the documented ``posviz.apply_rope``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import plotly
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

import posviz

logger = logging.getLogger(__name__)

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
PLOTLY_STATIC = "posviz/plotly.min.js"  # under _static/
MATHJAX_STATIC = "posviz/mathjax"  # under _static/
MATHJAX_ENTRY = "tex-chtml-full.js"
# What the page-load script needs (fonts), plus what MathJax's right-click menu can load later.
MATHJAX_PARTS = (MATHJAX_ENTRY, "output/chtml/fonts/woff-v2", "a11y", "ui", "sre")


def _set_mathjax_path(app: Sphinx, config: Config) -> None:
    config.mathjax_path = f"{MATHJAX_STATIC}/{MATHJAX_ENTRY}"


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dst, dirs_exist_ok=True)
    else:
        shutil.copyfile(src, dst)


def _copy_assets(app: Sphinx) -> None:
    """Copy before any page is written, so Sphinx's ``?v=checksum`` is the same on every build."""
    if app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    _copy(PLOTLY_JS, static / PLOTLY_STATIC)
    if "myst_nb" in app.extensions:  # myst-nb copies its CSS only after the pages are written
        from myst_nb.sphinx_ext import add_global_html_resources

        add_global_html_resources(app, None)
    source = Path(app.srcdir, app.config.posviz_mathjax_dir)
    missing = [part for part in MATHJAX_PARTS if not (source / part).exists()]
    if missing:
        logger.warning(
            "MathJax 3 not found at %s (missing %s): run `npm ci` in the book root (`make book` does)",
            source,
            ", ".join(missing),
            type="posviz",
            subtype="mathjax",
        )
        return
    for part in MATHJAX_PARTS:
        _copy(source / part, static / MATHJAX_STATIC / part)


def _add_plotly_js(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """Load plotly.js (synchronously, before the figures' inline scripts) on pages with a figure."""
    if 'class="plotly-graph-div"' in context.get("body", ""):
        app.builder.add_js_file(PLOTLY_STATIC)  # on this page only


def _resolve_public_name(app: Sphinx, env: Any, node: Any, contnode: nodes.Element) -> nodes.Element | None:
    """``name`` or ``posviz.module.name`` -> ``posviz.name`` when ``name`` is in ``posviz.__all__``."""
    name = node.get("reftarget", "").rpartition(".")[2]
    if node.get("refdomain") != "py" or name not in posviz.__all__:
        return None
    domain = env.get_domain("py")
    return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], f"posviz.{name}", node, contnode)


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the extension (``sphinx: extra_extensions: [posviz.sphinxext]``)."""
    app.add_config_value("posviz_mathjax_dir", "node_modules/mathjax/es5", "env", [str])
    app.connect("config-inited", _set_mathjax_path)
    app.connect("builder-inited", _copy_assets)
    app.connect("html-page-context", _add_plotly_js)
    app.connect("missing-reference", _resolve_public_name)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
