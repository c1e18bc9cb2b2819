"""A calibrated margin: the plan-to-real ratio of one function, measured in a fresh process
(XLA's plan is a lower bound: XLA:CPU allocates outside it), or in this one where no second
process may open the device (a TPU is held by one process)."""

from __future__ import annotations

import contextlib
import ctypes
import gc
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import cloudpickle
import jax
import jax.numpy as jnp
import numpy as np

from batchlab._util.backend import backend_facts
from batchlab._util.child import TIMEOUT, run_child, warm
from batchlab._util.format import format_bytes
from batchlab.batching.strategies import batch
from batchlab.measuring.live import device_memory
from batchlab.measuring.plan import batch_args, batch_planner, hoisted_const_bytes, spec_of, unjit

#: calibrations already measured: ``{key: (fn, Calibration)}`` (fn kept: ids are reused)
CACHE: dict[tuple, tuple[Any, Any]] = {}
#: the largest plan a calibration runs for real (a larger answer is calibrated at a fraction of it)
MAX_CALIBRATION_BYTES = 1 << 30


def calibration_sizes(answer: int, planned: dict[int, int]) -> tuple[int, ...]:
    """A quarter of the answer and the answer (scaled down to a 1 GiB plan)."""
    p = planned.get(answer) or 0
    large = max(1, int(answer * MAX_CALIBRATION_BYTES / p)) if p > MAX_CALIBRATION_BYTES else answer
    return tuple(sorted({max(1, large // 4), large}))


def warm_up() -> None:
    """Starts the children's server now where calibrations run in a child (its import of the kit
    then overlaps the caller's planning)."""
    if backend_facts().second_process_may_open:
        warm()


# ---- the child's side: each job warms up (compiles), frees everything, then measures one call


def _status(field: str) -> int | None:
    """A ``/proc/self/status`` memory field in bytes (Linux), else None."""
    with contextlib.suppress(OSError), open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return None


def _trim() -> None:
    """Frees what Python and glibc keep."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def call(run: Any, args: Any) -> Any:
    """One call on device arrays (specs made as zeros, one buffer each)."""

    def zeros(a):
        return jnp.zeros(a.shape, a.dtype) if isinstance(a, jax.ShapeDtypeStruct) else a

    return jax.block_until_ready(run(*jax.device_put(jax.tree_util.tree_map(zeros, args))))


def observe(run: Any, args: Any) -> dict:
    """The peak of one call in a fresh process: host RSS growth (``VmHWM`` reset)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")  # resets the resident high-water mark (Linux >= 4.0)
    except OSError:
        return {"bytes": None, "source": "no resettable host peak here (needs Linux /proc)"}
    before = _status("VmRSS")
    call(run, args)
    source = "host peak RSS (VmHWM, reset before the call) - RSS before, fresh process"
    return {"bytes": max(int(_status("VmHWM")) - before, 0), "source": source}


def run_here(jobs: list) -> dict:
    """``{label: measure(run, args)}`` for ``(label, measure, run, args)`` jobs, in turn."""
    result = {}
    for label, measure, run, args in jobs:
        try:
            call(run, args)  # compiles every program it needs
            _trim()
            result[label] = measure(run, args)
        except Exception as e:  # one job's failure (e.g. out of memory) is its figure
            why = f"failed: {type(e).__name__}: {str(e)[:200]}"
            result[label] = {"bytes": None, "ran": None, "source": why}
        _trim()
    return result


def call_rise(run: Any, args: Any) -> tuple[int | None, str]:
    """What one first call of ``run`` adds to the device, read from its counters: the rise of
    ``peak_bytes_in_use`` over the bytes in use before it, plus the rise of
    ``peak_bytes_reserved`` (a TPU reserves a program's temporaries when it loads it: its
    bytes in use miss them, notebook 06). Peaks never reset, so a ballast first lifts bytes in
    use to their peak (at most :data:`MAX_BALLAST`): a new peak is then the call's. ``None``
    where a peak stays hidden under an earlier one, never guessed."""
    s = device_memory()
    if not backend_facts().counts_program_temps and s.peak_bytes_reserved is None:
        return None, "not observed: this device's counters do not show a program's temporaries"
    lift = s.peak_bytes_in_use - s.bytes_in_use
    if lift > MAX_BALLAST:
        return None, f"not observed: the device's peak is {format_bytes(lift)} above its use"
    ballast = jax.device_put(np.zeros(lift, np.uint8)) if lift else None
    before = device_memory()
    call(run, args)
    after = device_memory()
    del ballast
    now, old = before.bytes_reserved or 0, before.peak_bytes_reserved or 0
    new = after.peak_bytes_reserved or 0
    if new <= old and old > now:  # a reservation up to old - now would not show
        return None, "not observed: the reserved peak was already above this call's"
    reserved = new - now if new > old else 0  # peak = reserved before: the call reserved none
    return after.peak_bytes_in_use - before.bytes_in_use + reserved, ""


#: the largest ballast :func:`call_rise` puts on the device (a host array of that size first)
MAX_BALLAST = 1 << 30


def observe_in_process(jobs: list) -> dict:
    """``{label: bytes}`` of ``(label, _, run, args)`` jobs in THIS process, smallest batch first:
    :func:`call_rise` of each first call (``None`` where it is hidden or fails, never guessed)."""
    result, source = {}, "device memory_stats: peak bytes in use and reserved, this process"
    for label, _, run, args in jobs:
        try:
            got, why = call_rise(run, args)
        except Exception as e:  # e.g. out of memory: no figure
            got, why = None, f"failed: {type(e).__name__}: {str(e)[:200]}"
        result[label] = {"bytes": got, "source": source if got is not None else why}
    return result


# ---- the parent's side


def run_jobs(jobs: list, timeout: float) -> dict[str, dict]:
    """:func:`run_here` in ONE fresh process; a child that dies answers every job with ``None``."""
    child = run_child(run_here, cloudpickle.dumps(jobs), timeout=timeout)
    reply, why, ran = child.reply, child.why, False
    if reply is None and child.returncode is None:
        why, ran = "not observed: out of time", None
    elif reply is not None and isinstance(reply.get("error"), dict):
        e = reply["error"]
        why, ran = f"could not rebuild the jobs here ({e.get('type')}: {e.get('message')})", None
    elif reply is not None:
        return reply
    return {job[0]: {"bytes": None, "ran": ran, "source": why} for job in jobs}


class BatchJob:
    """``job(*args)`` runs ``batch(fn, ...)``, built on the first call (in the child: a jitted
    program is not pickled)."""

    def __init__(self, fn: Callable, strategy: str, chunk_size: int | None, in_axes: Any):
        self.fn, self.strategy, self.chunk_size, self.in_axes = fn, strategy, chunk_size, in_axes
        self._program: Callable | None = None

    def __call__(self, *args: Any) -> Any:
        if self._program is None:
            kw = dict(strategy=self.strategy, chunk_size=self.chunk_size, in_axes=self.in_axes)
            self._program = batch(self.fn, **kw)
        return self._program(*args)


class Calibration(NamedTuple):
    """The plan-to-real ratio of one batched function: the largest ``observed / planned`` of its
    ``points`` (``(batch_size, planned_bytes, observed_bytes)``), never below 1.0."""

    ratio: float
    points: tuple[tuple[int, int, int | None], ...]
    source: str
    where: str = "in a fresh process"

    @property
    def observed(self) -> bool:
        """Whether any point was observed (else the margin is uncalibrated: the plan as is)."""
        return any(o is not None for *_, o in self.points)


def calibrate(
    fn: Callable,
    example_item: Any,
    sizes: tuple[int, ...],
    *,
    strategy: str = "vmap",
    chunk_size: int | None = None,
    in_axes: Any = 0,
    known: dict[int, int] | None = None,
) -> Calibration:
    """Observed / planned peak of ``batch(fn, strategy)`` at each of ``sizes``: in a fresh process
    where ``backend_facts().second_process_may_open``, else in this one (:func:`call_rise`);
    with neither, nothing runs (uncalibrated). Cached."""
    shapes = str(jax.tree_util.tree_map(spec_of, example_item))  # structure, shapes, dtypes
    sizes = tuple(sorted(sizes))  # in-process, the peak only grows: the smallest batch first
    key = (id(fn), shapes, strategy, chunk_size, repr(in_axes), sizes)
    if key in CACHE and CACHE[key][0] is fn:
        return CACHE[key][1]
    plain, known = unjit(fn), known or {}
    batched = batch(plain, strategy=strategy, chunk_size=chunk_size, in_axes=in_axes)
    job = BatchJob(plain, strategy, chunk_size, in_axes)
    host = lambda a: a if isinstance(a, jax.ShapeDtypeStruct) else np.asarray(a)  # noqa: E731
    shared = in_axes if isinstance(in_axes, tuple) else ()
    jobs = []
    for b in sizes:  # a shared argument given as an array travels as itself
        args = list(batch_args(example_item, b, in_axes))
        for i, ax in enumerate(shared):
            if ax is None:
                args[i] = jax.tree_util.tree_map(host, example_item[i])
        jobs.append((str(b), observe, job, tuple(args)))
    facts = backend_facts()
    with ThreadPoolExecutor(1) as pool:  # a child runs while this process plans
        child = pool.submit(run_jobs, jobs, TIMEOUT) if facts.second_process_may_open else None
        plan = batch_planner(batched)
        planned = {
            b: int(known.get(b) or plan(*batch_args(example_item, b, in_axes))) for b in sizes
        }
        # closed-over arrays are resident before the call (they travel with fn): the plan counts
        # them, the growth cannot, so they are added to it
        spec = batch_args(example_item, min(sizes), in_axes)
        consts = 0 if strategy == "host" else hoisted_const_bytes(batched, *spec)
    if child is not None:
        where, reply = "in a fresh process", child.result()
    elif device_memory() is not None:  # in-process: after this process's plans
        where, reply = "in this process", observe_in_process(jobs)
    else:
        why = f"not run: no second process may open the {facts.name} and it has no memory_stats()"
        where, reply = "nowhere (not run)", {j[0]: {"bytes": None, "source": why} for j in jobs}
    observed = {b: reply.get(str(b), {}).get("bytes") for b in sizes}
    points = tuple((b, planned[b], None if o is None else o + consts) for b, o in observed.items())
    sources = "; ".join(sorted({str(reply.get(str(b), {}).get("source")) for b in sizes}))
    seen = [o / p for _, p, o in points if o is not None and p > 0]
    held = f" + closed-over arrays ({format_bytes(consts)})" if consts else ""
    how = (
        f"max observed / planned of batches {', '.join(map(str, sizes))}; {sources}{held}; "
        f"jax {jax.__version__} {jax.default_backend()}"
    )
    how = how if seen else f"nothing observed ({sources}): the plan as is"
    result = Calibration(float(max([1.0, *seen])), points, how, where)
    CACHE[key] = (fn, result)
    return result
