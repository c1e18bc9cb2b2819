"""Compilations made visible: how many (``count_compiles``) and why (``explain_compiles``)."""

from __future__ import annotations

import functools
import logging
import logging.handlers
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NamedTuple

import jax

from batchlab._util.format import Rows, format_seconds

COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
#: tracing to a jaxpr, then lowering the jaxpr to an MLIR module (JAX's dispatch.py names)
TRACE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
)
SOURCE = "count_compiles (jax.monitoring) and JAX's own jax_explain_cache_misses log"
_URL = re.compile(r"https?://\S+")
_lock = threading.Lock()
_active: list[CompileCount] = []


@dataclass(eq=False, repr=False)
class CompileCount:
    """Compilations seen while a :func:`count_compiles` block was open."""

    match: str | None = None
    names: list[str] = field(default_factory=list)
    seconds: float = 0.0
    trace_seconds: float = 0.0
    #: called as ``on_compile(name, seconds)`` after each compilation is recorded
    on_compile: Callable[[str, float], None] | None = None

    @property
    def count(self) -> int:
        """How many compilations were seen."""
        return len(self.names)

    def __repr__(self) -> str:
        return f"CompileCount(count={self.count}, compile time={format_seconds(self.seconds)})"


def _listener(event: str, duration: float, **kwargs) -> None:
    name = str(kwargs.get("fun_name", "?"))
    with _lock:
        for c in _active:
            if c.match is not None and c.match not in name:
                continue
            if event in TRACE_EVENTS:
                c.trace_seconds += duration
            elif event == COMPILE_EVENT:
                c.names.append(name)
                c.seconds += duration
                if c.on_compile is not None:
                    c.on_compile(name, duration)


@functools.cache
def _install() -> None:
    jax.monitoring.register_event_duration_secs_listener(_listener)


@contextmanager
def count_compiles(match: str | None = None) -> Iterator[CompileCount]:
    """Counts XLA compilations in the ``with`` block whose name contains ``match`` (``None``: all).

    Args:
      match: part of the compiled function's name (``"jit(f)"`` holds ``"f"``), or ``None``.

    Returns:
      A context manager giving a :class:`CompileCount` (``.count``, read during or after).

    Raises:
      TypeError: ``match`` is not a string or ``None``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> def double(x):
      ...     return x * 2
      >>> with count_compiles("double") as c:
      ...     _ = [jax.jit(double)(jnp.ones(n)) for n in (3, 3, 4)]  # two shapes
      >>> c.count
      2
    """
    if match is not None and not isinstance(match, str):
        raise TypeError(f"`match` must be part of a function's name (str) or None, got {match!r}.")
    counter = CompileCount(match)
    with _lock:
        _install()
        _active.append(counter)
    try:
        yield counter
    finally:
        with _lock:
            _active.remove(counter)


class CompileReason(NamedTuple):
    """One call: how many XLA compilations it caused, and JAX's reason (``""``: none logged)."""

    label: str
    compiles: int
    reason: str


@dataclass(frozen=True)
class CompileReasons(Rows):
    """Every call of :func:`explain_compiles`, in order."""

    rows: tuple[CompileReason, ...]
    source: str = SOURCE
    _header = ("call", "compilations", "JAX's reason (jax_explain_cache_misses)")

    def __getitem__(self, label: str) -> CompileReason:
        """The first call with this label: ``why["s = 2.0, ..."].reason``."""
        found = [r for r in self.rows if r.label == label]
        if not found:
            raise KeyError(f"No call labelled {label!r}; labels: {[r.label for r in self.rows]}.")
        return found[0]

    def _rows(self) -> list[tuple[str, str, str]]:
        hit = "(compiled, but JAX logged no tracing cache miss)"
        shown = {0: "(cache hit: nothing logged)"}
        return [
            (r.label, str(r.compiles), r.reason or shown.get(r.compiles, hit)) for r in self.rows
        ]

    def _title(self) -> str:
        return f"source: {self.source}"


def _reason(message: str) -> str:
    """JAX's explanation without the first line (it names a file and line) or URLs."""
    keep = []
    for line in (ln.strip() for ln in message.splitlines()[1:]):
        if not line or line.startswith(("for ", "all previously seen")) or " defined at " in line:
            continue
        first = line.startswith("never seen function")
        keep.append("never seen function (first call)" if first else _URL.sub("", line).strip())
    return " ".join(keep)


def _is_call(c) -> bool:
    triple = isinstance(c, (tuple, list)) and len(c) == 3
    return triple and isinstance(c[0], str) and callable(c[1]) and isinstance(c[2], tuple)


def explain_compiles(calls: Sequence[tuple[str, Callable, tuple]]) -> CompileReasons:
    """Calls each ``(label, fn, args)`` in order; counts its compilations and JAX's reason.

    Args:
      calls: ``(label, fn, args)`` triples, e.g. ``[("new shape", jax.jit(f), (x,))]``.

    Returns:
      :class:`CompileReasons`: per call, its label, compilations and JAX's cache-miss reason.

    Raises:
      TypeError: ``calls`` is not a list of ``(str, callable, tuple)`` triples.
    """
    listed = isinstance(calls, Sequence) and not isinstance(calls, (str, bytes))
    bad = [c for c in calls if not _is_call(c)] if listed else [calls]
    if bad:
        raise TypeError(
            "`calls` must be a list of (label: str, fn, args: tuple) triples, e.g. "
            f"[('new shape', jax.jit(f), (x,))]; got {bad[0]!r:.80}."
        )
    handler, logger = logging.handlers.BufferingHandler(2**31), logging.getLogger("jax")
    handler.setLevel(logging.WARNING)
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False  # JAX's lines go to this table, not to stderr
    rows = []
    try:
        with jax.explain_cache_misses(True):
            for label, fn, args in calls:
                start = len(handler.buffer)
                with count_compiles() as c:
                    jax.block_until_ready(fn(*args))
                messages = [r.getMessage() for r in handler.buffer[start:]]
                reasons = [_reason(m) for m in messages if "CACHE MISS" in m]
                rows.append(CompileReason(label, c.count, "; ".join(r for r in reasons if r)))
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
    return CompileReasons(tuple(rows))
