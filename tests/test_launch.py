"""Launching the chapters as a new reader would: Colab, Binder and a fresh environment.

* Every chapter has a setup cell generated from ``_config.yml`` and a paired ``.ipynb`` that is
  up to date (``tools/notebooks.py --check``), in plain Markdown (Colab renders no MyST):
  equation numbers, author–year citations linked to the bibliography, collapsed solutions.
* Every chapter page of the built site has Colab, Binder and live-code (Thebe) buttons whose
  targets are the repository in ``_config.yml`` and the chapter's own ``.ipynb``.
* Stand-in for Colab: a wheel of posviz, a fresh virtual environment with only the reader-facing
  requirements (no posviz), the setup cell pointed at the wheel (``POSVIZ_INSTALL``), and every
  chapter notebook executed there from a clean state.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(os.environ.get("POSVIZ_SITE", ROOT / "_build" / "html"))
sys.path.insert(0, str(ROOT / "tools"))

import myst_plain  # noqa: E402
import notebooks  # noqa: E402
from fresh_env import fresh_environment, has_chinese, setup_cell  # noqa: E402


def chapter_names() -> list[str]:
    return [p.stem for p in notebooks.chapters()]


def test_there_are_chapters():
    assert len(chapter_names()) >= 7


def test_notebooks_are_in_sync():
    stale = notebooks.sync(check=True)
    assert not stale, f"run `python tools/notebooks.py`: out of date: {stale}"


@pytest.mark.parametrize("name", chapter_names())
def test_setup_cell_comes_from_the_config(name):
    nb = json.loads((ROOT / "book" / f"{name}.ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert "colab-setup" in code[0]["metadata"]["tags"]
    source = "".join(code[0]["source"])
    repo = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    assert f"git+{repo['url']}@{repo['branch']}" in source
    assert all(not c["outputs"] for c in code), "committed notebooks carry no outputs"


MYST_LEFT = {
    "role": re.compile(r"\{[a-z][\w:-]*\}`"),
    "directive": re.compile(r"^(:::|```)\{", re.M),
    "target": re.compile(r"^\([^()\s]+\)=\s*$", re.M),
    "equation label": re.compile(r"\$\$[ \t]*\([^()\s]+\)[ \t]*$", re.M),
}


@pytest.mark.parametrize("name", chapter_names())
def test_notebook_markdown_is_plain(name):
    """What Colab (and JupyterLab without jupyterlab-myst) shows: no MyST markup left."""
    md = (ROOT / "book" / f"{name}.md").read_text()
    nb = json.loads((ROOT / "book" / f"{name}.ipynb").read_text())
    text = "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    left = {kind: pattern.findall(text)[:3] for kind, pattern in MYST_LEFT.items() if pattern.search(text)}
    assert not left, f"{name}.ipynb still has MyST markup: {left}"
    labelled = len(myst_plain.LABELLED_MATH.findall(md))
    number = myst_plain.chapter_numbers()[name]
    assert [int(n) for n in re.findall(rf"\\tag\{{{number}\.(\d+)\}}", text)] == list(range(1, labelled + 1))
    assert text.count("<details>") == text.count("</details>") == md.count("class: dropdown")
    references = myst_plain.site_url() + "book/references.html"
    assert ("{cite" in md) == (f"]({references})" in text)


def test_plain_markdown_of_each_construct():
    equations, _ = myst_plain._labels()
    label, number = next(iter(equations.items()))
    key = next(iter(myst_plain._bibliography()))
    names, year = myst_plain._bibliography()[key]
    authors = myst_plain._authors(names, "en")
    source = (
        f"$$\nx = 1\n$$ ({label})\n\nSee {{eq}}`{label}` and {{cite:p}}`{key}`; {{cite:t}}`{key}` says so.\n\n"
        ":::{admonition} Solution\n:class: dropdown\n\nIt is $x$.\n\n```python\nx = 1\n```\n:::\n\n"
        ":::{note}\nA note.\n:::\n\nSee [the API](api.md#top)."
    )
    out = myst_plain.plain_markdown(source)
    site = myst_plain.site_url()
    assert f"x = 1\n\\tag{{{number}}}\n$$" in out
    assert f"See ({number}) and [[{authors}, {year}]({site}book/references.html)]" in out
    assert f"[{authors} [{year}]]({site}book/references.html) says so" in out
    assert "<details>\n<summary>Solution</summary>\n\nIt is $x$.\n\n```python\nx = 1\n```\n\n</details>" in out
    assert "> **Note**\n>\n> A note." in out
    assert f"[the API]({site}book/api.html#top)" in out


def test_bibliography_link_follows_the_config():
    cfg = {"repository": {"url": "https://github.com/Someone/fork"}}
    assert myst_plain.site_url(cfg) == "https://someone.github.io/fork/"
    assert myst_plain.site_url({**cfg, "html": {"baseurl": "https://example.org/book"}}) == "https://example.org/book/"


def test_setup_cell_follows_the_config(tmp_path):
    cfg = {"repository": {"url": "https://github.com/someone/fork", "branch": "dev"}}
    assert "posviz @ git+https://github.com/someone/fork@dev" in notebooks.setup_source(cfg)


@pytest.mark.book
@pytest.mark.skipif(not SITE.exists(), reason="the book is not built (make book)")
@pytest.mark.parametrize("name", chapter_names())
def test_launch_buttons_point_at_the_chapter_notebook(name):
    repo = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    org_repo = re.sub(r"^https://github.com/", "", repo["url"]).rstrip("/")
    html = (SITE / "book" / f"{name}.html").read_text()
    links = set(re.findall(r'href="(https://(?:colab\.research\.google\.com|mybinder\.org)[^"]+)"', html))
    colab = f"https://colab.research.google.com/github/{org_repo}/blob/{repo['branch']}/book/{name}.ipynb"
    binder = f"https://mybinder.org/v2/gh/{org_repo}/{repo['branch']}?urlpath=lab/tree/book/{name}.ipynb"
    assert colab in links, links
    assert binder in links, links
    assert 'class="btn btn-sm dropdown-item thebe' in html or "initThebe" in html or "thebe-launch" in html
    assert (ROOT / "book" / f"{name}.ipynb").exists()


@pytest.mark.book
@pytest.mark.skipif(not (SITE / "zh").exists(), reason="the Chinese edition is not built (make book)")
@pytest.mark.parametrize("name", chapter_names())
def test_chinese_pages_launch_the_chinese_notebook(name):
    repo = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    org_repo = re.sub(r"^https://github.com/", "", repo["url"]).rstrip("/")
    html = (SITE / "zh" / "book" / f"{name}.html").read_text()
    links = set(re.findall(r'href="(https://(?:colab\.research\.google\.com|mybinder\.org)[^"]+)"', html))
    assert f"https://colab.research.google.com/github/{org_repo}/blob/{repo['branch']}/zh/book/{name}.ipynb" in links
    assert f"https://mybinder.org/v2/gh/{org_repo}/{repo['branch']}?urlpath=lab/tree/zh/book/{name}.ipynb" in links
    assert (ROOT / "zh" / "book" / f"{name}.ipynb").exists()


@pytest.mark.slow
@pytest.mark.install
def test_the_setup_cell_installs_posviz_in_a_fresh_environment(tmp_path_factory):
    """Colab stand-in (tests/fresh_env.py): no posviz before the setup cell; the cell, the same in
    every chapter (a Chinese one's then sets the language), installs it from a wheel, figure
    catalogs included. Every cell of every chapter then runs there (but the 2-minute live rerun of
    the lab, tagged lab-rerun), the explorer cells too: tests/test_jupyterlab.py's kernels are
    that environment's."""
    fresh = fresh_environment(tmp_path_factory)
    assert not fresh.posviz_before, "the fresh environment must not have posviz before the setup cell runs"
    for name in chapter_names():  # a Chinese notebook's cell then switches the figures' language
        assert setup_cell(ROOT / "book" / f"{name}.ipynb") == fresh.setup_cell, f"{name}.ipynb: another setup cell"
        chinese = setup_cell(ROOT / "zh" / "book" / f"{name}.ipynb")
        assert chinese.startswith(fresh.setup_cell) and "set_language" in chinese, f"zh/book/{name}.ipynb: {chinese}"
    assert "Version:" in fresh.installed, "the setup cell installed posviz from the wheel"
    assert has_chinese(fresh.chinese), fresh.chinese


def test_chinese_notebooks_cite_in_the_chinese_form():
    """A zh notebook names a paper's authors as the Chinese pages do ("Vaswani 等人", "A 和 B")."""
    many = next(k for k, (names, _) in myst_plain._bibliography().items() if len(names) > 2)
    names, year = myst_plain._bibliography()[many]
    assert myst_plain._authors(names, "en") == f"{names[0]} et al."
    assert myst_plain._authors(names, "zh_CN") == f"{names[0]} 等人"
    assert myst_plain._authors(["A", "B"], "zh_CN") == "A 和 B" and myst_plain._authors(["A", "B"], "en") == "A and B"
    old = dict(myst_plain._edition)
    try:
        myst_plain._edition.update(language="zh_CN", folder="zh", catalog={})
        text = myst_plain._cite("cite:p", many)
    finally:
        myst_plain._edition.clear()
        myst_plain._edition.update(old)
    assert f"{names[0]} 等人，{year}" in text and "et al." not in text
