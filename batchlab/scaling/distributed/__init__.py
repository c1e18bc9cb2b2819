"""Several JAX processes on one machine: the multi-host runtime, run and tested locally."""

from __future__ import annotations

import os
import pickle
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cloudpickle
import jax

from batchlab._util import child
from batchlab._util.checks import check_positive_float, check_positive_int
from batchlab._util.format import format_seconds

ENV_COORDINATOR = "BATCHLAB_COORDINATOR"
ENV_NUM_PROCESSES = "BATCHLAB_NUM_PROCESSES"
ENV_PROCESS_ID = "BATCHLAB_PROCESS_ID"
LOOPBACK = "127.0.0.1"
_CHILD = ["-m", "batchlab.scaling.distributed._child"]


def free_port() -> int:
    """A TCP port that is free on loopback now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def loopback_unavailable() -> str | None:
    """Why no TCP socket opens on loopback here (:func:`launch` needs one), or ``None``.

    Example:
      >>> why = loopback_unavailable()  # None here; a sandbox that refuses sockets: the reason
    """
    try:
        free_port()
    except OSError as e:  # seen on a TPU host: [Errno 97] Address family not supported
        return f"no TCP socket opens on {LOOPBACK} here ({type(e).__name__}: {e})"
    return None


def initialize(**kwargs: Any) -> None:
    """``jax.distributed.initialize``, under :func:`launch` with the launcher's settings."""
    if jax.distributed.is_initialized():
        return
    if ENV_NUM_PROCESSES in os.environ:  # the CPU settings come in the environment (launch)
        kwargs = dict(
            coordinator_address=os.environ[ENV_COORDINATOR],
            # JAX's default binds the coordinator to every interface ("[::]:port"): loopback only
            coordinator_bind_address=os.environ[ENV_COORDINATOR],
            num_processes=int(os.environ[ENV_NUM_PROCESSES]),
            process_id=int(os.environ[ENV_PROCESS_ID]),
            **kwargs,
        )
    jax.distributed.initialize(**kwargs)


@dataclass(frozen=True)
class ProcessRun:
    """One launched process: exit code, output and (a function job) its return value."""

    process_id: int
    returncode: int | None
    stdout: str
    stderr: str
    value: Any = None
    stopped: str = ""  # why the launcher ended it ("" when it exited by itself)

    @property
    def ok(self) -> bool:
        """Whether the process exited with 0 and was not stopped."""
        return self.returncode == 0 and not self.stopped


@dataclass(frozen=True)
class Launch:
    """The result of :func:`launch`: every process's run, in process order."""

    processes: tuple[ProcessRun, ...]
    devices_per_process: int
    seconds: float
    timed_out: bool
    coordinator: str

    @property
    def ok(self) -> bool:
        """Whether every process is ok and the job did not time out."""
        return not self.timed_out and all(p.ok for p in self.processes)

    @property
    def values(self) -> list:
        """Each process's value, in the job's order."""
        return [p.value for p in self.processes]

    def __repr__(self) -> str:
        state = "ok" if self.ok else ("timed out" if self.timed_out else "FAILED")
        codes = ", ".join(f"{p.process_id}: {p.stopped or p.returncode}" for p in self.processes)
        n = len(self.processes)
        return (
            f"Launch({n} process{'es' * (n != 1)} x {self.devices_per_process} CPU devices on "
            f"{LOOPBACK}, {state} in {format_seconds(self.seconds)}; exit codes {{{codes}}})"
        )


def _pickle_job(job: Callable, args: tuple) -> bytes:
    """cloudpickle ``(job, args)``, the job's module by value: the children need not import it."""
    module = sys.modules.get(getattr(job, "__module__", None) or "")
    by_value = module is not None and not module.__name__.startswith(
        ("__main__", "builtins", "batchlab")
    )
    if by_value:
        cloudpickle.register_pickle_by_value(module)
    try:
        return cloudpickle.dumps((job, args))
    finally:
        if by_value:
            cloudpickle.unregister_pickle_by_value(module)


def launch(
    job: Callable[..., Any],
    *,
    processes: int = 2,
    devices_per_process: int = 4,
    args: Sequence[Any] = (),
    timeout: float = 60.0,
    check: bool = True,
) -> Launch:
    """Runs ``job`` (a function whose result pickles) in ``processes`` local JAX processes forming
    one runtime; all are killed after ``timeout`` s, on a failure, on Ctrl-C and at the end.

    Args:
      job: called as ``job(*args)`` in every process (cloudpickled; its result must pickle).
      processes: local JAX processes (at most 64).
      devices_per_process: CPU devices each process gets (at most 64).
      args: ``job``'s arguments (they must pickle).
      timeout: seconds before every process is killed.
      check: raise when a process fails or the job times out (``False``: return the result).

    Returns:
      A :class:`Launch`: per process its exit code, output and ``job``'s return value; the
      seconds taken, whether it timed out, and the coordinator's address.

    Raises:
      TypeError: ``job`` is not callable, ``processes`` / ``devices_per_process`` not an int, or
        ``timeout`` not a number.
      ValueError: ``processes`` / ``devices_per_process`` outside 1..64, or ``timeout`` <= 0.
      OSError: the loopback coordinator address is unavailable here.
      TimeoutError: with ``check``, the job did not finish within ``timeout``.
      RuntimeError: with ``check``, a process failed (its exit code and output in the message).
    """
    for name, value in (("processes", processes), ("devices_per_process", devices_per_process)):
        if check_positive_int(value, name) > 64:
            raise ValueError(f"`{name}` must be at most 64 (a JAX runtime each), got {value!r}.")
    check_positive_float(timeout, "timeout")
    if not callable(job):
        raise TypeError(f"`job` must be a function (run in every process), got {job!r:.60}.")
    why = loopback_unavailable()
    if why:
        raise OSError(f"`launch` needs a coordinator on {LOOPBACK}, but {why}.")
    coordinator = f"{LOOPBACK}:{free_port()}"
    count = "--xla_force_host_platform_device_count"
    flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith(count)]
    env = {  # what initialize() reads, the same in every process but its id
        ENV_COORDINATOR: coordinator,
        ENV_NUM_PROCESSES: str(processes),
        "JAX_PLATFORMS": "cpu",
        "JAX_NUM_CPU_DEVICES": str(devices_per_process),
        "JAX_CPU_COLLECTIVES_IMPLEMENTATION": "gloo",
        "XLA_FLAGS": " ".join([*flags, f"{count}={devices_per_process}"]),
        "PYTHONUNBUFFERED": "1",
    }
    with tempfile.TemporaryDirectory(prefix="batchlab-launch-") as tmp:
        tmp = Path(tmp)
        (tmp / "job.pkl").write_bytes(_pickle_job(job, tuple(args)))
        procs, stopped, timed_out, start = [], {}, False, time.perf_counter()
        try:
            for i in range(processes):
                argv = [*_CHILD, str(tmp / "job.pkl"), str(tmp / f"{i}.result")]
                with open(tmp / f"{i}.out", "wb") as out, open(tmp / f"{i}.err", "wb") as err:
                    env_i = {**env, ENV_PROCESS_ID: str(i)}
                    procs.append(child.start(argv, env_i, stdout=out, stderr=err))
            while any(p.poll() is None for p in procs):
                failed = [i for i, p in enumerate(procs) if p.poll() not in (None, 0)]
                timed_out = not failed and time.perf_counter() > start + timeout
                if failed or timed_out:
                    why = f"killed after the {timeout:g} s timeout"
                    why = f"stopped: process {failed[0]} failed" if failed else why
                    stopped = {i: why for i, p in enumerate(procs) if p.poll() is None}
                    break
                time.sleep(0.02)
        finally:  # every process's session, also on success (a job may have started children)
            for p in procs:
                child.stop(p)
        seconds = time.perf_counter() - start
        runs = []
        for i, p in enumerate(procs):
            result = tmp / f"{i}.result"
            ran = p.returncode == 0 and result.is_file()
            value = pickle.loads(result.read_bytes()) if ran else None
            out, err = ((tmp / f"{i}.{s}").read_text(errors="replace") for s in ("out", "err"))
            runs.append(ProcessRun(i, p.returncode, out, err, value, stopped.get(i, "")))
    result = Launch(tuple(runs), devices_per_process, seconds, timed_out, coordinator)
    if check and not result.ok:
        why = f"did not finish within `timeout`={timeout:g} s; every process was killed. Raise "
        why = why + "`timeout` or shrink the job." if timed_out else "failed:"
        failures = "\n".join(
            f"process {p.process_id}: {p.stopped or f'exit code {p.returncode}'}\n"
            + (p.stderr.strip() or p.stdout.strip())[-2000:]
            for p in runs
            if not p.ok
        )
        raise (TimeoutError if timed_out else RuntimeError)(f"The job {why}\n{failures}")
    return result
