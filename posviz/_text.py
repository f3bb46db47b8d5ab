"""Plotly rich text as plain text, and text joined from pieces spaced by the language's rules.

The figure descriptions (``posviz.sphinxext._describe``) read titles, axes and labels from a figure
and join them into sentences; in Chinese no space may stand between two Chinese characters or
beside full-width punctuation. Re-exported by :mod:`posviz.i18n`.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable

__all__ = ["plain_text", "tidy"]


def _language_of(language: str) -> str:
    from .i18n import _normalise  # posviz.i18n imports this module

    return _normalise(language)


_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_FULL_WIDTH = "，。：；！？、（）《》「」【】“”‘’"  # punctuation that no space comes before
_OPENING = "（《「【“‘"  # nor after these
_SPACED = "，。：；！？、"  # nor after these (they carry their own space)
_CLOSING = "）》」】”’"  # nor between these and a Chinese character: NoPE（无位置）的
_INLINE_SUB = re.compile(r"(?<=[^\s>;；])<sub>(.*?)</sub>")
_SUP = re.compile(r"(?<=[^\s>;；])<sup>(.*?)</sup>")
# Unicode's sub- and superscript letters: a script made only of them is written with them (Uₘ, θᵢ,
# aᵖᵒˢ, e⁻ᵞ); any other (o_(π(m)), 2^(−8/n)) keeps the _ / ^ mark
_SCRIPTS = {
    "_": dict(zip("0123456789+-−=()aehijklmnoprstuvxβγρφχ", "₀₁₂₃₄₅₆₇₈₉₊₋₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓᵦᵧᵨᵩᵪ")),
    "^": dict(zip("0123456789+-−=()abcdefghijklmnoprstuvwxyzβγδθφχT",
                  "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁻⁼⁽⁾ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻᵝᵞᵟᶿᵠᵡᵀ")),
}


_SUBTITLE = re.compile(r"\s*<br>\s*(?=<(?:sub|sup|span)\b)")  # a line break before a small second line
_CLAUSE = {"en": "; ", "zh_CN": "；"}
_ENDS_CLAUSE = ".,;:!?，。：；！？、"


def plain_text(value: str, language: str = "en") -> str:
    """Plotly rich text as plain text in ``language``: tags dropped, ``<br>`` as a space, entities
    decoded.

    A small second line (``<br><sub>…``, ``<br><sup>…`` or ``<br><span …>``, a title's subtitle) is a clause of its
    own: it follows a ``"; "`` (Chinese ``"；"``) unless the line before ends in punctuation. A
    subscript written on a symbol becomes ``Lₘₐₓ`` and a superscript ``2ᵏ`` when Unicode has a
    script letter for each of its characters, else ``o_(π(m))`` and ``2^(−8/n)`` (in parentheses
    when it is more than a word); a ``<sub>`` or ``<sup>`` that starts a line is just its words.
    """

    def script(mark: str) -> Callable[[re.Match[str]], str]:
        def write(match: re.Match[str]) -> str:
            inner = match.group(1)
            bare = inner[1:-1] if re.fullmatch(r"\([^()]*\)", inner) else inner  # e<sup>(−γ)</sup>: e⁻ᵞ
            if bare and all(c in _SCRIPTS[mark] for c in bare):
                return "".join(_SCRIPTS[mark][c] for c in bare)
            return f"{mark}{inner}" if re.fullmatch(r"[\w′]+|\(.*\)", inner) else f"{mark}({inner})"

        return write

    def subtitle(match: re.Match[str]) -> str:
        before = html.unescape(re.sub(r"<[^>]+>", "", value[: match.start()])).rstrip()
        return " " if not before or before[-1] in _ENDS_CLAUSE else _CLAUSE.get(_language_of(language), "; ")

    value = _SUBTITLE.sub(subtitle, value).replace("<br>", " ")
    value = _INLINE_SUB.sub(script("_"), value)
    value = _SUP.sub(script("^"), value)
    return tidy(html.unescape(re.sub(r"<[^>]+>", " ", value)), language)


def tidy(text: str, language: str) -> str:
    """Text joined from pieces, spaced by ``language``'s rules.

    Chinese: no space between two Chinese characters (a line break inside a phrase) and none
    before or after full-width punctuation (``（``, ``，``, ``：`` …), none between a closing one
    (``）``, ``”`` …) and a Chinese character; a space between Chinese and a
    Latin word or a number stays, as the catalogs write it. English: spaces collapsed.
    """
    text = " ".join(text.split())
    if _language_of(language) != "zh_CN":
        return text
    text = re.sub(rf"(?<=[{_CJK}])\s+(?=[{_CJK}])", "", text)
    text = re.sub(rf"(?<=[{_CLOSING}])\s+(?=[{_CJK}])", "", text)
    return re.sub(rf"\s+(?=[{_FULL_WIDTH}])|(?<=[{_OPENING}{_SPACED}])\s+", "", text)
