"""Several JAX processes on one machine: the multi-host runtime, run and tested locally."""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batchlab._util.format import format_seconds

ENV_COORDINATOR = "BATCHLAB_COORDINATOR"
ENV_NUM_PROCESSES = "BATCHLAB_NUM_PROCESSES"
ENV_PROCESS_ID = "BATCHLAB_PROCESS_ID"
ENV_DEVICES = "BATCHLAB_DEVICES_PER_PROCESS"
LOOPBACK = "127.0.0.1"


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port that is free on ``host`` now (the OS picks it; bound to loopback only)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def initialize(**kwargs: Any) -> None:
    """Connects this process to the others: ``jax.distributed.initialize`` with the right settings."""
    import jax

    if jax.distributed.is_initialized():
        return
    if ENV_NUM_PROCESSES not in os.environ:
        jax.distributed.initialize(**kwargs)
        return
    jax.config.update("jax_platforms", "cpu")
    jax.config.update("jax_num_cpu_devices", int(os.environ[ENV_DEVICES]))
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=os.environ[ENV_COORDINATOR],
        # JAX's default binds the coordinator to every interface ("[::]:port"): loopback only
        coordinator_bind_address=os.environ[ENV_COORDINATOR],
        num_processes=int(os.environ[ENV_NUM_PROCESSES]),
        process_id=int(os.environ[ENV_PROCESS_ID]),
        **kwargs,
    )


@dataclass(frozen=True)
class ProcessRun:
    """One launched process: its exit code, output and (for a function job) its return value."""

    process_id: int
    returncode: int | None
    stdout: str
    stderr: str
    value: Any = None
    stopped: str = ""  # why the launcher ended it ("" when it exited by itself)

    @property
    def ok(self) -> bool:
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
        return not self.timed_out and all(p.ok for p in self.processes)

    @property
    def values(self) -> list[Any]:
        """The job function's return value in each process (process order)."""
        return [p.value for p in self.processes]

    def _failure(self) -> str:
        lines = []
        for p in self.processes:
            if not p.ok:
                why = p.stopped or f"exit code {p.returncode}"
                tail = (p.stderr.strip() or p.stdout.strip())[-2000:]
                lines.append(f"process {p.process_id}: {why}\n{tail}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        state = "ok" if self.ok else ("timed out" if self.timed_out else "FAILED")
        codes = ", ".join(f"{p.process_id}: {p.stopped or p.returncode}" for p in self.processes)
        return (
            f"Launch({len(self.processes)} process{'es' * (len(self.processes) != 1)} x "
            f"{self.devices_per_process} CPU devices on "
            f"{LOOPBACK}, {state} in {format_seconds(self.seconds)}; exit codes {{{codes}}})"
        )


def _child_env(
    base: dict[str, str], coordinator: str, n: int, i: int, devices: int
) -> dict[str, str]:
    env = dict(base)
    flags = [
        f
        for f in env.get("XLA_FLAGS", "").split()
        if not f.startswith("--xla_force_host_platform_device_count")
    ]
    env.update(
        {
            ENV_COORDINATOR: coordinator,
            ENV_NUM_PROCESSES: str(n),
            ENV_PROCESS_ID: str(i),
            ENV_DEVICES: str(devices),
            "JAX_PLATFORMS": "cpu",
            "JAX_NUM_CPU_DEVICES": str(devices),
            "JAX_CPU_COLLECTIVES_IMPLEMENTATION": "gloo",
            "XLA_FLAGS": " ".join([*flags, f"--xla_force_host_platform_device_count={devices}"]),
            "PYTHONUNBUFFERED": "1",
        }
    )
    # the launcher's own package must be importable in the children (also from a notebook)
    root = str(Path(__file__).resolve().parent.parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    return env


def _kill_group(proc: subprocess.Popen, sig: int) -> None:
    """Signals the process group that ``proc`` leads (the process and every child it started)."""
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        if os.name == "posix":
            os.killpg(proc.pid, sig)
        else:  # Windows: no process groups to signal; end the process itself
            proc.kill()


def _pickle_job(job: Callable, args: tuple) -> bytes:
    """cloudpickle ``(job, args)``; the job's own module by value (a test or a user's module
    need not be importable in the children; notebook and ``__main__`` functions always are sent)."""
    import cloudpickle

    module = sys.modules.get(getattr(job, "__module__", None) or "")
    by_value = module is not None and module.__name__ not in ("__main__", "builtins")
    by_value = by_value and not module.__name__.startswith("batchlab")
    if by_value:
        cloudpickle.register_pickle_by_value(module)
    try:
        return cloudpickle.dumps((job, args))
    finally:
        if by_value:
            cloudpickle.unregister_pickle_by_value(module)


def _check_launch_args(job: Any, processes: Any, devices_per_process: Any, timeout: Any) -> None:
    for name, value in (("processes", processes), ("devices_per_process", devices_per_process)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"`{name}` must be an int, got {type(value).__name__} {value!r}.")
        if not 1 <= value <= 64:
            raise ValueError(
                f"`{name}`={value} is out of range; use 1 to 64 (each process is a Python "
                "process with its own JAX runtime, about 200 MiB)."
            )
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"`timeout` must be a positive number of seconds, got {timeout!r}.")
    if callable(job):
        return
    if not isinstance(job, (str, os.PathLike)):
        raise TypeError(
            f"`job` must be a function or the path of a Python script, got {type(job).__name__}."
        )
    if not Path(job).is_file():
        raise ValueError(f"`job`={str(job)!r} is not a file; pass the path of a Python script.")


def launch(
    job: Callable[..., Any] | str | os.PathLike,
    *,
    processes: int = 2,
    devices_per_process: int = 4,
    args: Sequence[Any] = (),
    timeout: float = 60.0,
    check: bool = True,
) -> Launch:
    """Runs ``job`` in ``processes`` local JAX processes that form one multi-process runtime.

    Args:
      job: a function (sent by cloudpickle; called as ``job(*args)`` after
        :func:`initialize`; its return value must pickle) or the path of a
        script (run as ``python script *args``; it calls :func:`initialize`).
      processes: how many processes (``jax.process_count()``).
      devices_per_process: CPU devices in each (``jax.local_device_count()``).
      args: arguments for the function, or command-line strings for the script.
      timeout: seconds for the whole job; then every process is killed.
      check: raise when a process fails or the job times out.

    Returns:
      A :class:`Launch`: per process exit code, stdout, stderr and return value.

    Example:
      >>> def count():
      ...     import jax
      ...     return jax.process_index(), jax.process_count(), jax.device_count()
      >>> launch(count, processes=2, devices_per_process=2).values
      [(0, 2, 4), (1, 2, 4)]
    """
    _check_launch_args(job, processes, devices_per_process, timeout)
    coordinator = f"{LOOPBACK}:{free_port()}"
    with tempfile.TemporaryDirectory(prefix="batchlab-launch-") as tmp:
        tmp_path = Path(tmp)
        if callable(job):
            payload = tmp_path / "job.pkl"
            payload.write_bytes(_pickle_job(job, tuple(args)))
        procs: list[subprocess.Popen] = []
        outs, stopped = [], {}
        start = time.perf_counter()
        timed_out = False
        try:
            for i in range(processes):
                env = _child_env(os.environ, coordinator, processes, i, devices_per_process)
                out = (tmp_path / f"{i}.out").open("wb")
                err = (tmp_path / f"{i}.err").open("wb")
                outs.append((out, err))
                if callable(job):
                    cmd = [sys.executable, "-m", "batchlab.scaling.distributed._child", "call"]
                    cmd += [str(payload), str(tmp_path / f"{i}.result")]
                else:
                    cmd = [sys.executable, "-m", "batchlab.scaling.distributed._child", "script"]
                    cmd += [str(Path(job).resolve()), *map(str, args)]
                procs.append(
                    subprocess.Popen(
                        cmd,
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=err,
                        start_new_session=True,  # its own process group, killed as a whole
                    )
                )
            deadline = start + timeout
            while any(p.poll() is None for p in procs):
                failed = [i for i, p in enumerate(procs) if p.poll() not in (None, 0)]
                if failed:
                    for i, p in enumerate(procs):
                        if p.poll() is None:
                            stopped[i] = f"stopped: process {failed[0]} failed"
                    break
                if time.perf_counter() > deadline:
                    timed_out = True
                    for i, p in enumerate(procs):
                        if p.poll() is None:
                            stopped[i] = f"killed after the {timeout:g} s timeout"
                    break
                time.sleep(0.02)
        finally:
            # every group, also on success (a job may have started children of its own)
            for p in procs:
                _kill_group(p, signal.SIGKILL if os.name == "posix" else signal.SIGTERM)
            for p in procs:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(timeout=10)
            for out, err in outs:
                out.close()
                err.close()
        seconds = time.perf_counter() - start
        runs = []
        for i, p in enumerate(procs):
            value = None
            result = tmp_path / f"{i}.result"
            if callable(job) and p.returncode == 0 and result.is_file():
                value = pickle.loads(result.read_bytes())
            runs.append(
                ProcessRun(
                    i,
                    p.returncode,
                    (tmp_path / f"{i}.out").read_text(errors="replace"),
                    (tmp_path / f"{i}.err").read_text(errors="replace"),
                    value,
                    stopped.get(i, ""),
                )
            )
    result = Launch(tuple(runs), devices_per_process, seconds, timed_out, coordinator)
    if check and timed_out:
        raise TimeoutError(
            f"The job did not finish within `timeout`={timeout:g} s; every process was killed. "
            f"Raise `timeout` or shrink the job.\n{result._failure()}"
        )
    if check and not result.ok:
        raise RuntimeError(f"The multi-process job failed:\n{result._failure()}")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m batchlab.scaling.distributed --processes 2 --devices-per-process 4 SCRIPT [ARGS...]``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m batchlab.scaling.distributed",
        description="Run SCRIPT as several JAX processes on this machine (127.0.0.1), "
        "each with its own simulated CPU devices. SCRIPT calls "
        "batchlab.scaling.distributed.initialize() before using JAX.",
    )
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--devices-per-process", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds (default 60)")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)

    def terminate(signum: int, frame: Any) -> None:  # a CI's SIGTERM cleans up like Ctrl-C
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        run = launch(
            ns.script,
            processes=ns.processes,
            devices_per_process=ns.devices_per_process,
            args=ns.args,
            timeout=ns.timeout,
            check=False,
        )
    except (TypeError, ValueError) as e:
        parser.error(str(e))
    except KeyboardInterrupt:
        print("interrupted: every process was stopped", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    for p in run.processes:
        for stream, text in ((sys.stdout, p.stdout), (sys.stderr, p.stderr)):
            for line in text.splitlines():
                print(f"[process {p.process_id}] {line}", file=stream)
    print(run, file=sys.stderr)
    if run.timed_out:
        return 124
    return next((p.returncode or 1 for p in run.processes if not p.ok), 0)
