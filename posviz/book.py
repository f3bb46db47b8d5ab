"""What the chapters share when they run: the ``glue`` that binds a computed number to the prose.

In the book, :func:`glue` is myst-nb's: the value is stored in the cell's output and the text's
``{glue:text}`` roles show it. Where myst-nb is not installed (Colab, a plain Jupyter), the
chapters still run: the value is shown where the cell asks for it, and otherwise nothing happens.
"""

from __future__ import annotations

__all__ = ["glue"]


FIELDS_KEY = "posviz_i18n_fields"
"""Where a glued phrase keeps the messages of its fields that are phrases too (English -> message)."""


def _nested_messages(message: list, depth: int = 0) -> dict[str, list]:
    """English text -> ``[msgid, fields]`` of every field of ``message`` (at any depth) that
    :func:`posviz.i18n.tr` made: what translating the phrase later needs besides its own message."""
    from .i18n import message_of

    found: dict[str, list] = {}
    if depth > 8:
        return found
    for value in message[1].values():
        inner = message_of(value) if isinstance(value, str) else None
        if inner is not None:
            found[value] = inner
            found.update(_nested_messages(inner, depth + 1))
    return found


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
    nested = _nested_messages(message)  # fields that are phrases themselves (a list, a label)
    if nested:
        metadata[FIELDS_KEY] = nested
    show({prefix + k: v for k, v in bundle.items()}, raw=True, metadata=metadata)
