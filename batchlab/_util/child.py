"""Every fresh Python process the kit starts: one helper (:func:`start`, its own session).

``task`` (a kit function, or ``"module:name"``) and ``payload`` (cloudpickled) go in;
``task(payload)``'s dict comes back as JSON in a 0600 file: nothing the child writes is unpickled.
A child is forked from a server process that imported the kit once (started by the first child or
by :func:`warm`; it never touches a device, so each child's JAX starts fresh): no child pays for
the import. A child with its own ``env`` (read by JAX when imported) is a new interpreter.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
from typing import Any, NamedTuple

import cloudpickle

TIMEOUT = 600.0
#: the kit's own root: importable in every child (also from a notebook in another folder)
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: the child's first line (not ``-m``: runpy would import this module twice)
_ENTRY = "import sys; from batchlab._util.child import run_task; run_task(sys.argv[1])"


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


#: the server's first line: it imports the kit (and JAX, touching no device), then forks
_SERVER = "from batchlab._util.child import serve; serve()"
_server: list[subprocess.Popen] = []  # the one running server, if any
_lock = threading.Lock()


def warm() -> None:
    """Starts the server in the background, so that its import overlaps the caller's work."""
    threading.Thread(target=_running_server, daemon=True).start()


def _running_server() -> subprocess.Popen:
    with _lock:
        if not _server or _server[0].poll() is not None:
            pipes = dict(stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            # one BLAS thread: numpy's pool thread would be forked too
            _server[:] = [start(["-c", _SERVER], {"OPENBLAS_NUM_THREADS": "1"}, **pipes, text=True)]
        return _server[0]


def run_child(
    task: Any, payload: Any, *, timeout: float = TIMEOUT, env: dict | None = None
) -> ChildResult:
    """Runs ``task(payload)`` in a fresh process (forked from the server; with ``env``, a new
    interpreter with the parent's environment and import path plus ``env``); its stdout is
    passed through. Killed after ``timeout`` s: ``reply=None``."""
    data = payload if isinstance(payload, bytes) else cloudpickle.dumps(payload)
    paths = []
    for suffix in (".json", ".out", ".err", ".in"):
        fd, path = tempfile.mkstemp(prefix="batchlab-child-", suffix=suffix)
        os.close(fd)  # mkstemp made it 0600: only this user can write it
        paths.append(path)
    timeout = max(float(timeout), 1.0)
    try:
        with open(paths[3], "wb") as f:
            f.write(pickle.dumps(task) + data)
        returncode = _forked(paths, timeout) if env is None else _interpreter(paths, timeout, env)
        texts = []
        for path in paths[:3]:
            with open(path, encoding="utf-8", errors="replace") as f:
                texts.append(f.read())
    finally:
        for path in paths:
            os.unlink(path)
    text, out, err = texts
    sys.stdout.write(out)  # the user's prints
    reply = json.loads(text) if text and returncode is not None else None
    return ChildResult(reply, returncode, err)


def _forked(paths: list[str], timeout: float) -> int | None:
    """Asks the server for a child: its exit status, None when killed at the timeout (a server
    that cannot answer gives way to a new interpreter)."""
    server = _running_server()
    with _lock:
        try:
            server.stdin.write(json.dumps([paths, sys.path]) + "\n")  # today's import path
            server.stdin.flush()
            pid = int(server.stdout.readline())
        except (OSError, ValueError):  # the server died: no fork this time
            server.kill()
            return _interpreter(paths, timeout, {})
        timer = threading.Timer(timeout, _kill, (pid, killed := threading.Event()))
        timer.start()
        status = int(server.stdout.readline())
        timer.cancel()
        return None if killed.is_set() else status


def _kill(pid: int, killed: threading.Event) -> None:
    killed.set()
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def start(argv: list[str], env: dict, **popen: Any) -> subprocess.Popen:
    """A new interpreter ``python *argv`` in its own session (:func:`stop` ends the whole group),
    with the parent's environment and import path plus ``env``; ``popen``: its streams (stdin:
    none by default)."""
    path = os.pathsep.join([_ROOT, *(p for p in sys.path if p)])
    env = {**os.environ, "PYTHONPATH": path, **env}
    popen = {"stdin": subprocess.DEVNULL, **popen}
    return subprocess.Popen([sys.executable, *argv], env=env, start_new_session=True, **popen)


def stop(process: subprocess.Popen) -> None:
    """Kills the process's whole session (a job may have started children) and reaps it."""
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)


def _interpreter(paths: list[str], timeout: float, env: dict) -> int | None:
    """A new interpreter: its exit status, None when killed at the timeout."""
    with open(paths[3], "rb") as blob, open(paths[1], "wb") as out, open(paths[2], "wb") as err:
        process = start(["-c", _ENTRY, paths[0]], env, stdin=blob, stdout=out, stderr=err)
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        return None
    finally:  # also on Ctrl-C: the child has a session of its own, out of the terminal's reach
        stop(process)


def serve() -> None:
    """The server: per request line (the paths of :func:`run_child` and the parent's import path),
    forks a child that runs :func:`run_task`, answers the child's pid, then its exit status."""
    for line in sys.stdin:
        paths, sys_path = json.loads(line)
        pid = os.fork()
        if pid == 0:  # the child: the task from its file, stdout and stderr to files (fd level)
            code = 1
            try:
                sys.path[:] = sys_path
                for fd, path in ((1, paths[1]), (2, paths[2])):
                    os.dup2(os.open(path, os.O_WRONLY), fd)
                with open(paths[3], "rb") as source:
                    run_task(paths[0], source)
                code = 0
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        print(pid, flush=True)
        print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)


def run_task(path: str, source: Any = None) -> None:
    """The child: ``task(payload)`` from ``source`` (stdin), its dict as JSON to ``path``."""
    source = source or sys.stdin.buffer
    try:
        task = pickle.load(source)
        if isinstance(task, str):  # "module:name"
            module, name = task.split(":")
            task = getattr(importlib.import_module(module), name)
        reply = task(cloudpickle.load(source))
    except Exception as e:  # sent back as text; the parent re-raises or reports it
        reply = {"error": {"type": type(e).__name__, "message": str(e)}}
    sys.stdout.flush()
    with open(path, "w", encoding="utf-8") as f:
        json.dump(reply, f)
