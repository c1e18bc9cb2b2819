"""What is in ``jax.jit``'s cache key, shown call by call in JAX's own words."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax

from batchlab._util.format import Rows
from batchlab.measuring.compiles import count_compiles

SOURCE = "count_compiles (jax.monitoring) and JAX's own jax_explain_cache_misses log"
_URL = re.compile(r"https?://\S+")


@dataclass(frozen=True)
class CompileReason:
    """One call: how many XLA compilations it caused, and JAX's reason (``""``: none logged)."""

    label: str
    compiles: int
    reason: str


@dataclass(frozen=True)
class CompileReasons(Rows):
    """Every call of :func:`explain_compiles`, in order."""

    rows: tuple[CompileReason, ...]
    source: str = SOURCE

    def __getitem__(self, label: str) -> CompileReason:
        for row in self.rows:
            if row.label == label:
                return row
        raise KeyError(f"No call labelled {label!r}; labels: {[r.label for r in self.rows]}.")

    def _rows(self) -> list[tuple[str, str, str]]:
        return [(r.label, str(r.compiles), _shown(r)) for r in self.rows]

    _header = ("call", "compilations", "JAX's reason (jax_explain_cache_misses)")

    def _title(self) -> str:
        return f"source: {self.source}"


def _shown(row: CompileReason) -> str:
    if row.reason:
        return row.reason
    if row.compiles == 0:
        return "(cache hit: nothing logged)"
    return "(compiled, but JAX logged no tracing cache miss)"


def _reason(message: str) -> str:
    """JAX's explanation without the first line (it names a file and line) or URLs."""
    lines = [ln.strip() for ln in message.splitlines()[1:]]
    keep = []
    for ln in lines:
        if not ln or ln.startswith(("for ", "all previously seen")) or " defined at " in ln:
            continue
        if ln.startswith("never seen function"):
            keep.append("never seen function (first call)")
            continue
        keep.append(_URL.sub("", ln).strip())
    return " ".join(keep)


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "CACHE MISS" in message:
            self.messages.append(message)


def _check_calls(calls: Any) -> list[tuple[str, Callable, tuple]]:
    if not isinstance(calls, Sequence) or isinstance(calls, (str, bytes)):
        raise TypeError(
            f"`calls` must be a list of (label, fn, args) triples, got {type(calls).__name__}."
        )
    checked = []
    for k, call in enumerate(calls):
        if not (isinstance(call, (tuple, list)) and len(call) == 3):
            raise TypeError(
                f"`calls[{k}]` must be a (label, fn, args) triple, got {call!r:.80}; "
                "e.g. ('new shape', jax.jit(f), (x,))."
            )
        label, fn, args = call
        if not isinstance(label, str):
            raise TypeError(f"`calls[{k}]`: the label must be a str, got {type(label).__name__}.")
        if not callable(fn):
            raise TypeError(f"`calls[{k}]` ({label!r}): fn must be callable, got {fn!r:.60}.")
        if not isinstance(args, tuple):
            raise TypeError(
                f"`calls[{k}]` ({label!r}): args must be a tuple, got {type(args).__name__}; "
                "write (x,) for one argument."
            )
        checked.append((label, fn, args))
    labels = [c[0] for c in checked]
    if len(set(labels)) != len(labels):
        raise ValueError(f"`calls` labels must be distinct, got {labels}.")
    return checked


def explain_compiles(
    calls: Sequence[tuple[str, Callable, tuple]], *, match: str | None = None
) -> CompileReasons:
    """Runs each call in order; counts its compilations and records JAX's reason.

    Args:
      calls: ``(label, fn, args)`` triples; ``fn(*args)`` is called and
        waited for (``jax.block_until_ready``). Use the same jitted ``fn``
        in several calls to see which changes hit its cache.
      match: only count computations whose name contains this text.

    Returns:
      A :class:`CompileReasons`, one row per call.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> f = jax.jit(lambda x: 2 * x)
      >>> r = explain_compiles([("f32", f, (jnp.ones(3),)), ("again", f, (jnp.zeros(3),)),
      ...                       ("int32", f, (jnp.ones(3, jnp.int32),))])
      >>> [row.compiles for row in r.rows]
      [1, 0, 1]
      >>> r["int32"].reason
      'different input types: * at x, now i32[3] and before f32[3]'
    """
    checked = _check_calls(calls)
    handler = _Collect()
    logger = logging.getLogger("jax")
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False  # JAX's lines go to this table, not to stderr
    rows = []
    try:
        with jax.explain_cache_misses(True):
            for label, fn, args in checked:
                start = len(handler.messages)
                with count_compiles(match=match) as c:
                    jax.block_until_ready(fn(*args))
                reasons = [_reason(m) for m in handler.messages[start:]]
                rows.append(CompileReason(label, c.count, "; ".join(r for r in reasons if r)))
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
    return CompileReasons(tuple(rows))
