"""Batching strategies side by side on the same inputs, measured, never assumed.

:func:`compare` builds each strategy with :func:`batchlab.batch`, measures
it with :func:`batchlab.measure` (compile time apart from steady run time,
XLA's planned peak and temp memory, compilations) or, for the strategies
that dispatch from Python (the eager loop, host chunks), as it runs
(:mod:`batchlab.batching.dispatch`), counts dispatches, checks that it
agrees with ``jax.vmap``, and optionally sweeps the batch size by taking
the first ``b`` items of the inputs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from batchlab._util.checks import (
    check_bool,
    check_callable,
    check_positive_float,
    check_positive_int,
    check_positive_ints,
)
from batchlab._util.compile import function_name
from batchlab._util.format import format_bytes, format_count, format_seconds, html_table
from batchlab.batching.axes_spec import resolve
from batchlab.batching.comparison_plot import plot_comparison
from batchlab.batching.dispatch import count_dispatches, dispatched_plan, measure_dispatched
from batchlab.batching.strategies import STRATEGIES, batch
from batchlab.measuring.measurement import Measurement
from batchlab.measuring.timing import measure

# "unrolled": the "loop" strategy measured under jax.jit, where the Python loop unrolls
COMPARED: tuple[str, ...] = (*STRATEGIES, "unrolled")
DEFAULT_STRATEGIES = ("loop", "vmap", "map", "chunked", "host")
DISPATCHED = ("loop", "host")  # run from Python, one dispatch per item or chunk
SOURCES = (
    "run and compile: wall clock around jax.block_until_ready (batchlab.measure); "
    "memory: compiled memory analysis (XLA)"
)


@dataclass(frozen=True)
class StrategyResult:
    """One strategy at one batch size: its :class:`Measurement`, or why there is none."""

    strategy: str
    items: int
    chunk: int | None
    measurement: Measurement | None
    agrees: bool | None = None
    error: str | None = None
    dispatches: int | None = None  # calls into compiled programs per batch, counted by the strategy

    @property
    def label(self) -> str:
        name = {"loop": "loop (eager)", "unrolled": "loop unrolled under jit"}.get(
            self.strategy, self.strategy
        )
        return f"{name} (chunk {self.chunk})" if self.chunk else name

    @property
    def run_seconds(self) -> float | None:
        return None if self.measurement is None else self.measurement.median

    @property
    def compile_seconds(self) -> float | None:
        m = self.measurement
        return None if m is None else m.trace_lower_seconds + m.compile_seconds

    @property
    def items_per_second(self) -> float | None:
        t = self.run_seconds
        return None if not t else self.items / t

    @property
    def temp_bytes(self) -> int | None:
        return None if self.measurement is None else self.measurement.memory.temp_bytes

    @property
    def peak_bytes(self) -> int | None:
        return None if self.measurement is None else self.measurement.memory.planned_bytes

    @property
    def compiles(self) -> int | None:
        return None if self.measurement is None else self.measurement.compiles


@dataclass(frozen=True)
class Comparison:
    """Every strategy measured on the same inputs (at one or several batch sizes)."""

    name: str
    results: tuple[StrategyResult, ...]
    source: str = SOURCES

    @property
    def strategies(self) -> list[str]:
        return list(dict.fromkeys(r.strategy for r in self.results))

    @property
    def batch_sizes(self) -> list[int]:
        return sorted({r.items for r in self.results})

    def get(self, strategy: str, items: int | None = None) -> StrategyResult:
        """The result of ``strategy`` at ``items`` (default: the largest batch)."""
        items = max(self.batch_sizes) if items is None else items
        for r in self.results:
            if r.strategy == strategy and r.items == items:
                return r
        raise KeyError(
            f"no result for strategy={strategy!r} at {items} items; have "
            f"{self.strategies} at {self.batch_sizes}."
        )

    def _cells(self, r: StrategyResult) -> tuple:
        if r.measurement is None:
            return (r.label, r.items, "-", "-", "-", "-", "-", "-", "-", r.error or "")
        agrees = {True: "yes", False: "NO", None: "-"}[r.agrees]
        return (
            r.label,
            r.items,
            format_bytes(r.temp_bytes),
            format_bytes(r.peak_bytes),
            r.compiles,
            r.dispatches,
            agrees,
            format_seconds(r.run_seconds),
            format_seconds(r.compile_seconds),
            f"{format_count(r.items_per_second)} items/s",
        )

    _header = (
        "strategy",
        "items",
        "planned temp",
        "planned peak",
        "compiles",
        "dispatches",
        "agrees with vmap",
        "run (median)",
        "compile",
        "throughput",
    )

    def __repr__(self) -> str:
        # Stable figures first and timings last, so that sanitized timings never shift a column.
        lines = [f"Comparison of {self.name} ({self.source})"]
        width = max(len(r.label) for r in self.results)
        for r in self.results:
            c = self._cells(r)
            if r.measurement is None:
                lines.append(f"  {r.label:<{width}} {r.items:>6} items: {c[-1]}")
                continue
            lines.append(
                f"  {r.label:<{width}} {r.items:>6} items: temp {c[2]}, peak {c[3]}, {c[4]} compile(s), "
                f"{c[5]} dispatch(es), agrees with vmap: {c[6]}; run {c[7]}, compile {c[8]}, {c[9]}"
            )
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return html_table(
            [self._cells(r) for r in self.results],
            self._header,
            caption=f"{self.name}: {self.source}",
        )

    def plot(self, *, axes=None):
        """Bars per strategy (one batch size) or lines against batch size (a sweep)."""
        return plot_comparison(self, axes=axes)


def _take(args: tuple, res: Any, b: int) -> tuple:
    leaves = jax.tree_util.tree_leaves(args)
    out = [
        leaf if lf.axis is None else jax.lax.slice_in_dim(leaf, 0, b, axis=lf.axis)
        for leaf, lf in zip(leaves, res.leaves, strict=False)
    ]
    return jax.tree_util.tree_unflatten(res.treedef, out)


def _agree(a: Any, b: Any) -> bool:
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb, strict=False):
        x, y = np.asarray(x), np.asarray(y)
        tol = 1e-2 if x.dtype.itemsize <= 2 else 1e-4
        if x.shape != y.shape or not np.allclose(x, y, rtol=tol, atol=tol):
            return False
    return True


def compare(
    fn: Callable,
    *args: Any,
    strategies: Sequence[str] = DEFAULT_STRATEGIES,
    chunk_size: int | None = None,
    in_axes: Any = 0,
    out_axes: Any = 0,
    manual: Callable | None = None,
    batch_sizes: Sequence[int] | None = None,
    verify: bool = True,
    loop_limit: int = 64,
    max_time: float = 0.3,
    repeat: int | None = None,
) -> Comparison:
    """Measures each batching strategy on the same inputs.

    For every strategy (and every batch size of ``batch_sizes``: the first
    ``b`` items of ``args``) it reports compile time, steady run time,
    throughput, XLA's planned temp and peak memory, compilations, and
    whether the result agrees with ``jax.vmap``.

    Args:
      fn: the per-item function.
      *args: a whole batch of inputs.
      strategies: names from ``batchlab.batching.strategies.STRATEGIES``, plus
        ``"unrolled"`` (the loop under ``jax.jit``, where it unrolls). ``"loop"``
        and ``"host"`` dispatch from Python and are timed as they run, with
        their dispatches counted; the others are one compiled program.
      chunk_size: items per chunk for ``"chunked"`` and ``"host"`` (default: an eighth of
        the batch, at least 1).
      in_axes, out_axes: as in ``jax.vmap``.
      manual: the hand-batched version of ``fn`` (required for ``"manual"``,
        which is added to the strategies when given).
      batch_sizes: sweep these batch sizes (each at most the batch in ``args``).
      verify: compare each strategy's output with ``jax.vmap``'s.
      loop_limit: skip ``"unrolled"`` above this many items (its compile time grows with them).
      max_time, repeat: passed to :func:`batchlab.measure`.

    Returns:
      A :class:`Comparison` (a table; ``.plot()`` draws it).

    Raises:
      ValueError: an unknown strategy; ``"manual"`` without ``manual=``; a
        batch size larger than the batch or below 1.
      BatchAxisError: ``in_axes`` that does not fit ``args``.

    Example:
      >>> import jax.numpy as jnp
      >>> c = compare(lambda x: x * 2, jnp.ones((16, 4)), strategies=("vmap", "chunked"), repeat=3)
      >>> [(r.label, r.agrees) for r in c.results]
      [('vmap', True), ('chunked (chunk 2)', True)]
    """
    check_callable(fn)
    if isinstance(strategies, str):
        raise TypeError(
            f"`strategies` must be a list of strategy names, got the string {strategies!r}; "
            f"pass [{strategies!r}]."
        )
    repeat = check_positive_int(repeat, "repeat", allow_none=True)
    check_bool(verify, "verify")
    if batch_sizes is not None:
        batch_sizes = check_positive_ints(batch_sizes, "batch_sizes")
    strategies = list(strategies)
    if manual is not None and "manual" not in strategies:
        strategies.append("manual")
    for s in strategies:
        if s not in COMPARED:
            raise ValueError(f"`strategies` may hold {COMPARED}, got {s!r}.")
    if "manual" in strategies and manual is None:
        raise ValueError(
            "strategy 'manual' needs the hand-batched function: pass manual=my_batched_fn."
        )
    if manual is not None:
        check_callable(manual, "manual")
    check_positive_int(loop_limit, "loop_limit")
    check_positive_float(max_time, "max_time")
    res = resolve(fn, args, in_axes)
    sizes = [res.batch_size] if batch_sizes is None else [int(b) for b in batch_sizes]
    for b in sizes:
        if not 1 <= b <= res.batch_size:
            raise ValueError(
                f"`batch_sizes` must lie in 1..{res.batch_size} (the batch in `args`), got {b}."
            )
    if chunk_size is not None:
        check_positive_int(chunk_size, "chunk_size")

    reference = batch(fn, strategy="vmap", in_axes=in_axes, out_axes=out_axes)
    results = []
    for b in sizes:
        sub = _take(args, res, b)
        outputs: dict[int, Any] = {}
        for s in strategies:
            chunk = (chunk_size or max(1, b // 8)) if s in ("chunked", "host") else None
            if s == "unrolled" and b > loop_limit:
                results.append(
                    StrategyResult(
                        s,
                        b,
                        chunk,
                        None,
                        error=f"skipped: a loop of {b} items unrolls "
                        f"under jit (loop_limit={loop_limit})",
                    )
                )
                continue
            if s == "manual":
                fn_s = manual
            elif s == "vmap":
                fn_s = reference
            else:
                fn_s = batch(
                    fn,
                    strategy="loop" if s == "unrolled" else s,
                    chunk_size=chunk,
                    in_axes=in_axes,
                    out_axes=out_axes,
                )
            try:
                if s in DISPATCHED:
                    m, out = measure_dispatched(
                        fn_s,
                        sub,
                        dispatched_plan(fn, fn_s, s, sub, in_axes),
                        max_time=max_time,
                        repeat=repeat,
                    )
                    dispatches = count_dispatches(fn_s, s, sub, res, b)
                else:
                    m = measure(fn_s, *sub, max_time=max_time, repeat=repeat)  # a cold compile
                    out = jax.jit(fn_s)(*sub) if verify else None  # shares measure's compile cache
                    dispatches = 1
                if verify:
                    outputs[len(results)] = out
                results.append(StrategyResult(s, b, chunk, m, dispatches=dispatches))
            except Exception as e:  # e.g. out of memory: keep the other strategies' figures
                results.append(
                    StrategyResult(
                        s, b, chunk, None, error=f"{type(e).__name__}: {str(e).splitlines()[0]}"
                    )
                )
        if verify and outputs:
            expected = jax.jit(reference)(*sub)
            for k, out in outputs.items():
                results[k] = dataclasses.replace(results[k], agrees=_agree(out, expected))
    return Comparison(function_name(fn), tuple(results))


__all__ = ["Comparison", "StrategyResult", "compare"]
