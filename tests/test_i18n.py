"""posviz.i18n: figure text in the reader's language: the language, its catalogs and the
formatting of a message, figures recorded in English and translated as rendered (issue 21), and
text pieces joined by the language's rules (issue 26).

The figures of every chapter in Chinese are tested in test_i18n_chapters.py; the helpers both
files share (test_figure_notation.py too) live in i18n_cases.py.
"""

from __future__ import annotations

import re

import plotly.graph_objects as go
import pytest
from i18n_cases import json_copy

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


# --- the catalog reader, formatting, and a translation that does not fit (issue 21) ---


def test_a_fuzzy_entry_is_not_used(tmp_path) -> None:
    po = tmp_path / "x.po"
    po.write_text(
        'msgid ""\nmsgstr ""\n\n#, fuzzy\nmsgid "old guess"\nmsgstr "旧的猜测"\n\n'
        '#, python-brace-format\nmsgid "kept {n}"\nmsgstr "保留 {n}"\n\n'
        '#, fuzzy, python-brace-format\nmsgid "also {n}"\n"guessed"\nmsgstr "也 {n}"\n',
        encoding="utf-8",
    )
    assert i18n._read_po(po) == {"kept {n}": "保留 {n}"}


def test_doubled_braces_are_single_in_a_message_without_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    assert tr("a set {{m, n}} at %{x}") == "a set {m, n} at %{x}"
    assert tr("a set {{m, n}} of {k}", k=2) == "a set {m, n} of 2"
    monkeypatch.setattr(i18n, "catalog", lambda language: {"a set {{m, n}}": "集合 {{m, n}}"})
    set_language("zh_CN")
    assert tr("a set {{m, n}}") == "集合 {m, n}"


def _unfit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A catalog whose translation names a field the message does not have ({m} for {n})."""
    zh = {"every {n} positions": "每 {m} 个位置", "position p": "位置 p"}
    monkeypatch.setattr(i18n, "catalog", lambda language: zh if language == "zh_CN" else {})


def test_a_translation_that_lost_a_field_gives_english_and_a_warning_live(monkeypatch: pytest.MonkeyPatch) -> None:
    _unfit(monkeypatch)
    set_language("zh_CN")
    with pytest.warns(i18n.TranslationWarning, match=r"every \{n\} positions"):
        assert tr("every {n} positions", n=4) == "every 4 positions"
    assert tr("position p") == "位置 p"


def test_a_translation_that_lost_a_field_gives_english_and_a_warning_in_the_book(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fig = _figure(4).to_dict()  # made in English, as the book's cached outputs are
    _unfit(monkeypatch)
    with pytest.warns(i18n.TranslationWarning, match=r"every \{n\} positions"):
        zh = translate_figure(fig, "zh_CN")
    assert zh["layout"]["title"]["text"] == "every 4 positions"
    assert zh["layout"]["xaxis"]["title"]["text"] == "位置 p"


def test_chinese_numbers_have_no_thousands_separator() -> None:
    set_language("zh_CN")
    assert tr("{number}", number="10,000") == "10000" and tr("{number}", number="1 000 000") == "1000000"
    assert i18n.translate("position p (d = {dim}, base = {base})", "zh_CN", dim=128, base="10,000") == (
        "位置 p（d = 128，基数 = 10000）"
    )
    assert i18n._format("{x:,.1f} in [0,255]", {"x": 12345.0}, "zh_CN") == "12345.0 in [0,255]"
    assert i18n.ungrouped("4 (L = 32), 4 (L = 256), 2,048 and 1.5") == "4 (L = 32), 4 (L = 256), 2048 and 1.5"
    set_language("en")
    assert tr("{number}", number="10,000") == "10,000"
    assert i18n._format("{x:,.1f}", {"x": 12345.0}) == "12,345.0"


def test_glue_records_the_message_of_a_translated_phrase(monkeypatch: pytest.MonkeyPatch) -> None:
    """posviz.book.glue saves the message behind a tr() phrase, so the Chinese edition shows it in
    Chinese (posviz.sphinxext._glue); a plain value is myst-nb's own glue."""
    import IPython.display
    import myst_nb

    from posviz.book import glue

    shown, glued = [], []
    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: shown.append((a, k)))
    monkeypatch.setattr(myst_nb, "glue", lambda *a, **k: glued.append(a))
    phrase = tr("every {n} positions", n=7)
    glue("phrase", phrase, display=False)
    ((_bundle,), options) = shown[0]
    assert options["metadata"][i18n.META_KEY] == ["every {n} positions", {"n": 7}]
    assert options["metadata"]["scrapbook"]["name"] == "phrase" and options["raw"] is True
    msgid, fields = options["metadata"][i18n.META_KEY]
    assert i18n.translate(msgid, "zh_CN", **fields) == catalog("zh_CN")[msgid].format(n=7) != phrase
    assert glued == []
    glue("number", 6.5, display=False)
    assert glued == [("number", 6.5)]


def test_a_message_is_replaced_only_at_the_start_of_a_word() -> None:
    record = {i18n.META_KEY: {"position p": ["position p", {}]}}
    for text, expected in (
        ("xposition p", "xposition p"),
        ("position pp", "position pp"),
        ("(position p)", "(位置 p)"),
    ):
        fig = {"layout": {"meta": json_copy(record), "title": {"text": text}}}
        assert translate_figure(fig, "zh_CN")["layout"]["title"]["text"] == expected, text


# --- what translate_figure rewrites: text a reader sees, never ids or enumerations (issue 21) ---


@translatable
def _ids_and_text() -> go.Figure:
    fig = go.Figure()
    for word in ("causal", "none"):  # a message that is also an id or an enumerated value
        fig.add_scatter(
            x=[tr(word), tr("lines")],
            y=[1, 2],
            name=tr(word),
            legendgroup=tr(word),
            uid=tr(word),
            meta={"kind": tr(word)},
            hoverinfo=tr(word) if word == "none" else "x+y",
            mode=tr("lines"),
            hovertemplate=tr("{w}: %{y}", w=tr(word)),
            text=[tr(word), tr(word)],
            customdata=[tr(word)] * 2,
        )
    fig.update_layout(
        title=tr("causal"),
        xaxis={"title": {"text": tr("none")}, "categoryarray": [tr("causal"), tr("lines")]},
        annotations=[{"text": tr("causal"), "name": tr("causal"), "x": 0, "y": 0}],
        sliders=[
            {
                "currentvalue": {"prefix": tr("causal")},
                "steps": [
                    {
                        "label": tr("causal"),
                        "name": tr("causal"),
                        "method": "update",
                        "args": [
                            {"name": [tr("causal"), tr("none")]},
                            {"title.text": tr("none"), "xaxis.title.text": tr("causal")},
                        ],
                    },
                    {"label": tr("none"), "method": "animate", "args": [[tr("causal")], {"mode": "immediate"}]},
                ],
            }
        ],
        updatemenus=[{"type": "buttons", "buttons": [{"label": tr("causal"), "name": tr("none"), "method": "skip"}]}],
    )
    fig.frames = [go.Frame(name=tr("causal"), data=[go.Scatter(name=tr("causal"))])]
    return fig


def test_translate_figure_rewrites_text_and_never_ids_or_enumerations(monkeypatch: pytest.MonkeyPatch) -> None:
    fig = json_copy(_ids_and_text().to_plotly_json())
    monkeypatch.setattr(
        i18n, "catalog", lambda language: {"causal": "因果", "none": "无", "lines": "线", "{w}: %{y}": "{w}：%{y}"}
    )
    zh = translate_figure(fig, "zh_CN")
    causal, none = zh["data"]
    # text a reader sees
    assert causal["name"] == "因果" and none["name"] == "无" and causal["x"] == ["因果", "线"]
    assert causal["hovertemplate"] == "因果：%{y}" and causal["text"] == ["因果", "因果"]
    layout = zh["layout"]
    assert layout["title"]["text"] == "因果" and layout["xaxis"]["title"]["text"] == "无"
    assert layout["xaxis"]["categoryarray"] == ["因果", "线"]  # kept equal to the translated categories
    assert layout["annotations"][0]["text"] == "因果"
    slider = layout["sliders"][0]
    assert slider["currentvalue"]["prefix"] == "因果" and [s["label"] for s in slider["steps"]] == ["因果", "无"]
    assert slider["steps"][0]["args"] == [{"name": ["因果", "无"]}, {"title.text": "无", "xaxis.title.text": "因果"}]
    assert layout["updatemenus"][0]["buttons"][0]["label"] == "因果"
    assert zh["frames"][0]["data"][0]["name"] == "因果"
    # ids and enumerated values
    assert causal["legendgroup"] == causal["uid"] == causal["meta"]["kind"] == "causal"
    assert none["hoverinfo"] == "none" and none["mode"] == causal["mode"] == "lines" and causal["type"] == "scatter"
    assert causal["customdata"] == ["causal", "causal"]  # data, shown only through a template
    assert layout["annotations"][0]["name"] == "causal" and slider["steps"][0]["name"] == "causal"
    assert slider["steps"][1]["args"][0] == ["causal"] and slider["steps"][1]["args"][1]["mode"] == "immediate"
    assert layout["updatemenus"][0]["buttons"][0]["name"] == "none" and layout["updatemenus"][0]["type"] == "buttons"
    assert zh["frames"][0]["name"] == "causal"


# --- descriptions: pieces joined by the language's rules (issue 26) ---


def test_plain_text_writes_scripts_and_subtitles() -> None:
    assert i18n.plain_text("L<sub>max</sub> × d, a<sup>pos</sup>, e<sup>(−γ)</sup>") == "Lₘₐₓ × d, aᵖᵒˢ, e⁻ᵞ"
    assert i18n.plain_text("o<sub>π(m)</sub> and 2<sup>-8/4</sup>, 2<sup>k</sup>") == "o_(π(m)) and 2^(-8/4), 2ᵏ"
    assert i18n.plain_text("U<sub>max_1</sub> and x<sup>Q</sup>") == "U_max_1 and x^Q"  # no Unicode script letter
    assert i18n.plain_text("困惑度<br><sup>训练长度 64</sup>", "zh_CN") == "困惑度；训练长度 64"
    assert i18n.plain_text("head 1<br><sub>max |w| = 0</sub>") == "head 1; max |w| = 0"
    assert i18n.plain_text("head 1:<br><span style='x'>rest</span>") == "head 1: rest"
    assert i18n.plain_text("头 1<br><sub>最大</sub>", "zh_CN") == "头 1；最大"
    assert i18n.plain_text("clipped<br>offset") == "clipped offset"


def test_tidy_spaces_chinese_by_its_rules() -> None:
    assert i18n.tidy("注意力 权重 （0.5 及以上 为黄色）", "zh_CN") == "注意力权重（0.5 及以上为黄色）"
    assert i18n.tidy("12 个头： 8 头的斜率 ，再隔一取一 16 头", "zh_CN") == "12 个头：8 头的斜率，再隔一取一 16 头"
    assert i18n.tidy("截断后 偏移，位置 0 … 11", "zh_CN") == "截断后偏移，位置 0 … 11"
    assert i18n.tidy("第 150 步：基数 10000", "zh_CN") == "第 150 步：基数 10000"
    assert i18n.tidy("a  b ( c )", "en") == "a b ( c )"


def test_join_list_writes_an_english_list() -> None:
    from posviz.i18n import join_list

    assert join_list(["a"]) == "a"
    assert join_list(["a", "b"]) == "a and b"
    assert join_list(["a", "b", "c"]) == "a, b and c"
    assert join_list(iter(["sincos-2d", "swin-bias", "rope-axial", "learned", "none"])) == (
        "sincos-2d, swin-bias, rope-axial, learned and none"
    )


def test_join_list_writes_a_chinese_list_live() -> None:
    from posviz.i18n import join_list

    set_language("zh_CN")
    assert join_list(["a", "b", "c"]) == "a、b 和 c"
    assert join_list(["a", "b"]) == "a 和 b"
    assert join_list(["a", "b", "c", "d", "e"]) == "a、b、c、d 和 e"
    assert join_list(["甲", "乙", "丙"]) == "甲、乙和丙"  # no space between two Chinese characters


def test_join_list_made_in_english_is_translated_later() -> None:
    from posviz.i18n import join_list, message_of, recording, translate

    items = [f"m{k}" for k in range(12)]
    with recording() as record:
        text = join_list(items)
    assert text == ", ".join(items[:-1]) + " and m11"
    chinese = "、".join(items[:-1]) + " 和 m11"
    assert i18n._translated_record(record, "zh_CN")[text] == chinese  # every level translated
    # whatever order the record comes in (outer messages first: each level is looked up from the
    # top, and a record is followed a few levels deep only)
    assert i18n._translated_record(dict(reversed(record.items())), "zh_CN")[text] == chinese

    @translatable
    def figure() -> go.Figure:
        return go.Figure(layout_title_text=tr("Weak: {methods}", methods=join_list(["a", "b", "c"])))

    assert translate_figure(figure().to_dict(), "zh_CN")["layout"]["title"]["text"] == "Weak: a、b 和 c"
    # two items are one message: what a glued phrase (posviz.book.glue) keeps and translates
    msgid, fields = message_of(join_list(["sincos-2d", "swin-bias"]))
    assert translate(msgid, "zh_CN", **fields) == "sincos-2d 和 swin-bias"


def test_join_list_rejects_bad_input() -> None:
    from posviz.i18n import join_list

    with pytest.raises(ValueError, match="at least one item"):
        join_list([])
    with pytest.raises(TypeError, match="not one string"):
        join_list("abc")
    with pytest.raises(TypeError, match=r"every item must be a str, got 3 \(int\)"):
        join_list(["a", 3])


def test_keyed_shows_the_key_in_english_and_the_message_in_chinese():
    from posviz.i18n import keyed, message_of, recording, set_language, translate_text

    set_language("en")
    with recording() as record:
        assert keyed("t5", "T5 bias") == "t5"
    assert record["t5"] == ["T5 bias", {}] and message_of("t5") == ["T5 bias", {}]
    assert translate_text("t5", "zh_CN", record) == translate_text("T5 bias", "zh_CN", {"T5 bias": ["T5 bias", {}]})
    assert translate_text("t5", "zh_CN", record) != "t5"
    set_language("zh_CN")
    try:
        assert keyed("t5", "T5 bias") == translate_text("t5", "zh_CN", record)
    finally:
        set_language("en")
    with pytest.raises(TypeError, match="key and msgid must be strings"):
        keyed("t5", None)
