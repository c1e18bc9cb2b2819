"""Runtime, measured the way XLA programs must be measured.

JAX dispatches work asynchronously: a call returns before the device has
finished. So a timing is only honest around ``jax.block_until_ready`` on
every output leaf, and the first call (trace + compile) must be kept apart
from steady-state calls. :func:`measure` does both, repeats until the
timing is stable, and attaches the memory figures each backend can give.
"""

from __future__ import annotations

import difflib
import html
import inspect
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax

from ._checks import check_callable, check_positive_float, check_positive_int
from ._compile import compile_fn
from ._format import format_bytes, format_seconds, html_table
from .compiles import count_compiles
from .live import DeviceMemory, LiveMemory, device_memory, live_memory
from .memory import MemoryEstimate, estimate_from_compiled

PEAK_NOTE = (
    "device peak_bytes_in_use is process-wide and cannot be reset: it is the highest "
    "figure since the process started; use measure(..., isolated=True) for an exact peak"
)


@dataclass(frozen=True)
class Measurement:
    """What :func:`measure` found for one function and one set of inputs.

    Times are seconds per call. ``times`` holds one figure per timing
    sample; each sample averaged ``number`` back-to-back calls.
    """

    name: str
    trace_lower_seconds: float
    compile_seconds: float
    first_call_seconds: float
    times: tuple[float, ...]
    number: int
    memory: MemoryEstimate
    live: LiveMemory
    compiles: int
    device_before: DeviceMemory | None = None
    device_after: DeviceMemory | None = None
    isolated: bool = False
    host_peak_rss_bytes: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    source: str = "wall clock around jax.block_until_ready (time.perf_counter)"

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def min(self) -> float:
        return min(self.times)

    @property
    def max(self) -> float:
        return max(self.times)

    @property
    def runs(self) -> int:
        """Number of timing samples."""
        return len(self.times)

    @property
    def calls(self) -> int:
        """Number of timed calls (samples x calls per sample)."""
        return len(self.times) * self.number

    @property
    def spread(self) -> float:
        """(max - min) / median of the samples: how noisy the timing was."""
        return (self.max - self.min) / self.median if self.median > 0 else 0.0

    @property
    def cached(self) -> bool:
        """True when no XLA compilation happened: JAX reused a compiled executable."""
        return self.compiles == 0

    @property
    def _cache_note(self) -> str:
        return " (cached: 0 compilations)" if self.cached else ""

    @property
    def device_peak_bytes(self) -> int | None:
        """Process-wide device peak after the runs (see ``notes``)."""
        return None if self.device_after is None else self.device_after.peak_bytes_in_use

    def _rows(self) -> list[tuple[str, str, str]]:
        rows = [
            ("trace + lower", format_seconds(self.trace_lower_seconds), "wall clock"),
            ("compile", format_seconds(self.compile_seconds) + self._cache_note, "wall clock"),
            (
                "run (median)",
                format_seconds(self.median),
                f"wall clock, {self.runs} samples x {self.number} calls",
            ),
            (
                "run (min .. max)",
                f"{format_seconds(self.min)} .. {format_seconds(self.max)}",
                "wall clock",
            ),
            ("planned peak", format_bytes(self.memory.peak_bytes), "compiled memory analysis"),
            ("planned temp", format_bytes(self.memory.temp_bytes), "compiled memory analysis"),
            ("live JAX arrays", format_bytes(self.live.live_array_bytes), "jax.live_arrays()"),
            ("host RSS", format_bytes(self.live.host_rss_bytes), "host process (psutil)"),
        ]
        if self.device_after is not None:
            rows.append(
                (
                    "device in use",
                    format_bytes(self.device_after.bytes_in_use),
                    "device memory stats",
                )
            )
            rows.append(
                (
                    "device peak",
                    format_bytes(self.device_peak_bytes),
                    "device memory stats (process-wide)",
                )
            )
        if self.host_peak_rss_bytes is not None:
            rows.append(
                (
                    "host peak RSS",
                    format_bytes(self.host_peak_rss_bytes),
                    "fresh subprocess (ru_maxrss)",
                )
            )
        return rows

    def __repr__(self) -> str:
        return (
            f"Measurement({self.name}: run {format_seconds(self.median)} median "
            f"[{format_seconds(self.min)} .. {format_seconds(self.max)}, {self.runs} samples x {self.number}], "
            f"compile {format_seconds(self.compile_seconds)}{self._cache_note}, planned peak {format_bytes(self.memory.peak_bytes)})"
        )

    def _repr_html_(self) -> str:
        caption = f"Measurement of {self.name} on {self.memory.backend}"
        table = html_table(self._rows(), header=("figure", "value", "source"), caption=caption)
        notes = "".join(
            f"<div style='font-size:smaller'>note: {html.escape(n)}</div>" for n in self.notes
        )
        return table + notes


def _autorange(call: Callable[[], Any], min_sample_time: float, max_time: float = 2.0) -> int:
    """Smallest number of calls (1, 2, 5, 10, 20, ...) whose run lasts ``min_sample_time``.

    Never more calls than fit in ``max_time / 5`` (five samples must fit the budget).
    """
    number, start = 1, time.perf_counter()
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            jax.block_until_ready(call())
        if time.perf_counter() - t0 >= min_sample_time or number >= 10**6:
            return number
        if time.perf_counter() - start > max_time / 5:
            return number
        for factor in (2, 2.5, 2):
            number = int(number * factor)
            t0 = time.perf_counter()
            for _ in range(number):
                jax.block_until_ready(call())
            if time.perf_counter() - t0 >= min_sample_time:
                return number


def _sample(call: Callable[[], Any], number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        jax.block_until_ready(call())
    return (time.perf_counter() - t0) / number


def _stable(samples: list[float], tolerance: float) -> bool:
    """Stable when adding the latest 3 samples moved the median by < tolerance."""
    if len(samples) < 5:
        return False
    before = statistics.median(samples[:-3])
    after = statistics.median(samples)
    return abs(after - before) <= tolerance * after


_OPTIONS = (
    "repeat",
    "number",
    "warmup",
    "min_sample_time",
    "max_time",
    "tolerance",
    "isolated",
    "static_argnums",
    "static_argnames",
)


def _check_call(fn: Callable, args: tuple, kwargs: dict, static_argnums) -> None:
    """Catches a misspelled option (passed on to ``fn``) and a top-level ``None`` argument."""
    try:
        sig = inspect.signature(getattr(fn, "__wrapped__", fn))
    except (TypeError, ValueError):
        sig = None
    if sig is not None:
        params = sig.parameters.values()
        takes_any = any(p.kind is p.VAR_KEYWORD for p in params)
        names = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        for key in kwargs:
            if not takes_any and key not in names:
                close = difflib.get_close_matches(key, _OPTIONS, n=1)
                hint = (
                    f"did you mean measure's option `{close[0]}=`?"
                    if close
                    else (f"`fn` takes {sorted(names) or 'no keyword arguments'}.")
                )
                raise TypeError(
                    f"`{key}` is neither an option of measure() nor an argument of `fn` "
                    f"(keywords measure() does not know are passed on to fn); {hint}"
                )
    static = {static_argnums} if isinstance(static_argnums, int) else set(static_argnums or ())
    for i, a in enumerate(args):
        if a is None and i not in static and i - len(args) not in static:
            raise TypeError(
                f"`args[{i}]` is None: measure(fn, *args) needs the arrays fn is called with. "
                f"Pass an array (e.g. jnp.ones((8, 128))); if None is a configuration value, "
                f"mark it static: static_argnums=({i},)."
            )


def measure(
    fn: Callable,
    *args: Any,
    repeat: int | None = None,
    number: int | None = None,
    warmup: int = 1,
    min_sample_time: float = 0.02,
    max_time: float = 2.0,
    tolerance: float = 0.02,
    isolated: bool = False,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    **kwargs: Any,
) -> Measurement:
    """Compiles ``fn`` once, then times steady-state calls.

    1. Traces, lowers and compiles, timing each stage (``compile_seconds``).
    2. Runs ``warmup`` calls, the first timed alone (``first_call_seconds``).
    3. Picks ``number`` calls per sample so one sample lasts at least
       ``min_sample_time`` (timeit's autorange), then takes samples until
       the median is stable to ``tolerance`` or ``max_time`` is spent
       (at least 5 samples); ``repeat=`` fixes the number of samples instead.
    Every call is followed by ``jax.block_until_ready`` on all output leaves.

    Args:
      fn: the function, plain or already ``jax.jit``-wrapped.
      *args: its positional arguments.
      repeat: exact number of timing samples (``None``: until stable).
      number: calls per sample (``None``: autorange).
      warmup: calls before timing starts (at least 1).
      min_sample_time: seconds one sample should last when autoranging.
      max_time: time budget in seconds for the samples when ``repeat`` is None.
      tolerance: relative change of the median that counts as stable.
      isolated: measure in a fresh Python process, so the device peak (or,
        on CPU, the host peak RSS) belongs to this function alone.
      static_argnums, static_argnames: configuration arguments, as in ``jax.jit``.
      **kwargs: keyword arguments of ``fn``.

    Returns:
      A :class:`Measurement`.

    Raises:
      TypeError: ``fn`` is not callable, or an argument is not an array.
      ValueError: ``repeat``, ``number`` or ``warmup`` below 1; ``fn`` donates its inputs.

    Example:
      >>> import jax.numpy as jnp
      >>> m = measure(lambda x: (x @ x).sum(), jnp.ones((64, 64)), repeat=5)
      >>> m.runs, m.compiles, m.memory.argument_bytes
      (5, 1, 16384)
    """
    check_callable(fn)
    repeat = check_positive_int(repeat, "repeat", allow_none=True)
    number = check_positive_int(number, "number", allow_none=True)
    warmup = check_positive_int(warmup, "warmup")
    check_positive_float(min_sample_time, "min_sample_time")
    check_positive_float(max_time, "max_time")
    check_positive_float(tolerance, "tolerance")
    if not isinstance(isolated, bool):
        raise TypeError(
            f"`isolated` must be True or False, got {type(isolated).__name__} {isolated!r}."
        )
    _check_call(fn, args, kwargs, static_argnums)
    if isolated:
        from ._isolated import measure_in_subprocess

        options = dict(
            repeat=repeat,
            number=number,
            warmup=warmup,
            min_sample_time=min_sample_time,
            max_time=max_time,
            tolerance=tolerance,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
        )
        return measure_in_subprocess(fn, args, kwargs, options)

    device_before = device_memory()
    with count_compiles() as compiles:
        try:
            compiled = compile_fn(
                fn, args, kwargs, static_argnums=static_argnums, static_argnames=static_argnames
            )
        except TypeError as e:
            if "not a valid JAX type" not in str(e):
                raise
            raise TypeError(
                "`fn` returned a value that is not an array (JAX can only return arrays, numbers "
                "and pytrees of them): " + str(e).splitlines()[0] + ". Return the array itself; "
                "keep strings and other Python values outside the measured function."
            ) from None
        donated = getattr(compiled.executable, "donate_argnums", ())
        if donated:
            raise ValueError(
                f"`fn` donates argument(s) {tuple(donated)}: measure() calls it many times on the same "
                "inputs, but a donated input is deleted by the first call. Measure a version without "
                "donate_argnums, and use memory_estimate() to see what donation saves (alias_bytes)."
            )
        estimate = estimate_from_compiled(compiled.executable, compiled.name)
        call = compiled.call
        t0 = time.perf_counter()
        jax.block_until_ready(call())
        first = time.perf_counter() - t0
    for _ in range(warmup - 1):
        jax.block_until_ready(call())

    capped = None
    if number is None:
        number = _autorange(call, min_sample_time, max_time)
    elif repeat is None and first * number > max_time / 5:
        # `max_time` bounds the whole timing: at least 5 samples must fit in it
        capped, number = number, max(1, int(max_time / 5 / max(first, 1e-9)))
    samples: list[float] = []
    if repeat is not None:
        samples = [_sample(call, number) for _ in range(repeat)]
    else:
        start = time.perf_counter()
        while len(samples) < 100:
            samples.append(_sample(call, number))
            if _stable(samples, tolerance):
                break
            if time.perf_counter() - start > max_time and len(samples) >= 5:
                break

    device_after = device_memory()
    notes = []
    if capped is not None:
        notes.append(
            f"number={capped} calls per sample would exceed max_time={max_time} s; "
            f"capped at {number} (one call took {first:.3g} s)"
        )
    if device_after is not None:
        notes.append(PEAK_NOTE)
    else:
        notes.append(
            f"{jax.default_backend()} backend: no device memory stats; live figures are JAX "
            "array bytes and host RSS"
        )
    return Measurement(
        name=compiled.name,
        trace_lower_seconds=compiled.trace_lower_seconds,
        compile_seconds=compiled.compile_seconds,
        first_call_seconds=first,
        times=tuple(samples),
        number=number,
        memory=estimate,
        live=live_memory(),
        compiles=compiles.count,
        device_before=device_before,
        device_after=device_after,
        notes=tuple(notes),
    )
