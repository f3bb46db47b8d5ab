"""Build the book, both editions, as ``make book`` does: the English edition into ``_build/html``
(what ``jupyter-book build . --all -W -n --keep-going`` builds), then each translation
(tools/i18n.py's ``html``) into its folder under it.

    python tools/build_book.py --jobs 2

``--jobs``: Sphinx's worker processes (``sphinx-build -j``). jupyter-book's command line has no
such option, so the book is built through the same Sphinx wrapper it calls, with the same
settings. With 2, Sphinx reads (and executes) two chapters at a time and writes two pages at a
time: a fresh build took 119 s instead of 172 s here, and its pages were byte for byte a serial
build's, but for the timings that the chapters measure as they run. posviz.sphinxext declares
the two extensions that say nothing about parallel builds safe (posviz/sphinxext/_build_speed.py).

The translations build in a process of their own: built in the English build's process, a
Chinese page kept Sphinx's own words in English (tests/test_built_sphinx_words.py).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import i18n


def english(jobs: int = 1) -> int:
    """The English edition, every page read again (``--all``), warnings as errors, nit-picky."""
    return i18n.sphinx("html", i18n.BUILD / "html", i18n.BUILD / ".doctrees", {}, True, jobs=jobs, freshenv=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1, help="Sphinx's worker processes (default 1)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be 1 or more, not {args.jobs}")
    start = time.monotonic()
    rc = english(args.jobs)
    if rc:
        return rc
    built = time.monotonic()
    # in a process of its own: after the English build, Sphinx's own words (its index titles, the
    # field names of the API pages) stayed English in a Chinese build in the same process
    rc = subprocess.call([sys.executable, str(Path(__file__).with_name("i18n.py")), "html", "--jobs", str(args.jobs)])
    end = time.monotonic()
    print(f"book: English {built - start:.0f} s, translations {end - built:.0f} s, with {args.jobs} job(s)")
    return rc


if __name__ == "__main__":
    sys.exit(main())
