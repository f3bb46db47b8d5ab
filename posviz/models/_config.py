"""Duck-typed reading of a model config: a ``transformers`` config object or a plain ``config.json`` dict.

Nothing here imports ``transformers``. Every value read comes back with the text of its source (the
config field it came from, or the family default and where that default is documented), so that a
card can cite every number it holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_MISSING = object()


class Reader:
    """Reads fields of one config (object or mapping) and remembers where each value came from."""

    def __init__(self, config: object, *, prefix: str = "config") -> None:
        self.config = config
        self.prefix = prefix

    def raw(self, name: str, default: Any = _MISSING) -> Any:
        """The field ``name`` (mapping key or attribute), or ``default``; ``None`` counts as absent."""
        if isinstance(self.config, Mapping):
            value = self.config.get(name, None)
        else:
            value = getattr(self.config, name, None)
        if value is None:
            return None if default is _MISSING else default
        return value

    def has(self, name: str) -> bool:
        return self.raw(name) is not None

    def get(self, *names: str, default: Any = _MISSING, default_source: str = "") -> tuple[Any, str]:
        """The first of ``names`` present, with its source ``config.<name>``; else the default and its source."""
        for name in names:
            value = self.raw(name)
            if value is not None:
                return value, f"{self.prefix}.{name}"
        if default is _MISSING:
            raise KeyError(names[0])
        return default, default_source

    def sub(self, name: str) -> Reader | None:
        """A reader for a nested config (``text_config``, ``attn_config``), or ``None``."""
        value = self.raw(name)
        return None if value is None else Reader(value, prefix=f"{self.prefix}.{name}")


def as_mapping(value: object) -> dict[str, Any]:
    """A nested config block (mapping or object with ``to_dict`` / attributes) as a plain dict."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return dict(to_dict())
    return dict(vars(value))


def model_type_of(config: object) -> str:
    """``config.model_type`` (attribute, class attribute or mapping key), lower-cased."""
    if isinstance(config, Mapping):
        value = config.get("model_type")
    else:
        value = getattr(config, "model_type", None)
    if not isinstance(value, str) or not value:
        raise ValueError(
            "config must name its family in model_type (a transformers config object or a config.json "
            f"dict with a 'model_type' key), got {type(config).__name__} without one"
        )
    return value.lower()
