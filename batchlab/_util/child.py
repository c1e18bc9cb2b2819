"""Every fresh Python process the kit starts (but the multi-process launcher's): one helper.

``task`` (a kit function, or ``"module:name"``) and ``payload`` (cloudpickled) go in on stdin;
``task(payload)``'s dict comes back as JSON in a 0600 file: nothing the child writes is unpickled.
"""

from __future__ import annotations

import importlib
import json
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

import cloudpickle

TIMEOUT = 600.0
#: the child's first line (not ``-m``: runpy would import this module twice)
_ENTRY = "import sys; from batchlab._util.child import main; main(sys.argv[1])"


class ChildResult(NamedTuple):
    """What a child answered: its JSON ``reply`` (None: it wrote none), exit status, stderr."""

    reply: dict | None
    returncode: int | None  # None: killed at the timeout
    stderr: str

    @property
    def why(self) -> str:
        """Why there is no reply, in one line."""
        if self.returncode is None:
            return "out of time"
        last = self.stderr.strip().splitlines()[-1:] or ["no message"]
        return f"the process died (exit status {self.returncode}: {last[0][:160]})"


def run_child(
    task: Any, payload: Any, *, timeout: float = TIMEOUT, env: dict | None = None
) -> ChildResult:
    """Runs ``task(payload)`` in a fresh Python (parent's environment and import path, plus
    ``env``); its stdout is passed through. Killed after ``timeout`` s: ``reply=None``."""
    data = payload if isinstance(payload, bytes) else cloudpickle.dumps(payload)
    fd, path = tempfile.mkstemp(prefix="batchlab-child-", suffix=".json")
    os.close(fd)  # mkstemp made it 0600: only this user can write it
    pythonpath = os.pathsep.join(p for p in sys.path if p)
    try:
        try:
            proc = subprocess.run(
                [sys.executable, "-c", _ENTRY, path],
                input=pickle.dumps(task) + data,
                capture_output=True,
                env={**os.environ, "PYTHONPATH": pythonpath, **(env or {})},
                timeout=max(float(timeout), 1.0),
            )
        except subprocess.TimeoutExpired as e:
            return ChildResult(None, None, (e.stderr or b"").decode(errors="replace"))
        sys.stdout.write(proc.stdout.decode(errors="replace"))  # the user's prints
        text = Path(path).read_text(encoding="utf-8")
    finally:
        os.unlink(path)
    reply = json.loads(text) if text else None
    return ChildResult(reply, proc.returncode, proc.stderr.decode(errors="replace"))


def main(path: str) -> None:
    """The child: ``task(payload)`` from stdin, its dict as JSON to ``path``."""
    try:
        task = pickle.load(sys.stdin.buffer)
        if isinstance(task, str):  # "module:name"
            module, name = task.split(":")
            task = getattr(importlib.import_module(module), name)
        reply = task(cloudpickle.load(sys.stdin.buffer))
    except Exception as e:  # sent back as text; the parent re-raises or reports it
        reply = {"error": {"type": type(e).__name__, "message": str(e)}}
    sys.stdout.flush()
    Path(path).write_text(json.dumps(reply), encoding="utf-8")
