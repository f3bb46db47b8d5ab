"""A mutation pass: apply each registered textual mutant to a copy of the tree, run the tests that
should kill it, and report the survivors.

Mutants live in ``tools/mutants/*.toml``, one file per area, each entry::

    [[mutant]]
    id = "shaw-mask-flipped"            # unique
    file = "posviz/relative.py"         # relative to the repository root
    find = "mask.logical_not()"         # exact text; must occur exactly once in the file
    replace = "mask"
    tests = ["tests/test_relative.py"]  # pytest arguments (files or node ids)
    why = "Shaw's boolean mask read in the wrong sense"

Usage::

    python tools/mutation.py                 # every mutant
    python tools/mutation.py --area lab      # tools/mutants/lab.toml only
    python tools/mutation.py --id shaw-mask-flipped

The tree is copied once (tracked and untracked-but-not-ignored files) into a temporary folder;
each mutant is applied there, its tests run with ``PYTHONPATH`` pointing at the copy (which wins
over the editable install), and the file is restored. A mutant *survives* when its tests pass.
The unmutated copy must pass each mutant's tests first, or the mutant counts as an error. Exit
status 1 when any mutant survives or errs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "tools" / "mutants"


def load(area: str | None, ident: str | None) -> list[dict]:
    files = sorted(MUTANTS.glob("*.toml")) if area is None else [MUTANTS / f"{area}.toml"]
    mutants = []
    for path in files:
        for entry in tomllib.loads(path.read_text(encoding="utf-8")).get("mutant", []):
            entry["area"] = path.stem
            mutants.append(entry)
    ids = [m["id"] for m in mutants]
    duplicated = {i for i in ids if ids.count(i) > 1}
    if duplicated:
        raise SystemExit(f"duplicate mutant ids: {sorted(duplicated)}")
    if ident is not None:
        mutants = [m for m in mutants if m["id"] == ident]
        if not mutants:
            raise SystemExit(f"no mutant with id {ident!r}")
    return mutants


def copy_tree(dest: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, check=True, capture_output=True,
    ).stdout.split(b"\0")
    for raw in listed:
        if not raw:
            continue
        src = ROOT / raw.decode()
        if not src.is_file():
            continue
        target = dest / raw.decode()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(src.read_bytes())


def run_tests(copy: Path, tests: list[str]) -> tuple[int, str]:
    env = dict(os.environ, PYTHONPATH=str(copy), POSVIZ_MUTATION="1")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *tests],
        cwd=copy, env=env, capture_output=True, text=True,
    )
    return proc.returncode, (proc.stdout + proc.stderr)[-1500:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--area", help="one file of tools/mutants (its stem)")
    parser.add_argument("--id", dest="ident", help="one mutant")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated run of each test set")
    args = parser.parse_args(argv)
    mutants = load(args.area, args.ident)
    survivors, errors = [], []
    with tempfile.TemporaryDirectory(prefix="posviz-mutants-") as tmp:
        copy = Path(tmp)
        copy_tree(copy)
        baseline_ok: dict[tuple[str, ...], bool] = {}
        for m in mutants:
            path = copy / m["file"]
            original = path.read_text(encoding="utf-8")
            count = original.count(m["find"])
            if count != 1:
                errors.append((m, f"'find' occurs {count} times in {m['file']} (must be once)"))
                print(f"ERROR    {m['area']}/{m['id']}: find occurs {count} times", flush=True)
                continue
            key = tuple(m["tests"])
            if not args.no_baseline and key not in baseline_ok:
                rc, tail = run_tests(copy, m["tests"])
                baseline_ok[key] = rc == 0
                if rc != 0:
                    print(f"baseline fails for {list(key)}:\n{tail}", flush=True)
            if not args.no_baseline and not baseline_ok[key]:
                errors.append((m, "its tests fail without the mutant"))
                print(f"ERROR    {m['area']}/{m['id']}: baseline fails", flush=True)
                continue
            path.write_text(original.replace(m["find"], m["replace"]), encoding="utf-8")
            start = time.perf_counter()
            try:
                rc, tail = run_tests(copy, m["tests"])
            finally:
                path.write_text(original, encoding="utf-8")
            took = time.perf_counter() - start
            if rc == 0:
                survivors.append(m)
                print(f"SURVIVED {m['area']}/{m['id']} ({took:.0f} s): {m.get('why', '')}", flush=True)
            else:
                print(f"killed   {m['area']}/{m['id']} ({took:.0f} s)", flush=True)
    killed = len(mutants) - len(survivors) - len(errors)
    print(f"\n{len(mutants)} mutants: {killed} killed, {len(survivors)} survived, {len(errors)} errors")
    for m, why in errors:
        print(f"  error {m['area']}/{m['id']}: {why}")
    return 1 if survivors or errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
