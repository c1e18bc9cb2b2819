"""The one process helper: a child forked from the kit's server, or a new interpreter with its own
environment; both report the same way (reply, exit status, stderr) and keep the user's prints."""

from __future__ import annotations

import time

import pytest

from batchlab._util import child


@pytest.mark.parametrize("env", [None, {"BATCHLAB_TEST": "1"}], ids=["forked", "interpreter"])
def test_a_child_answers_prints_dies_and_times_out_alike(env, capsys):
    assert child.run_child("builtins:dict", {"a": 1}, env=env).reply == {"a": 1}

    got = child.run_child("builtins:print", "hello from the child", env=env)
    assert got.returncode == 0 and got.reply is None
    assert "hello from the child" in capsys.readouterr().out  # passed through

    died = child.run_child("os:_exit", 3, env=env)
    assert (died.reply, died.returncode) == (None, 3)
    assert "exit status 3" in died.why

    start = time.perf_counter()
    slow = child.run_child("time:sleep", 60, timeout=1.0, env=env)
    assert (slow.reply, slow.returncode, slow.why) == (None, None, "out of time")
    assert time.perf_counter() - start < 30


def test_the_forked_child_sees_a_fresh_process_and_the_server_is_kept():
    child.run_child("builtins:dict", {})
    server = child._server[0]
    first = child.run_child("os.path:realpath", "/proc/self")  # "/proc/<the child's pid>"
    again = child.run_child("os.path:realpath", "/proc/self")
    assert child._server[0] is server and server.poll() is None  # one import serves both
    assert first.reply != again.reply  # each call its own process
    assert first.reply.startswith("/proc/") and first.reply != f"/proc/{server.pid}"


def test_a_dead_server_is_replaced():
    child.run_child("builtins:dict", {})
    child._server[0].kill()
    child._server[0].wait()
    assert child.run_child("builtins:dict", {"b": 2}).reply == {"b": 2}
    assert child._server[0].poll() is None


def test_the_child_imports_from_the_parents_path_of_today(tmp_path, monkeypatch):
    child.run_child("builtins:dict", {})  # the server runs, started with yesterday's path
    (tmp_path / "late_module_of_the_test.py").write_text("def answer(x):\n    return {'got': x}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert child.run_child("late_module_of_the_test:answer", 7).reply == {"got": 7}
