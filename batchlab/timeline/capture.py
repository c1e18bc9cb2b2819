"""Capturing a profiler trace: ``with batchlab.trace() as t:`` and ``batchlab.timeline.timeline(fn,
...)``."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

import jax

from batchlab._util.checks import check_callable, check_positive_int
from batchlab.timeline.model import Timeline, build_timeline
from batchlab.timeline.parse import WRAPPER, find_trace_file


class trace:  # lower case: used as ``with batchlab.trace() as t:``, like jax.profiler.trace
    """Captures a profiler trace of the code inside (into a temporary folder, removed when
    Python exits); ``t.result`` is its :class:`Timeline`: JAX's own spans and your annotations,
    not Python calls.

    Args:
      items: items the code processes (for dispatches per item).
      label: the timeline's name (its repr and plot title).

    Raises:
      TypeError: ``items`` is not an int.
      ValueError: ``items`` is below 1.
      RuntimeError: on entering, when another profiler trace is running.
    """

    def __init__(self, *, items: int | None = None, label: str = "") -> None:
        self.items = check_positive_int(items, "items", allow_none=True)
        self.label = str(label)
        self.result: Timeline | None = None

    def __enter__(self) -> trace:
        self._dir = tempfile.mkdtemp(prefix="batchlab-trace-")
        atexit.register(shutil.rmtree, self._dir, ignore_errors=True)
        options = jax.profiler.ProfileOptions()
        options.python_tracer_level = 0
        try:
            jax.profiler.start_trace(
                self._dir, create_perfetto_trace=True, profiler_options=options
            )
        except RuntimeError as e:
            raise RuntimeError(
                f"could not start a profiler trace ({e}). Only one trace runs at a time: finish "
                "the other `with batchlab.trace()` / jax.profiler.trace block first."
            ) from e
        self._annotation = jax.profiler.TraceAnnotation(WRAPPER)
        self._annotation.__enter__()
        return self

    def __exit__(self, *exc: Any) -> bool:
        self._annotation.__exit__(None, None, None)
        jax.profiler.stop_trace()
        if exc[0] is None:
            path = find_trace_file(self._dir)
            self.result = build_timeline(path, items=self.items, label=self.label)
        return False

    def __getattr__(self, name: str) -> Any:  # t.plot(), t.overlap, ... after the block
        if name.startswith("_") or self.__dict__.get("result") is None:
            raise AttributeError(name)
        return getattr(self.result, name)


def timeline(
    fn: Callable,
    *args: Any,
    steps: int = 3,
    items: int | None = None,
    label: str = "",
) -> Timeline:
    """Runs ``fn(*args)`` once untraced (it compiles), then traces ``steps`` calls, waiting
    only for the last (they dispatch asynchronously); ``items``: items per call.

    Example:
      >>> import jax.numpy as jnp
      >>> t = timeline(jax.jit(lambda x: x + 1), jnp.ones(4), steps=4, items=4)
      >>> t.dispatches, t.dispatches_per_item
      (4, 0.25)
    """
    check_callable(fn, "fn")
    steps = check_positive_int(steps, "steps")
    items = check_positive_int(items, "items", allow_none=True)
    jax.block_until_ready(fn(*args))
    with trace(items=steps * items if items else None, label=label) as t:
        for i in range(steps):
            with jax.profiler.TraceAnnotation(f"step {i}"):
                out = fn(*args)
        jax.block_until_ready(out)
    return t.result
