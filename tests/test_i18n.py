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
    from posviz.widgets.models import models_explorer
    from posviz.widgets.relative import relative_explorer
    from posviz.widgets.rope import rope_explorer
    from posviz.widgets.sinusoidal import sinusoidal_explorer
    from posviz.widgets.vision import vision_explorer

    small = WindowMaxConfig(steps=20, checkpoints=(0, 10, 20), probe=16)  # as tests/test_widgets_learned.py
    return {
        "alibi": alibi_explorer,
        "attention": attention_explorer,
        "learned": lambda: learned_explorer(max_lens=(8, 12), dims=(4, 6), seeds=(0,), config=small, max_len=12, dim=6),
        "models": models_explorer,
        "relative": relative_explorer,
        "rope": rope_explorer,
        "sinusoidal": sinusoidal_explorer,
        "vision": vision_explorer,
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
    ui_words = _english_ui_words()
    shown = {i18n.plain_text(t, "zh_CN") for t in texts} | set(descriptions)
    problems = {t[:60]: p for t in sorted(shown) if (p := _problems(t, ui_words))}
    assert not problems, problems


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


def json_copy(value):
    import json

    return json.loads(json.dumps(value))


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


# --- every figure of every chapter, in Chinese: its text and its description (issue 26) ---


def _every_chapter_figure():
    """Each figure a chapter draws, as the chapter calls it (the learned chapter's on a small run)."""
    from posviz.learned import WindowMaxConfig, train_window_max
    from posviz.plots import alibi, attention, learned, relative, rope, sinusoidal

    run = train_window_max(WindowMaxConfig(max_len=12, dim=8, steps=20, checkpoints=(0, 10, 20), probe=16))
    figures = {
        "alibi-slopes": lambda: alibi.alibi_slopes_figure(range(2, 17), active_heads=12),
        "alibi-bias": lambda: alibi.alibi_bias_figure(num_heads=8, length=12),
        "alibi-window": lambda: alibi.alibi_window_figure(num_heads=8, lengths=(32, 256, 2048), mass=0.9),
        "attention-scale": attention.scale_figure,
        "attention-permutation": attention.permutation_figure,
        "learned-cost": learned.learned_cost_figure,
        "learned-table": lambda: learned.learned_table_figure(run),
        "learned-similarity": lambda: learned.learned_similarity_figure(run),
        "learned-attention": lambda: learned.learned_attention_figure(run),
        "relative-clipped": lambda: relative.clipped_positions_figure(length=16),
        "relative-xl": relative.transformer_xl_terms_figure,
        "relative-t5-buckets": relative.t5_bucket_figure,
        "relative-t5-attention": relative.t5_attention_figure,
        "rope-rotation": lambda: rope.rope_rotation_figure(dim=128, base=10000.0, pairs=(0, 8, 16, 63), offset=4),
        "rope-angle": lambda: rope.rope_angle_figure(dim=128, bases=(100.0, 10000.0, 500000.0)),
        "rope-scores": lambda: rope.rope_score_matrix_figure(dim=64, length=40),
        "rope-decay": rope.rope_decay_figure,
        "sinusoidal-heatmap": sinusoidal.sinusoidal_heatmap_figure,
        "sinusoidal-waves": sinusoidal.sinusoidal_waves_figure,
        "sinusoidal-binary": sinusoidal.binary_counter_figure,
        "sinusoidal-similarity": sinusoidal.sinusoidal_similarity_figure,
        "sinusoidal-extrapolation": sinusoidal.sinusoidal_extrapolation_figure,
    }
    import json

    return {name: json.loads(make().to_json()) for name, make in figures.items()}


@pytest.fixture(scope="module")
def chapter_figures():
    set_language("en")  # made in English, as the book's execution caches them
    return _every_chapter_figure()


CJK_CHAR = "\u3400-\u4dbf\u4e00-\u9fff"
SENTENCE_WORDS = {"the", "hungry", "dog", "bites", "man"}  # the attention chapter's example sentence (data)
FULL_WIDTH = "，。：；！？、（）《》“”"


def _english_ui_words() -> set[str]:
    """Words of the figures' English messages that no translation keeps (names such as RoPE,
    ALiBi, softmax or clip appear in the translations too, so they are not UI words)."""
    from babel.messages.pofile import read_po

    def words(text: str) -> set[str]:
        text = re.sub(r"%\{[^}]*\}|\{[^}]*\}|<[^>]+>", " ", text)
        return {w.lower() for w in re.findall(r"(?<![\w_])[A-Za-z]{3,}(?![\w_])", text)}

    english, kept = set(), set()
    for po in sorted((i18n.LOCALE / "zh_CN" / "LC_MESSAGES").glob("**/*.po")):
        if po.parent.name == "selfcheck":
            continue
        with po.open("rb") as f:
            for m in read_po(f):
                if m.id and m.string:
                    english |= words(m.id)
                    kept |= words(m.string)
    return english - kept


def _problems(text: str, ui_words: set[str]) -> list[str]:
    problems = []
    if re.search(r"(?<![\w′)\]])_|_(?![\w(])", text):
        problems.append("a stray _")
    if m := re.search(rf"\s[{FULL_WIDTH}]|[（“]\s", text):
        problems.append(f"a space by full-width punctuation: {text[max(0, m.start() - 8) : m.end() + 8]!r}")
    if m := re.search(rf"[{CJK_CHAR}]\s+[{CJK_CHAR}]", text):
        problems.append(f"a space between Chinese characters: {text[max(0, m.start() - 8) : m.end() + 8]!r}")
    if m := re.search(r"(?<![\w.,-])\d{1,3}(?:[, \u2009\u202f]\d{3})+(?![\w,])|\d %(?!\{)", text):
        problems.append(f"a number with a separator: {m.group(0)!r}")  # Chinese writes 10000 and 90%
    bare = re.sub(r"“[^”]*”", " ", text)  # a quoted example sentence is data, not UI
    bare = re.sub(r"%\{[^}]*\}", " ", bare)  # Plotly's %{text}, %{x:,}: placeholders, not words
    words = re.findall(r"(?<![\w_])[A-Za-z]{3,}(?![\w_])", bare)
    left = sorted({w for w in words if w.lower() in ui_words and w not in SENTENCE_WORDS})
    if left:
        problems.append(f"English UI words {left}")
    return problems


def test_every_chapter_figure_reads_as_chinese(chapter_figures) -> None:
    """Each figure translated as the Chinese page renders it: its description (the page's
    'figure in words') and every text a reader sees have no stray _, no space before or after
    full-width punctuation or between Chinese characters, and no English word of the UI."""
    from posviz.sphinxext._describe import describe_figure

    ui_words = _english_ui_words()
    assert {"position", "head", "weight", "sinusoidal", "slider"} <= ui_words  # the vocabulary is real
    found = {}
    for name, figure in chapter_figures.items():
        zh = translate_figure(json_copy(figure), "zh_CN")
        title, words = describe_figure(zh, "zh_CN")
        problems = _problems(title, ui_words) + _problems(words, ui_words)
        texts = {i18n.plain_text(t, "zh_CN") for t in _texts(zh)}
        problems += [f"{p} in {t[:60]!r}" for t in sorted(texts) for p in _problems(t, ui_words)]
        if problems:
            found[name] = problems[:4]
    assert not found, found


def test_the_lab_figures_descriptions_read_as_chinese() -> None:
    """The extrapolation chapter's figures, from the published results: their descriptions pass
    the same checks (their own texts are checked with the lab's figures)."""
    import json

    from posviz.lab import figures as lab
    from posviz.lab.results import load_published
    from posviz.sphinxext._describe import describe_figure

    results = load_published()
    ui_words = _english_ui_words()
    found = {}
    names = ("perplexity_figure", "perplexity_at_length_figure", "paired_difference_figure", "cost_figure")
    for name in (*names, "inference_at_length_figure"):
        zh = translate_figure(json.loads(getattr(lab, name)(results).to_json()), "zh_CN")
        title, words = describe_figure(zh, "zh_CN")
        if problems := _problems(title, ui_words) + _problems(words, ui_words):
            found[name] = problems
    assert not found, found


def test_every_chapter_figure_described_in_english_has_no_stray_marks(chapter_figures) -> None:
    from posviz.sphinxext._describe import describe_figure

    for name, figure in chapter_figures.items():
        title, words = describe_figure(json_copy(figure), "en")
        assert not re.search(r"(?<![\w′)\]])_|_(?![\w(])", title + " " + words), (name, words)
        assert not re.search(r"[\u4e00-\u9fff]", words), name


def test_the_checks_see_each_reported_defect() -> None:
    """The reviewers' examples (issue 26) fail the checks above."""
    ui = {"position", "sinusoidal"}
    for bad in (
        "0.5 _max |权重…|",
        "4 (L = 2048) _长行规则",
        "截断后 偏移",
        "注意力 权重 （0.5 及以上 为黄色）",
        "12 个头： 8 头的斜率 ，再隔一取一",
        "no position 1.4e-16 · sinusoidal 0.56",
        "基数 10 000",
        "从 10 到 100,000",
        "90 % 窗口",
    ):
        assert _problems(bad, ui), bad
    assert _problems("可学习的位置表，L_max × d（d = 768）；o′_m − o_(π(m))；GPT-3 175B；90%；10000", ui) == []


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
