"""posviz.i18n: figure text in the reader's language, and the figures of every chapter in Chinese."""

from __future__ import annotations

import re

import plotly.graph_objects as go
import pytest

import posviz.i18n as i18n
from posviz.i18n import N_, catalog, messages_in, set_language, tr, translatable, translate_figure


@pytest.fixture(autouse=True)
def english():
    set_language("en")
    yield
    set_language("en")


def test_set_language_names_the_allowed_languages() -> None:
    with pytest.raises(ValueError, match=r"language must be one of en, zh_CN"):
        set_language("fr")
    set_language("zh")  # an alias
    assert i18n.get_language() == "zh_CN"
    set_language(None)
    assert i18n.get_language() == "en"


def test_environment_variable_picks_the_language(monkeypatch: pytest.MonkeyPatch) -> None:
    i18n._language = None
    monkeypatch.setenv("POSVIZ_LANG", "zh_CN")
    assert i18n.get_language() == "zh_CN"


def test_tr_formats_and_keeps_plotly_placeholders() -> None:
    assert tr("pair i = {i}<br>%{y:.3f} rad", i=3) == "pair i = 3<br>%{y:.3f} rad"
    assert tr("no fields %{x}") == "no fields %{x}"


def test_tr_translates_in_chinese() -> None:
    assert catalog("zh_CN")  # the catalogs ship with the package
    msgid, msgstr = next((k, v) for k, v in catalog("zh_CN").items() if "{" not in k and k != v)
    set_language("zh_CN")
    assert tr(msgid) == msgstr


def test_catalog_reader_agrees_with_babel() -> None:
    from babel.messages.pofile import read_po

    ours: dict[str, str] = {}
    for path in sorted((i18n.LOCALE / "zh_CN" / "LC_MESSAGES").rglob("*.po")):
        with path.open("rb") as f:
            theirs = {m.id: m.string for m in read_po(f) if m.id and m.string and not m.fuzzy}
        assert i18n._read_po(path) == theirs, path
        ours.update(theirs)
    assert catalog("zh_CN") == ours


def test_messages_are_extracted_from_source() -> None:
    source = 'a = tr("one {x}", x=1)\nb = N_("two")\nc = translate("three", lang)\nd = tr(name)\n'
    assert messages_in(source) == [("one {x}", 1), ("two", 2), ("three", 3)]
    assert N_("two") == "two"


@translatable
def _figure(n: int) -> go.Figure:
    fig = go.Figure(go.Scatter(y=[1, 2], name=tr("training length")))
    fig.update_layout(title=tr("every {n} positions", n=n), xaxis_title=tr("position p"))
    return fig


def test_a_translatable_figure_records_and_is_translated_as_rendered() -> None:
    fig = _figure(4).to_dict()
    record = fig["layout"]["meta"][i18n.META_KEY]
    assert record["every 4 positions"] == ["every {n} positions", {"n": 4}]
    zh = translate_figure(fig, "zh_CN")
    assert "meta" not in zh["layout"]  # the record never reaches the page
    set_language("zh_CN")
    live = _figure(4)
    assert zh["layout"]["title"]["text"] == live.layout.title.text != "every 4 positions"
    assert zh["data"][0]["name"] == live.data[0].name
    set_language("en")
    en = translate_figure(_figure.__wrapped__(4).to_dict(), "en")
    assert en["layout"]["title"]["text"] == "every 4 positions"


def test_translation_replaces_whole_words_only() -> None:
    fig = {"layout": {"meta": {i18n.META_KEY: {"position p": ["position p", {}]}}, "title": {"text": "position pp"}}}
    assert translate_figure(fig, "zh_CN")["layout"]["title"]["text"] == "position pp"


# One figure of each chapter, drawn in English and rendered in Chinese: every label it records
# has a translation, and no English word of a recorded label is left in the figure's text.
def _figures():
    from posviz.lab.figures import perplexity_figure
    from posviz.lab.results import load_published
    from posviz.plots.alibi import alibi_slopes_figure
    from posviz.plots.attention import scale_figure
    from posviz.plots.learned import learned_cost_figure
    from posviz.plots.relative import t5_bucket_figure
    from posviz.plots.rope import rope_angle_figure
    from posviz.plots.sinusoidal import sinusoidal_waves_figure

    return {
        "attention": lambda: scale_figure(),
        "sinusoidal": lambda: sinusoidal_waves_figure(),
        "learned": lambda: learned_cost_figure(),
        "relative": lambda: t5_bucket_figure(),
        "rope": lambda: rope_angle_figure(),
        "alibi": lambda: alibi_slopes_figure(),
        "extrapolation": lambda: perplexity_figure(load_published()),
    }


def _texts(value, key=""):
    """The strings a reader sees in a figure dict (titles, names, labels, hover text, ticks)."""
    if isinstance(value, str):
        if key in {"text", "name", "label", "prefix", "hovertemplate", "title", "hovertext", "ticktext"}:
            yield value
    elif isinstance(value, list):
        for v in value:
            yield from _texts(v, key)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _texts(v, k if k not in ("args", "steps", "buttons", "annotations") else key or k)


@pytest.mark.parametrize("chapter", list(_figures()))
def test_every_label_of_a_chapter_figure_is_in_chinese(chapter: str) -> None:
    fig = _figures()[chapter]().to_dict()
    record = fig["layout"]["meta"][i18n.META_KEY]
    zh_catalog = catalog("zh_CN")
    missing = sorted({msgid for msgid, _ in record.values() if re.search("[A-Za-z]{3,}", msgid)} - set(zh_catalog))
    assert not missing, f"{chapter}: labels without a translation: {missing}"
    zh = translate_figure(fig, "zh_CN")
    left = [
        english
        for english, (msgid, _) in record.items()
        if re.search("[A-Za-z]{3,}", msgid) and zh_catalog[msgid] != msgid
        for text in _texts(zh)
        if re.search(r"(?<![A-Za-z0-9_])" + re.escape(english) + r"(?![A-Za-z0-9_])", text)
    ]
    assert not left, f"{chapter}: English labels left in the Chinese figure: {sorted(set(left))[:5]}"
    assert any(re.search(r"[\u4e00-\u9fff]", t) for t in _texts(zh))


def _explorers():
    from posviz.learned import WindowMaxConfig
    from posviz.widgets.alibi import alibi_explorer
    from posviz.widgets.attention import attention_explorer
    from posviz.widgets.learned import learned_explorer
    from posviz.widgets.relative import relative_explorer
    from posviz.widgets.rope import rope_explorer
    from posviz.widgets.sinusoidal import sinusoidal_explorer

    small = WindowMaxConfig(steps=20, checkpoints=(0, 10, 20), probe=16)  # as tests/test_widgets_learned.py
    return {
        "alibi": alibi_explorer,
        "attention": attention_explorer,
        "learned": lambda: learned_explorer(max_lens=(8, 12), dims=(4, 6), seeds=(0,), config=small, max_len=12, dim=6),
        "relative": relative_explorer,
        "rope": rope_explorer,
        "sinusoidal": sinusoidal_explorer,
    }


@pytest.mark.parametrize("chapter", list(_explorers()))
def test_explorers_speak_chinese_after_set_language(chapter: str) -> None:
    """What a Chinese notebook's setup cell does (posviz.set_language("zh_CN")): the explorer's
    controls and its figure's titles are drawn in Chinese."""
    set_language("zh_CN")
    box = _explorers()[chapter]()
    descriptions = [c.description for c in box.controls.values()]
    assert any(re.search(r"[\u4e00-\u9fff]", d) for d in descriptions), descriptions
    texts = list(_texts(box.figure.to_dict()))
    assert any(re.search(r"[\u4e00-\u9fff]", t) for t in texts), texts[:10]


@translatable
def _nested(h: int) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title=tr("Head {h}: {head}", h=h, head=tr("decay {value:g} per bucket", value=0.5)))
    return fig


def test_a_nested_message_is_translated_from_a_cached_output_with_sorted_keys() -> None:
    """The execution cache sorts a figure's keys: the outer message ("Head …") then comes before
    the one in its field ("decay …"); both are translated all the same."""
    import json

    cached = json.loads(json.dumps(_nested(3).to_dict(), sort_keys=True))
    title = translate_figure(cached, "zh_CN")["layout"]["title"]["text"]
    set_language("zh_CN")
    assert title == _nested.__wrapped__(3).layout.title.text
    assert not re.search("[A-Za-z]{3,}", title), title
