# Two jobs: `make book` (set up, then build the book) and `make test` (set up, then lint and test).
# Both create a virtual environment in .venv and install the CPU build of PyTorch first, so pip
# never pulls a multi-GB CUDA build. Override TORCH to pick another torch, e.g.
#   make book TORCH="torch --index-url https://download.pytorch.org/whl/cpu"
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH ?= torch==2.13.0
BOOK_FLAGS ?= -W -n --keep-going

.PHONY: book test setup-book setup-test lint clean translations

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip

$(VENV)/.torch: | $(BIN)/python
	$(BIN)/python -m pip install $(TORCH)
	touch $@

$(VENV)/.book: pyproject.toml requirements.txt $(VENV)/.torch
	$(BIN)/python -m pip install -e ".[book]"
	touch $@

$(VENV)/.test: pyproject.toml $(VENV)/.book
	$(BIN)/python -m pip install -e ".[test]"
	touch $@

setup-book: $(VENV)/.book
setup-test: $(VENV)/.test

# jupyter-cache keys on a notebook's code only: when posviz changes, the cached outputs are stale.
# (posviz.sphinxext only renders outputs, at build time: a change there needs no re-execution.)
_build/.posviz-stamp: $(shell find posviz -name '*.py' -not -path 'posviz/sphinxext/*' 2>/dev/null)
	rm -rf _build/.jupyter_cache
	mkdir -p _build && touch $@

book: $(VENV)/.book _build/.posviz-stamp
	[ node_modules/.package-lock.json -nt package-lock.json ] || npm ci --no-audit --no-fund
	@# --all re-reads every page, so a warning on an unchanged page fails again; execution stays cached
	$(BIN)/jupyter-book build . --all $(BOOK_FLAGS)
	@# the Chinese edition (_build/html/zh) from locale/zh_CN: same sources, same execution cache
	$(BIN)/python tools/i18n.py html

# English prose changed: bring the catalogs up to date (changed messages come back untranslated),
# translate them, then `make test` (it fails while a message is untranslated or fuzzy).
translations: $(VENV)/.book
	$(BIN)/python tools/i18n.py update
	$(BIN)/python tools/notebooks.py  # the Chinese notebooks (zh/book/*.ipynb) follow the catalogs

lint: $(VENV)/.test
	$(BIN)/ruff check .

test: $(VENV)/.test lint book
	$(BIN)/python -m pytest

clean:
	rm -rf _build
