"""Multi-process JAX on this machine: the launcher, shard_batch over a global mesh, cleanup.

Each test starts real processes (2 x 4 CPU devices, gloo collectives, a
coordinator on 127.0.0.1) and checks afterwards that none is left: every
process a job started writes its pid, and each pid must be gone (or a
zombie of a parent that is itself gone).
"""

from __future__ import annotations

import ipaddress
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import psutil
import pytest

from batchlab.scaling.distributed import LOOPBACK, free_port, launch

ROWS = (13, 8)  # uneven: process 0 feeds 13 rows, process 1 feeds 8
FEATURES = 6


def global_batch() -> np.ndarray:
    return np.sin(np.arange(sum(ROWS) * FEATURES, dtype=np.float32)).reshape(-1, FEATURES)


def weights() -> np.ndarray:
    return np.linspace(-1, 1, FEATURES * 3, dtype=np.float32).reshape(FEATURES, 3)


def model(batch, w):
    return jnp.tanh(batch @ w)


def loopback(ip: str) -> bool:
    """127.0.0.1, ::1 or the IPv4-mapped ::ffff:127.0.0.1."""
    address = ipaddress.ip_address(ip)
    return (getattr(address, "ipv4_mapped", None) or address).is_loopback


def assert_gone(pids: list[int]) -> None:
    deadline = time.time() + 5
    for pid in pids:
        while True:
            try:
                alive = psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
            except psutil.NoSuchProcess:
                alive = False
            if not alive:
                break
            assert time.time() < deadline, f"process {pid} was left running"
            time.sleep(0.1)


def sharded_job(rows, features):
    """Runs in every process: feed this process's rows, compute, report what each process sees."""
    import os

    import jax
    import jax.numpy as jnp
    import numpy as np

    from batchlab import measure_scaling, memory_estimate, shard_batch
    from batchlab.scaling.sharding import replicate

    me = jax.process_index()
    full = np.sin(np.arange(sum(rows) * features, dtype=np.float32)).reshape(-1, features)
    start = sum(rows[:me])
    mine = full[start : start + rows[me]]
    mesh = jax.make_mesh((jax.device_count(),), ("batch",))
    sb = shard_batch(mine, mesh)
    w = replicate(np.linspace(-1, 1, features * 3, dtype=np.float32).reshape(features, 3), mesh)
    f = jax.jit(lambda b, w: jnp.tanh(b @ w))
    out = sb.unpad(f(sb.values, w))
    total = jax.jit(lambda v, m: jnp.where(m[:, None], v, 0.0).sum())(sb.values, sb.mask)
    errors = {}
    try:  # measure_scaling compares with one device of one process
        measure_scaling(lambda b: b, mine, [2])
    except ValueError as e:
        errors["scaling"] = str(e)
    try:  # the processes feed rows of different widths
        shard_batch(full[:2, : features - me], mesh)
    except ValueError as e:
        errors["layout"] = str(e)
    try:  # a mesh whose batch axis interleaves the processes
        shard_batch(
            mine, jax.make_mesh((8,), ("batch",), devices=jax.devices()[::2] + jax.devices()[1::2])
        )
    except ValueError as e:
        errors["mesh"] = str(e)
    import psutil

    listening = {
        (c.laddr.ip, c.laddr.port)
        for c in psutil.Process().net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    }
    return dict(
        pid=os.getpid(),
        listening=sorted(listening),
        coordinator=os.environ["BATCHLAB_COORDINATOR"],
        processes=jax.process_count(),
        devices=jax.device_count(),
        local=jax.local_device_count(),
        shards=[(s.index[0].start, s.index[0].stop) for s in sb.values.addressable_shards],
        n_items=sb.n_items,
        padded=sb.padded_items,
        process_items=sb.process_items,
        out=np.asarray(out),
        total=float(total),
        argument_bytes=memory_estimate(f, sb.values, w).argument_bytes,
        errors=errors,
    )


def test_two_processes_equal_one():
    run = launch(
        sharded_job, processes=2, devices_per_process=4, args=(ROWS, FEATURES), timeout=120
    )
    assert run.ok and "2 processes x 4 CPU devices" in repr(run) and LOOPBACK in run.coordinator
    reference = np.asarray(model(global_batch(), weights()))  # this process: one device
    for me, v in enumerate(run.values):
        assert (v["processes"], v["devices"], v["local"]) == (2, 8, 4)
        # 13 and 8 rows: both pad to 16 (4 devices x 4 rows), padding after each process's rows
        assert v["n_items"] == 21 and v["padded"] == 32 and v["process_items"] == ROWS
        assert v["shards"] == [(16 * me + 4 * k, 16 * me + 4 * k + 4) for k in range(4)]
        np.testing.assert_allclose(v["out"], reference, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(v["total"], global_batch().sum(), rtol=1e-5, atol=1e-5)
        assert v["argument_bytes"] == (4 * FEATURES + FEATURES * 3) * 4  # 4 rows + whole weights
        assert "got 2 processes; call it in a single process" in v["errors"]["scaling"]
        assert "different shapes or dtypes" in v["errors"]["layout"]
        assert "equal, contiguous block" in v["errors"]["mesh"]
        # nothing listens on every interface (JAX's coordinator default is "[::]:port");
        # the coordinator (process 0) listens on 127.0.0.1 only
        assert not any(ip in ("0.0.0.0", "::") for ip, _ in v["listening"]), v["listening"]
        port = int(v["coordinator"].rsplit(":", 1)[1])
        on_port = [loopback(ip) for ip, p in v["listening"] if p == port]
        assert on_port == ([True] if me == 0 else []), v["listening"]
    assert_gone([v["pid"] for v in run.values])


def pid_then(action, pid_dir, sleep=0.0):
    """Writes this process's pid (and a grandchild's), then fails, sleeps or waits for the others."""
    import os
    import subprocess
    import time

    import jax

    me = jax.process_index()
    child = subprocess.Popen(["sleep", "300"])  # a grandchild the launcher must also end
    for pid, name in ((os.getpid(), f"{me}"), (child.pid, f"{me}.child")):
        with open(os.path.join(pid_dir, name), "w") as f:
            f.write(str(pid))
    if action == "fail" and me == 1:
        raise ZeroDivisionError("process 1 fails on purpose")
    if action in ("fail", "sleep"):
        time.sleep(sleep or 300)  # process 0 would wait for process 1 for ever
    return me


def pids(pid_dir: Path) -> list[int]:
    return [int(p.read_text()) for p in sorted(pid_dir.iterdir())]


def test_a_failing_process_stops_the_others(tmp_path):
    first, second = tmp_path / "raised", tmp_path / "returned"
    first.mkdir(), second.mkdir()
    with pytest.raises(RuntimeError, match=r"(?s)process 1: exit code 1.*ZeroDivisionError"):
        launch(pid_then, processes=2, devices_per_process=1, args=("fail", str(first)))
    run = launch(
        pid_then, processes=2, devices_per_process=1, args=("fail", str(second)), check=False
    )
    assert not run.ok and run.processes[0].stopped == "stopped: process 1 failed"
    assert "FAILED" in repr(run) and run.processes[1].returncode == 1
    assert len(pids(first)) == len(pids(second)) == 4
    assert_gone(pids(first) + pids(second))


def test_timeout_kills_every_process(tmp_path):
    with pytest.raises(TimeoutError, match=r"`timeout`=30 s; every process was killed"):
        launch(
            # 30 s: long enough for both processes to start (and write their pids) on a busy machine
            # (15 s was not, once, at a load of 15 on 2 cores)
            pid_then,
            processes=2,
            devices_per_process=1,
            args=("sleep", str(tmp_path)),
            timeout=30,
        )
    assert len(pids(tmp_path)) == 4
    assert_gone(pids(tmp_path))


def test_success_ends_leftover_children(tmp_path):
    run = launch(pid_then, processes=2, devices_per_process=1, args=("ok", str(tmp_path)))
    assert run.values == [0, 1]
    assert_gone(pids(tmp_path))  # the `sleep 300` each job left behind is gone too


# a Python session that launches 2 sleeping processes (pid_then), then gets Ctrl-C
CTRL_C = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    from test_distributed import pid_then
    from batchlab import launch
    launch(pid_then, processes=2, devices_per_process=1, args=("sleep", sys.argv[2]))
""")


def test_ctrl_c_stops_every_process(tmp_path):
    cmd = [sys.executable, "-c", CTRL_C, str(Path(__file__).parent), str(tmp_path)]
    launcher = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while len(list(tmp_path.iterdir())) < 4:  # both processes and their grandchildren started
        assert time.time() < deadline and launcher.poll() is None, launcher.communicate()
        time.sleep(0.1)
    launcher.send_signal(signal.SIGINT)  # what Ctrl-C in a terminal (or a kernel interrupt) sends
    _, err = launcher.communicate(timeout=30)
    assert "KeyboardInterrupt" in err
    assert_gone(pids(tmp_path))


def test_free_port_is_loopback_and_bindable():
    import socket

    port = free_port()
    with socket.socket() as s:
        s.bind((LOOPBACK, port))


def test_refused_sockets_are_named_before_any_process(monkeypatch):
    import socket

    from batchlab.scaling import distributed

    def refused(*args, **kwargs):  # a TPU host's sandbox: no socket of any family
        raise OSError(97, "Address family not supported by protocol")

    assert distributed.loopback_unavailable() is None
    monkeypatch.setattr(socket, "socket", refused)
    why = distributed.loopback_unavailable()
    assert why.startswith(f"no TCP socket opens on {LOOPBACK} here (OSError: [Errno 97]"), why
    with pytest.raises(OSError, match=r"`launch` needs a coordinator on 127.0.0.1, but no TCP"):
        launch(lambda: None)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(processes=0), ValueError, r"`processes` must be at least 1, got processes=0"),
        (dict(processes=2.0), TypeError, r"`processes` must be a positive int, got float 2.0"),
        (dict(devices_per_process=True), TypeError, "`devices_per_process` must be a positive int"),
        (dict(devices_per_process=65), ValueError, r"`devices_per_process` must be at most 64.*65"),
        (dict(timeout=0), ValueError, "`timeout` must be positive, got timeout=0"),
        (dict(job=3), TypeError, r"`job` must be a function \(run in every process\), got 3"),
        (dict(job="job.py"), TypeError, r"`job` must be a function .*got 'job.py'"),
    ],
)
def test_bad_arguments_fail_before_any_process(kwargs, error, match):
    kwargs = {"job": lambda: None, **kwargs}
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with pytest.raises(error, match=match):
        launch(kwargs.pop("job"), **kwargs)
    assert {p.pid for p in psutil.Process().children(recursive=True)} <= before


def test_initialize_outside_the_launcher_calls_jax(monkeypatch):
    from batchlab.scaling import distributed

    calls = []
    monkeypatch.delenv(distributed.ENV_NUM_PROCESSES, raising=False)
    monkeypatch.setattr(jax.distributed, "is_initialized", lambda: False)
    monkeypatch.setattr(jax.distributed, "initialize", lambda **kw: calls.append(kw))
    distributed.initialize(coordinator_address="10.0.0.1:1234", num_processes=4, process_id=1)
    assert calls == [dict(coordinator_address="10.0.0.1:1234", num_processes=4, process_id=1)]
    monkeypatch.setattr(jax.distributed, "is_initialized", lambda: True)
    distributed.initialize()
    assert len(calls) == 1  # a second call does nothing
