"""The edition's language, as posviz's catalogs name it."""

from __future__ import annotations


def edition_language(language: str | None) -> str:
    """posviz's figure language for a Sphinx ``language`` (English for any it does not draw in)."""
    if not language:
        return "en"
    name = language.replace("-", "_")
    return "zh_CN" if name.startswith("zh") else "en"
