"""A JupyterLab server for tests/test_jupyterlab.py: JupyterLab from this environment on 127.0.0.1,
a free port and a random token, with the test's settings, and the reader's fresh environment
(tests/fresh_env.py) as its kernel."""

from __future__ import annotations

import json
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from conftest import thread_env
from fresh_env import FreshEnvironment

# JupyterLab settings for the test: every cell in the DOM (no windowing), no autosave (the test
# saves before reloading), no news or update checks (no network).
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
}


# `python -m jupyterlab` (its __main__.py) without rfc3987-syntax, as in the test processes
# (conftest.py): jupyter-events' jsonschema built its parser at each server's start, 1.1 s of CPU
SERVER = "import sys; sys.modules['rfc3987_syntax'] = None; from jupyterlab.labapp import main; sys.exit(main())"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A JupyterLab server on 127.0.0.1 serving ``root``."""

    def __init__(self, root: Path, home: Path, fresh: FreshEnvironment) -> None:
        self.root = root
        self.token = secrets.token_hex(16)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        settings = home / "settings"
        for name, values in SETTINGS.items():
            path = settings / f"{name}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        # no MyST renderer: the generated notebooks must read well without it (Colab loads none)
        labconfig = home / "config" / "labconfig"
        labconfig.mkdir(parents=True, exist_ok=True)
        (labconfig / "page_config.json").write_text(json.dumps({"disabledExtensions": {"jupyterlab-myst": True}}))
        env = {
            **fresh.env(),  # no PYTHONPATH: the kernels import the posviz that the setup cell installed
            "JUPYTER_PATH": str(fresh.jupyter_path),  # where the fresh environment's kernel spec is
            "JUPYTERLAB_SETTINGS_DIR": str(settings),
            "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
            "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
            "JUPYTER_CONFIG_DIR": str(home / "config"),
            "IPYTHONDIR": str(home / "ipython"),
            **thread_env(),  # in a parallel run (make test), the kernels' torch keeps to this worker's cores
        }
        self.log = (home / "server.log").open("w")
        self.process = subprocess.Popen(
            [
                sys.executable, "-c", SERVER, "--no-browser", "--allow-root",
                "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root}",
                "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            ],
            env=env, stdout=self.log, stderr=subprocess.STDOUT, cwd=root,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while True:
            try:
                self.api("GET", "status")
                break
            except (urllib.error.URLError, ConnectionError):
                if self.process.poll() is not None or time.monotonic() > deadline:
                    log = (home / "server.log").read_text()[-3000:]
                    raise RuntimeError(f"JupyterLab did not start: {log}") from None
                time.sleep(0.25)

    def api(self, method: str, path: str) -> object:
        request = urllib.request.Request(
            f"{self.url}/api/{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def shut_down_kernels(self) -> None:
        for session in self.api("GET", "sessions"):
            self.api("DELETE", f"sessions/{session['id']}")

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()
