# `make book` (set up, then build the book), `make check` (set up, lint and the tests that need no
# built book and no browser: a couple of minutes) and `make test` (set up, lint, build the book if
# its sources changed since the last build, then the whole suite). See the README's *Tests*.
# Both create a virtual environment in .venv and install the CPU build of PyTorch first, so pip
# never pulls a multi-GB CUDA build. Override TORCH to pick another torch, e.g.
#   make book TORCH="torch --index-url https://download.pytorch.org/whl/cpu"
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH ?= torch==2.13.0
# pytest-xdist workers and Sphinx's build processes: one per core, at most 4 (each browser test
# worker runs its own Chromium)
JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -gt 4 ] && n=4; echo $$n)
# --dist load, not loadgroup: pytest-xdist 3.8's xdist_group marker does nothing under pytest 9.2
# (xdist renames item._nodeid; pytest 9.2 reads item._id). A conftest scheduler that kept the
# JupyterLab chapters on one worker, with one server, measured the same as load: 269.6 s vs 269.5 s
# for four chapters and five unit-test files on 2 workers; and starting the longest tests first
# made the whole suite slower (1,624 s vs 1,412 s here: two browser-and-kernel tests at once).
XDIST = -n $(JOBS) --dist load
# pytest keeps compiled bytecode between runs (__pycache__, ignored by git): where the environment
# sets PYTHONDONTWRITEBYTECODE (this machine does), every run compiled posviz afresh and rewrote
# every test file's asserts again, 4 of each worker's 18 s of collection here.
PYTEST = env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest
# Wall-time budgets (seconds) for pytest in `make check` and `make test`; a run over its budget
# fails (tests/conftest.py), and every run prints its time at the end, beside its goal.
# TEST_BUDGET: what CI can give the suite and stay under 35 minutes (2,100 s) with its set-up and
# book build. TEST_GOAL is issue 25's 8 minutes for all of `make test`, less lint and set-up;
# CHECK_GOAL its 2 minutes for `make check`, and CHECK_BUDGET leaves room for a slow day. Every run
# prints its time beside its goal. This machine's speed drifts by up to 50 % between sessions (a
# fixed Python loop: 2.3 s on a fast day, 3.0-3.8 s on a slow one), so compare only runs made
# together. Measured in fresh clones after `make book`, all of `make test`: 7 m 16 s to 8 m 44 s
# on fast days (pytest 420-509 s, 800-960 s of CPU); 10 m 27 s and 10 m 42 s on a slower day
# (610 and 621 s of pytest, 1,176-1,202 s of CPU; the checkout before the page test's slider check
# was mended took 639 s there, so mending it cost nothing); 11 m 32 s and 11 m 34 s on a slow one
# (671 and 688 s, 1,307 and 1,329 s of CPU, 2,608 tests), and 11 m 1 s on 7 December once the
# explorers handed Plotly only what changed (640 s, 1,249 s of CPU, 2,626 tests; the Python loop
# 3.1-3.2 s), 11 m 32 s later that day (672 s, 1,312 s of CPU, 2,630 tests; the loop 2.5 s: it
# does not predict the browsers' CPU), 11 m 27 s on 8 December (664 s, 1,291 s of CPU, 2,630
# tests). The machine slowed, not the suite: 0177683, 7 m 16 s (420 s, 802 s of CPU) in a fresh
# clone on 7 December's morning, took 11 m 28 s (664 s, 1,301 s of CPU) on 8 December, right
# after the head's run. `make check`: 66-72 s on fast days, 102-138 s on slow ones. These numbers
# change by change: `git log -p Makefile`.
CHECK_BUDGET ?= 300
CHECK_GOAL ?= 120
TEST_BUDGET ?= 1500
TEST_GOAL ?= 460

.PHONY: book check test shots setup-book setup-test lint clean translations

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip

$(VENV)/.torch: | $(BIN)/python
	$(BIN)/python -m pip install $(TORCH)
	touch $@

$(VENV)/.book: pyproject.toml requirements.txt $(VENV)/.torch
	$(BIN)/python -m pip install -e ".[book]"
	touch $@

# --no-compile: pip byte-compiles every module it installs, and the test tools are mostly modules
# no test imports (transformers alone: 9.1 s with, 1.4 s without, here); Python compiles the ones
# a test imports when it first imports them, and pytest keeps them (PYTEST, above, unsets PYTHONDONTWRITEBYTECODE).
$(VENV)/.test: pyproject.toml $(VENV)/.book
	$(BIN)/python -m pip install --no-compile -e ".[test]"
	touch $@

setup-book: $(VENV)/.book
setup-test: $(VENV)/.test

# jupyter-cache keys on a notebook's code only: when posviz changes, the cached outputs are stale.
# (posviz.sphinxext only renders outputs, at build time: a change there needs no re-execution.)
_build/.posviz-stamp: $(shell find posviz -name '*.py' -not -path 'posviz/sphinxext/*' 2>/dev/null)
	rm -rf _build/.jupyter_cache
	mkdir -p _build && touch $@

# The browser assets (package.json): MathJax, plotly.js and esbuild, axe-core for the tests.
node_modules/.package-lock.json: package-lock.json
	npm ci --no-audit --no-fund

# The book's plotly.js: the trace types its figures draw (tools/plotly_bundle.mjs).
PLOTLY_BUNDLE := node_modules/.posviz/plotly-book.min.js
$(PLOTLY_BUNDLE): tools/plotly_bundle.mjs node_modules/.package-lock.json
	node tools/plotly_bundle.mjs $@

# tools/build_book.py: what `jupyter-book build . --all -W -n --keep-going` builds (every page re-read, so
# a warning on an unchanged page fails again; execution stays cached), then the Chinese edition
# (_build/html/zh) from locale/zh_CN with the same execution cache, each in $(JOBS) Sphinx
# processes (jupyter-book's command line cannot ask for them).
book: $(VENV)/.book _build/.posviz-stamp $(PLOTLY_BUNDLE)
	$(BIN)/python tools/build_book.py --jobs $(JOBS)
	touch _build/.book-stamp

# What the book is built from: `make test` rebuilds it only when one of these is newer than the
# last build (`make book` always rebuilds).
BOOK_SOURCES := $(shell find book locale posviz tools -type f -not -name '*.pyc' -not -path '*/__pycache__/*' \
	-not -path '*/.ipynb_checkpoints/*' 2>/dev/null) _config.yml _toc.yml package.json package-lock.json \
	pyproject.toml requirements.txt
_build/.book-stamp: $(BOOK_SOURCES)
	$(MAKE) book

# English prose changed: bring the catalogs up to date (changed messages come back untranslated),
# translate them, then `make test` (it fails while a message is untranslated or fuzzy).
translations: $(VENV)/.book
	$(BIN)/python tools/i18n.py update
	$(BIN)/python tools/notebooks.py  # the Chinese notebooks (zh/book/*.ipynb) follow the catalogs

lint: $(VENV)/.test
	$(BIN)/ruff check .

check: $(VENV)/.test lint
	$(PYTEST) $(XDIST) -m "not browser and not book and not install" --time-budget=$(CHECK_BUDGET) --time-goal=$(CHECK_GOAL)

test: $(VENV)/.test lint _build/.book-stamp
	$(PYTEST) $(XDIST) --time-budget=$(TEST_BUDGET) --time-goal=$(TEST_GOAL)

# The browser tests again, with screenshots for review in screenshots/ (every page full-size, at a
# phone's width and in dark mode; every JupyterLab explorer): `make test` takes none.
shots: $(VENV)/.test _build/.book-stamp
	POSVIZ_SHOTS=$(CURDIR)/screenshots $(PYTEST) $(XDIST) -m browser

clean:
	rm -rf _build
