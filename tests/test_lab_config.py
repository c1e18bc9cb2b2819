"""`make lab` as a learner meets it: localhost, a token, no news pop-up, 00_tour first.

Starts the real command (`scripts/lab.sh`, which `make lab` runs) with a hostile
global config in a fake home folder (all interfaces, no token) and checks that
none of it takes effect.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    hostile = home / ".jupyter"
    hostile.mkdir()
    bad = {
        "ServerApp": {"ip": "0.0.0.0", "allow_remote_access": True},
        "IdentityProvider": {"token": ""},
    }
    for name in ("jupyter_server_config.json", "jupyter_lab_config.json"):
        (hostile / name).write_text(json.dumps(bad))
    port, token = _free_port(), "batchlab-test-token"
    env = {
        **os.environ,
        "HOME": str(home),
        "JUPYTER_TOKEN": token,
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "user-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "VENV": str(Path(sys.executable).parent.parent),
    }
    log = open(home / "lab.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            "bash",
            str(ROOT / "scripts" / "lab.sh"),
            "--no-browser",
            f"--port={port}",
            "--ServerApp.port_retries=0",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2).close()
                break
            except (urllib.error.URLError, ConnectionError):
                if proc.poll() is not None:
                    pytest.fail(f"lab.sh exited:\n{(home / 'lab.log').read_text()[-3000:]}")
                time.sleep(0.5)
        else:
            pytest.fail(f"JupyterLab did not start:\n{(home / 'lab.log').read_text()[-3000:]}")
        yield base, token, home / "lab.log"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def test_a_token_is_required(lab):
    base, token, _ = lab
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f"{base}/api/contents", timeout=5)
    assert e.value.code in (401, 403)
    with urllib.request.urlopen(f"{base}/api/contents?token={token}", timeout=5) as r:
        names = {item["name"] for item in json.load(r)["content"]}
    assert "00_tour.ipynb" in names  # the notebooks folder is the root


def test_bound_to_localhost_despite_a_global_config(lab):
    _, _, log = lab
    text = log.read_text()
    assert "127.0.0.1" in text and "0.0.0.0" not in text


def test_no_news_popup_and_00_tour_opens_first(lab):
    base, token, _ = lab
    url = f"{base}/lab/api/settings/@jupyterlab/apputils-extension:notification?token={token}"
    with urllib.request.urlopen(url, timeout=10) as r:
        schema = json.load(r)["schema"]["properties"]  # overrides.json sets the defaults
    assert schema["fetchNews"]["default"] == "false"  # "Never" ("none" would ask)
    assert schema["checkForUpdates"]["default"] is False
    with urllib.request.urlopen(f"{base}/?token={token}", timeout=10) as r:
        assert r.geturl().split("?")[0].endswith("/lab/tree/00_tour.ipynb")
