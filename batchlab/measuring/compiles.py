"""Counting XLA compilations, to make recompilation visible."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import jax

from batchlab._util.format import format_seconds

COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
#: tracing to a jaxpr, then lowering the jaxpr to an MLIR module (JAX's dispatch.py names)
TRACE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
)

_lock = threading.Lock()
_active: list[CompileCount] = []
_installed = False


class CompileCount:
    """Compilations seen while a :func:`count_compiles` block was open."""

    def __init__(self, match: str | None = None) -> None:
        self.match = match
        self.names: list[str] = []
        self.seconds = 0.0
        self.trace_seconds = 0.0
        self.open = True
        #: called as ``on_compile(name, seconds)`` after each compilation is recorded
        self.on_compile: Callable[[str, float], None] | None = None

    @property
    def count(self) -> int:
        return len(self.names)

    def by_name(self) -> Counter:
        """How many times each computation was compiled."""
        return Counter(self.names)

    def _record(self, name: str, seconds: float) -> None:
        if self.match is not None and self.match not in name:
            return
        self.names.append(name)
        self.seconds += seconds
        if self.on_compile is not None:  # e.g. an explorer's live "compiled ..." status line
            self.on_compile(name, seconds)

    def _record_trace(self, name: str, seconds: float) -> None:
        if self.match is None or self.match in name:
            self.trace_seconds += seconds

    def __repr__(self) -> str:
        state = "counting" if self.open else "closed"
        return f"CompileCount(count={self.count}, compile time={format_seconds(self.seconds)}, {state})"

    def __int__(self) -> int:
        return self.count


def _listener(event: str, duration: float, **kwargs) -> None:
    if event != COMPILE_EVENT and event not in TRACE_EVENTS:
        return
    name = str(kwargs.get("fun_name", "?"))
    with _lock:
        for counter in _active:
            if event == COMPILE_EVENT:
                counter._record(name, duration)
            else:
                counter._record_trace(name, duration)


def _install() -> None:
    global _installed
    with _lock:
        if not _installed:
            # Installed once per process and never removed: the listener is a
            # no-op while no counter is active, and this avoids depending on
            # unregister APIs that differ between jax versions.
            jax.monitoring.register_event_duration_secs_listener(_listener)
            _installed = True


@contextmanager
def count_compiles(match: str | None = None) -> Iterator[CompileCount]:
    """Counts XLA compilations inside the ``with`` block.

    Args:
      match: only count computations whose name contains this text (e.g.
        the function's name); ``None`` counts all, including the small
        computations that creating arrays (``jnp.ones``) may compile.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> def double(x):
      ...     return 2 * x
      >>> f = jax.jit(double)
      >>> xs = [jnp.ones(n) for n in (3, 4, 3)]
      >>> with count_compiles(match="double") as c:
      ...     for x in xs:
      ...         _ = f(x)
      >>> c.count   # shapes (3,) and (4,): two compilations, the second (3,) is cached
      2
    """
    if match is not None and not isinstance(match, str):
        raise TypeError(
            f"`match` must be a string (part of a function's name, e.g. match='my_fn') or None, "
            f"got {type(match).__name__} {match!r}."
        )
    _install()
    counter = CompileCount(match)
    with _lock:
        _active.append(counter)
    try:
        yield counter
    finally:
        with _lock:
            _active.remove(counter)
        counter.open = False
