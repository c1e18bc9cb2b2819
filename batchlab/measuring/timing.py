"""Runtime around ``jax.block_until_ready`` (JAX dispatches asynchronously), compile apart, and
:class:`Measurement`, what :func:`measure` found."""

from __future__ import annotations

import inspect
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax

from batchlab._util.checks import check_callable, check_positive_float, check_positive_int
from batchlab._util.format import Rows, format_bytes, format_seconds
from batchlab.measuring.compiles import count_compiles
from batchlab.measuring.live import DeviceMemory, LiveMemory, device_memory, live_memory
from batchlab.measuring.plan import MemoryEstimate, compile_fn, estimate_from_compiled, is_jitted

COMPILE_NOTE = (
    "compile_seconds = first call minus the steady median: a Python-dispatched strategy "
    "compiles its programs inside its first call"
)

PEAK_NOTE = "device peak_bytes_in_use is process-wide: the highest since the process started"


@dataclass(frozen=True)
class Measurement(Rows):
    """What :func:`measure` found for one function and one set of inputs."""

    name: str
    trace_lower_seconds: float
    compile_seconds: float
    first_call_seconds: float
    times: tuple[float, ...]
    number: int
    memory: MemoryEstimate
    live: LiveMemory
    compiles: int
    device_after: DeviceMemory | None = None
    notes: tuple[str, ...] = ()
    source: str = "wall clock around jax.block_until_ready (time.perf_counter)"
    _header = ("figure", "value", "source")

    @property
    def median(self) -> float:
        """The median time, in seconds."""
        return statistics.median(self.times)

    @property
    def min(self) -> float:
        """The fastest time, in seconds."""
        return min(self.times)

    @property
    def max(self) -> float:
        """The slowest time, in seconds."""
        return max(self.times)

    @property
    def runs(self) -> int:
        """How many timing samples."""
        return len(self.times)

    def _rows(self) -> list[tuple[str, str, str]]:
        cached = " (a cache lookup: 0 compilations)" if self.compiles == 0 else ""
        samples = f"wall clock, {self.runs} samples x {self.number} calls"
        span = f"{format_seconds(self.min)} .. {format_seconds(self.max)}"
        plan, device = "compiled memory analysis", "device memory stats"
        rows = [
            ("trace + lower", format_seconds(self.trace_lower_seconds), "wall clock"),
            ("compile", format_seconds(self.compile_seconds) + cached, "wall clock"),
            ("run (median)", format_seconds(self.median), samples),
            ("run (min .. max)", span, "wall clock"),
            ("planned peak", format_bytes(self.memory.planned_bytes), plan),
            ("planned temp", format_bytes(self.memory.temp_bytes), plan),
            ("live JAX arrays", format_bytes(self.live.live_array_bytes), "jax.live_arrays()"),
            ("host RSS", format_bytes(self.live.host_rss_bytes), "host process (psutil)"),
        ]
        if self.device_after is not None:
            rows.append(("device in use", format_bytes(self.device_after.bytes_in_use), device))
            peak = format_bytes(self.device_after.peak_bytes_in_use)
            rows.append(("device peak", peak, f"{device} (process-wide)"))
        return rows

    def __repr__(self) -> str:
        rows = {k: v for k, v, _ in self._rows()}
        return (
            f"Measurement({self.name}: run {rows['run (median)']} median "
            f"[{rows['run (min .. max)']}, {self.runs} samples x {self.number}], "
            f"compile {rows['compile']}, planned peak {rows['planned peak']}"
            + (f", device peak {rows['device peak']})" if "device peak" in rows else ")")
        )

    def _title(self) -> str:
        return f"Measurement of {self.name} on {self.memory.backend}"

    def _notes(self) -> tuple[str, ...]:
        return tuple(f"note: {n}" for n in self.notes)


def sample(call: Callable[[], Any], number: int) -> float:
    """Seconds per call of ``number`` calls in a row, each blocked until ready."""
    t0 = time.perf_counter()
    for _ in range(number):
        jax.block_until_ready(call())
    return (time.perf_counter() - t0) / number


def autorange(call: Callable[[], Any], min_sample_time: float, max_time: float = 2.0) -> int:
    """Calls per sample so that one lasts ``min_sample_time`` (no try after ``max_time / 5``)."""
    number, start = 1, time.perf_counter()
    while True:
        elapsed = sample(call, number) * number
        late = time.perf_counter() - start > max_time / 5
        if elapsed >= min_sample_time or number >= 10**6 or late:
            return number
        wanted = int(number * min_sample_time / max(elapsed, 1e-9)) + 1
        number = max(number + 1, min(10 * number, wanted))


def take_samples(
    call: Callable[[], Any], number: int, repeat: int | None, max_time: float, tolerance: float
) -> list[float]:
    """``repeat`` samples; ``None``: 5+, until the median is stable to ``tolerance`` (or late)."""
    if repeat is not None:
        return [sample(call, number) for _ in range(repeat)]
    samples: list[float] = []
    start = time.perf_counter()
    while len(samples) < 100:
        samples.append(sample(call, number))
        if len(samples) >= 5:
            median = statistics.median(samples)
            moved = abs(median - statistics.median(samples[:-3]))
            if moved <= tolerance * median or time.perf_counter() - start > max_time:
                break
    return samples


def time_alone(call: Callable[[], Any], rounds: int, max_time: float) -> list[float]:
    """Up to ``rounds`` samples (at least 2) of one call in ``max_time``."""
    number, start, values = autorange(call, 0.002), time.perf_counter(), []
    while len(values) < rounds and (len(values) < 2 or time.perf_counter() - start < max_time):
        values.append(sample(call, number))
    return values


def _check_call(fn: Callable, args: tuple, kwargs: dict) -> None:
    try:
        params = inspect.signature(getattr(fn, "__wrapped__", fn)).parameters.values()
    except (TypeError, ValueError):
        params = None
    if params is not None and not any(p.kind is p.VAR_KEYWORD for p in params):
        names = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        for key in [k for k in kwargs if k not in names]:
            raise TypeError(
                f"`{key}` is neither an option of measure() (`repeat=`, `max_time=`) nor an "
                f"argument of `fn` (it takes {sorted(names)})."
            )
    for i, a in enumerate([] if is_jitted(fn) else args):  # a jitted fn has its own statics
        if a is None:
            raise TypeError(
                f"`args[{i}]` is None: measure(fn, *args) needs the arrays fn is called with. "
                f"Pass an array (e.g. jnp.ones((8, 128))); if None is a configuration value, "
                f"make it static: measure(jax.jit(fn, static_argnums=({i},)), *args)."
            )


def _compile(fn, args, kwargs):
    try:
        compiled = compile_fn(fn, args, kwargs)
    except TypeError as e:
        if "not a valid JAX type" not in str(e):
            raise
        raise TypeError(
            f"`fn` returned a value that is not an array ({str(e).splitlines()[0]}); return "
            "arrays, numbers or pytrees of them, and keep other Python values outside fn."
        ) from None
    donated = getattr(compiled.executable, "donate_argnums", ())
    if donated:
        raise ValueError(
            f"`fn` donates argument(s) {tuple(donated)}, deleted by the first of measure()'s many "
            "calls: measure it without donate_argnums (memory_estimate shows the alias_bytes)."
        )
    return compiled


def measure(
    fn: Callable,
    *args: Any,
    repeat: int | None = None,
    max_time: float = 2.0,
    **kwargs: Any,
) -> Measurement:
    """Compiles ``fn`` (plain or jitted) once, then times steady-state calls (see take_samples).

    Args:
      fn: the function, plain or ``jax.jit``-ed.
      *args: its arguments (arrays; a ``jax.ShapeDtypeStruct`` cannot run).
      repeat: timing samples to take (``None``: 5 or more, until the median is stable).
      max_time: seconds the timing may take.
      **kwargs: keyword arguments of ``fn``.

    Returns:
      A :class:`Measurement`: compile and run times apart, the plan, live memory.

    Raises:
      TypeError: ``fn`` is not callable, an option of the wrong type, or arguments ``fn``
        cannot take (its own error, before anything compiles).
      ValueError: an option out of range.

    Example:
      >>> import jax.numpy as jnp
      >>> m = measure(lambda x: x @ x, jnp.ones((64, 64)), repeat=3)
      >>> m.runs, m.memory.output_bytes
      (3, 16384)
    """
    check_callable(fn)
    repeat = check_positive_int(repeat, "repeat", allow_none=True)
    check_positive_float(max_time, "max_time")
    _check_call(fn, args, kwargs)
    with count_compiles() as compiles:
        compiled = _compile(fn, args, kwargs)
        call = compiled.call
        first = sample(call, 1)
    number = autorange(call, 0.02, max_time)
    samples = take_samples(call, number, repeat, max_time, 0.02)  # median stable to 2%
    device_after = device_memory()
    no_stats = f"{jax.default_backend()} backend: no device memory stats; live figures are JAX "
    no_stats += "array bytes and host RSS"
    return Measurement(
        name=compiled.name,
        trace_lower_seconds=compiled.trace_lower_seconds,
        compile_seconds=compiled.compile_seconds,
        first_call_seconds=first,
        times=tuple(samples),
        number=number,
        memory=estimate_from_compiled(compiled.executable, compiled.name),
        live=live_memory(),
        compiles=compiles.count,
        device_after=device_after,
        notes=(PEAK_NOTE if device_after is not None else no_stats,),
    )
