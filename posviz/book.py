"""What the chapters share when they run: the ``glue`` that binds a computed number to the prose.

In the book, :func:`glue` is myst-nb's: the value is stored in the cell's output and the text's
``{glue:text}`` roles show it. Where myst-nb is not installed (Colab, a plain Jupyter), the
chapters still run: the value is shown where the cell asks for it, and otherwise nothing happens.
"""

from __future__ import annotations

__all__ = ["glue"]


def glue(name: str, variable: object, display: bool = True) -> None:
    """Bind ``variable`` to ``name`` for the prose's ``{glue:text}`` roles (myst-nb's ``glue``).

    Args:
        name: the key the chapter's text refers to.
        variable: the value (a number, a string, a figure).
        display: also show the value in the cell's output.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str, got {name!r}")
    try:
        from myst_nb import glue as myst_glue
    except ImportError:  # no myst-nb: nothing to bind, but show what the cell asks to show
        if display:
            from IPython.display import display as show

            show(variable)
        return
    from .i18n import META_KEY, message_of

    message = message_of(variable) if isinstance(variable, str) else None
    if message is None:
        myst_glue(name, variable, display=display)
        return
    # A phrase made by posviz.i18n.tr: myst-nb's glue, plus the message behind it, so that a
    # translated edition shows the phrase in its language (posviz.sphinxext._glue).
    import IPython
    from IPython.display import display as show
    from myst_nb.ext.glue import GLUE_PREFIX

    bundle, metadata = IPython.core.formatters.format_display_data(variable)
    prefix = "" if display else GLUE_PREFIX
    metadata["scrapbook"] = {"name": name, "mime_prefix": prefix}
    metadata[META_KEY] = message
    show({prefix + k: v for k, v in bundle.items()}, raw=True, metadata=metadata)
