"""Runtime, measured the way XLA programs must be measured; ``isolated=True`` in a fresh process.

JAX dispatches asynchronously, so a timing is only honest around ``jax.block_until_ready``
on every output leaf, with the first call (trace + compile) kept apart. A fresh process
answers in JSON on a channel of its own (``batchlab._util.child``), never by pickle.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import resource
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import cloudpickle
import jax
import numpy as np

from batchlab._util.checks import (
    check_bool,
    check_callable,
    check_positive_float,
    check_positive_int,
)
from batchlab._util.child import TIMEOUT, run_child
from batchlab._util.compile import compile_fn, is_jitted
from batchlab.measuring.compiles import count_compiles
from batchlab.measuring.live import DeviceMemory, LiveMemory, device_memory, live_memory
from batchlab.measuring.measurement import PEAK_NOTE, Measurement
from batchlab.measuring.memory import MemoryEstimate, estimate_from_compiled

_OPTIONS = ("repeat", "max_time", "tolerance", "isolated")


def sample(call: Callable[[], Any], number: int) -> float:
    """Seconds per call of ``number`` calls in a row, each blocked until ready."""
    t0 = time.perf_counter()
    for _ in range(number):
        jax.block_until_ready(call())
    return (time.perf_counter() - t0) / number


def autorange(call: Callable[[], Any], min_sample_time: float, max_time: float = 2.0) -> int:
    """Calls per sample so that one sample lasts ``min_sample_time`` (tries grow at most 10x;
    none starts after ``max_time / 5``: five samples must fit the budget)."""
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
    """``repeat`` samples of ``number`` calls; ``None``: at least 5, until the latest 3 moved
    the median by less than ``tolerance`` (a fraction) or ``max_time`` is spent."""
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
    """One candidate, nothing to pair it with: up to ``rounds`` samples in ``max_time`` (2+)."""
    number, start, values = autorange(call, 0.002), time.perf_counter(), []
    while len(values) < rounds and (len(values) < 2 or time.perf_counter() - start < max_time):
        values.append(sample(call, number))
    return values


def _check_call(fn: Callable, args: tuple, kwargs: dict) -> None:
    """Catches a misspelled option (passed on to ``fn``) and a top-level ``None`` argument."""
    try:
        params = inspect.signature(getattr(fn, "__wrapped__", fn)).parameters.values()
    except (TypeError, ValueError):
        params = None
    if params is not None and not any(p.kind is p.VAR_KEYWORD for p in params):
        names = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        for key in [k for k in kwargs if k not in names]:
            close = difflib.get_close_matches(key, _OPTIONS, n=1)
            takes = f"`fn` takes {sorted(names) or 'no keyword arguments'}."
            raise TypeError(
                f"`{key}` is neither an option of measure() nor an argument of `fn` "
                "(keywords measure() does not know are passed on to fn); "
                + (f"did you mean measure's option `{close[0]}=`?" if close else takes)
            )
    for i, a in enumerate([] if is_jitted(fn) else args):  # a jitted fn has its own statics
        if a is None:
            raise TypeError(
                f"`args[{i}]` is None: measure(fn, *args) needs the arrays fn is called with. "
                f"Pass an array (e.g. jnp.ones((8, 128))); if None is a configuration value, "
                f"make it static: measure(jax.jit(fn, static_argnums=({i},)), *args)."
            )


def _compile(fn, args, kwargs):
    """``compile_fn``, refusing outputs that are not arrays and functions that donate."""
    try:
        compiled = compile_fn(fn, args, kwargs)
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
    return compiled


_ERRORS = {"TypeError": TypeError, "ValueError": ValueError, "MemoryError": MemoryError}
_NESTED = {"memory": MemoryEstimate, "live": LiveMemory}
_NESTED |= {"device_before": DeviceMemory, "device_after": DeviceMemory}


def _build(cls, data: Any):
    """Rebuilds dataclass ``cls`` from JSON data, accepting only its own fields and plain values."""
    if not isinstance(data, dict):
        raise ValueError(f"isolated result: expected an object for {cls.__name__}")
    kwargs = {}
    for name in [f.name for f in dataclasses.fields(cls) if f.name in data]:
        value = data[name]
        if isinstance(value, list):
            if not all(isinstance(v, (int, float, str)) for v in value):
                raise ValueError(f"isolated result: {cls.__name__}.{name} holds non-numbers")
            value = tuple(value)
        elif isinstance(value, dict):
            value = _build(_NESTED[name], value)
        elif value is not None and not isinstance(value, (bool, int, float, str)):
            raise ValueError(f"isolated result: {cls.__name__}.{name} is not a plain value")
        kwargs[name] = value
    return cls(**kwargs)


def portable(fn: Any) -> tuple[Any, dict[str, Any] | None]:
    """``(function, jit options)`` to send: a jitted ``fn`` as its Python function and options
    (``None`` options: ``fn`` is not jitted)."""
    if not is_jitted(fn):
        return fn, None
    plain, info = getattr(fn, "__wrapped__", None), getattr(fn, "_jit_info", None)
    if plain is None or info is None:
        raise TypeError(
            f"`fn` is a jax.jit-wrapped {type(fn).__name__} whose Python function this JAX does "
            "not expose, so it cannot be sent to a fresh process. Pass the function before "
            "jax.jit (close over its static arguments) with isolated=True."
        )
    unspecified = [type(leaf).__name__ == "UnspecifiedValue" for leaf in info.out_shardings_leaves]
    if info.user_specified_in_shardings or not all(unspecified) or info.device or info.backend:
        raise TypeError(
            "`fn` is jax.jit-wrapped with in_shardings/out_shardings, a device or a backend; "
            "isolated=True re-wraps its function in a fresh process and does not carry those. "
            "Measure it with isolated=False, or pass the function before jax.jit."
        )
    names = ("static_argnums", "static_argnames", "donate_argnums", "donate_argnames")
    options = {k: getattr(info, k) for k in (*names, "keep_unused", "inline")}
    if info.compiler_options_kvs:
        options["compiler_options"] = dict(info.compiler_options_kvs)
    return plain, options


def _picklable(part: Any) -> bool:
    try:
        cloudpickle.dumps(part)
    except Exception:  # pickling raises TypeError, PicklingError, AttributeError, ...
        return False
    return True


def _isolated(fn, args: tuple, kwargs: dict, options: dict[str, Any]) -> Measurement:
    """Runs :func:`measure` in a fresh process (:func:`measure_here`); its JSON reply rebuilt."""
    plain, jit_options = portable(fn)
    # host copies: a device buffer cannot cross processes
    host = jax.tree_util.tree_map(
        lambda a: np.asarray(a) if isinstance(a, jax.Array) else a, (args, kwargs)
    )
    payload = (plain, jit_options, host, options)
    try:
        data = cloudpickle.dumps(payload)
    except Exception as e:
        reason = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        parts = [("`fn`", plain), *((f"`args[{i}]`", a) for i, a in enumerate(host[0]))]
        parts += [(f"`kwargs[{k!r}]`", v) for k, v in host[1].items()]
        where = next((name for name, part in parts if not _picklable(part)), "`fn`")
        raise TypeError(
            f"{where} cannot be sent to the fresh process of isolated=True: cloudpickle cannot "
            f"pickle it ({reason}). The function, everything it refers to (globals, closed-over "
            "objects) and its arguments must be picklable; move the object that is not (a lock, "
            "an open file, a generator, a client) out of the function or its arguments, or "
            "measure with isolated=False. Nothing has run."
        ) from None
    child = run_child(measure_here, data)
    if child.stderr:
        sys.stderr.write(child.stderr)
    reply = child.reply
    if reply is None:
        raise RuntimeError(
            f"The isolated measurement's subprocess ended (exit status {child.returncode}) "
            "without a result; its stderr is shown above."
            if child.returncode is not None
            else f"The isolated measurement's subprocess ran out of time ({TIMEOUT:.0f} s)."
        )
    if "error" in reply:
        error = reply["error"]
        if error.get("loading"):
            raise TypeError(
                f"in the isolated subprocess: `fn` or its arguments could not be rebuilt in the "
                f"fresh process ({error.get('type')}: {error.get('message')}); define fn in an "
                "importable module or in the notebook itself, or measure with isolated=False."
            )
        cls = _ERRORS.get(error.get("type"), RuntimeError)
        raise cls(f"in the isolated subprocess: {error.get('type')}: {error.get('message')}")
    return _build(Measurement, reply)


def measure(
    fn: Callable,
    *args: Any,
    repeat: int | None = None,
    max_time: float = 2.0,
    tolerance: float = 0.02,
    isolated: bool = False,
    **kwargs: Any,
) -> Measurement:
    """Compiles ``fn`` once, then times steady-state calls.

    Compile time is kept apart (``compile_seconds``, ``first_call_seconds``); samples of
    ``number`` calls each (autoranged to last 20 ms) are taken until the median is stable
    to ``tolerance`` (a fraction) or ``max_time`` is spent (at least 5), or ``repeat`` of them.

    ``fn`` is plain or jitted (static arguments: jit it with them). ``isolated``: measure in a
    fresh Python process, so the device peak (on CPU, the host peak RSS) is this function's
    alone; a jitted ``fn`` travels as its function and jit's options.
    """
    check_callable(fn)
    repeat = check_positive_int(repeat, "repeat", allow_none=True)
    check_positive_float(max_time, "max_time")
    check_positive_float(tolerance, "tolerance")
    check_bool(isolated, "isolated")
    _check_call(fn, args, kwargs)
    if isolated:
        options = {k: v for k, v in locals().items() if k in _OPTIONS and k != "isolated"}
        return _isolated(fn, args, kwargs, options)
    device_before = device_memory()
    with count_compiles() as compiles:
        compiled = _compile(fn, args, kwargs)
        call = compiled.call
        first = sample(call, 1)
    number = autorange(call, 0.02, max_time)
    samples = take_samples(call, number, repeat, max_time, tolerance)
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
        device_before=device_before,
        device_after=device_after,
        notes=(PEAK_NOTE if device_after is not None else no_stats,),
    )


def measure_here(payload: Any) -> dict:
    """The child side of ``measure(..., isolated=True)`` (run by ``batchlab._util.child``)."""
    fn, jit_options, (args, kwargs), options = payload
    if jit_options is not None:  # a jitted fn travels as its function and jit's options
        fn = jax.jit(fn, **jit_options)
    # on the device first: timing excludes host-to-device copies and device_before counts them
    args, kwargs = jax.tree_util.tree_map(
        lambda a: jax.device_put(a) if isinstance(a, np.ndarray) else a, (args, kwargs)
    )
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss is in KiB on Linux
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
    result = measure(fn, *args, **options, **kwargs)
    note = "measured in a fresh process; host peak RSS before the call was "
    note += f"{base_rss / 2**20:.0f} MiB (jax and inputs loaded)"
    return dataclasses.asdict(
        dataclasses.replace(
            result,
            isolated=True,
            host_peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale,
            notes=(*result.notes, note),
        )
    )
