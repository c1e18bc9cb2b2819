"""Batching strategies side by side on the same inputs, measured, never assumed."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from batchlab._util.checks import (
    check_callable,
    check_positive_float,
    check_positive_int,
    check_positive_ints,
)
from batchlab._util.format import Rows, format_bytes, format_count, format_seconds
from batchlab.batching.axes_spec import layout_of
from batchlab.batching.comparison_plot import plot_comparison
from batchlab.batching.strategies import DISPATCHED, STRATEGIES, batch, nbytes
from batchlab.measuring.compiles import count_compiles
from batchlab.measuring.live import live_memory
from batchlab.measuring.plan import (
    MemoryEstimate,
    compile_fn,
    estimate_from_compiled,
    function_name,
    memory_estimate,
)
from batchlab.measuring.sampler import interleaved
from batchlab.measuring.samples import Samples
from batchlab.measuring.timing import COMPILE_NOTE, Measurement, time_alone

SOURCES = (
    "run: bl.measuring.interleaved (round-robin, paired by round), wall clock around "
    "jax.block_until_ready; compile: wall clock; memory: compiled memory analysis (XLA)"
)
SAMPLE_NOTE = (
    "times: one sample per interleaved round, each the fastest of its passes; a sample is the "
    "mean of as many calls as last min_sample_time (number is given as 1)"
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
    dispatches: int | None = None  # calls into compiled programs per batch
    samples: Samples | None = None  # seconds per batch, paired by round with its batch size's

    @property
    def label(self) -> str:
        name = "loop (eager)" if self.strategy == "loop" else self.strategy
        return f"{name} (chunk {self.chunk})" if self.chunk else name

    @property
    def run_seconds(self) -> float | None:
        return None if self.measurement is None else self.measurement.median

    @property
    def temp_bytes(self) -> int | None:
        return None if self.measurement is None else self.measurement.memory.temp_bytes


@dataclass(frozen=True)
class Comparison(Rows):
    """Every strategy measured on the same inputs (at one or several batch sizes)."""

    name: str
    results: tuple[StrategyResult, ...]
    source: str = SOURCES

    _header = ("strategy", "items", "planned temp", "planned peak", "compiles", "dispatches")
    _header += ("agrees with vmap", "run (median)", "compile", "throughput")

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

    def _title(self) -> str:
        return f"{self.name}: {self.source}"

    def _rows(self) -> list[tuple]:
        rows = []
        for r in self.results:
            m = r.measurement
            if m is None:
                rows.append((r.label, r.items, *["-"] * 7, r.error))
                continue
            planned = format_bytes(r.temp_bytes), format_bytes(m.memory.planned_bytes)
            agrees = {True: "yes", False: "NO", None: "-"}[r.agrees]
            compile_s = format_seconds(m.trace_lower_seconds + m.compile_seconds)
            speed = f"{format_count(r.items / r.run_seconds)} items/s"
            run = format_seconds(r.run_seconds), compile_s, speed
            rows.append((r.label, r.items, *planned, m.compiles, r.dispatches, agrees, *run))
        return rows

    def plot(self):
        """Bars per strategy (one batch size) or lines against batch size (a sweep)."""
        return plot_comparison(self)


def _take(args: tuple, lay: Any, b: int) -> tuple:
    """The first ``b`` items of the batch (``lay``: the call's Layout)."""
    leaves = jax.tree.leaves((args, {}))
    out = [
        leaf if ax is None else jax.lax.slice_in_dim(leaf, 0, b, axis=ax)
        for leaf, ax in zip(leaves, lay.axes, strict=True)
    ]
    return jax.tree.unflatten(lay.treedef, out)[0]


def _agree(a: Any, b: Any) -> bool:
    """Same leaves, shapes and values (to a tolerance that depends on the dtype)."""
    la, lb = [list(map(np.asarray, jax.tree.leaves(t))) for t in (a, b)]
    tol = [1e-2 if x.dtype.itemsize <= 2 else 1e-4 for x in la]
    return len(la) == len(lb) and all(
        x.shape == y.shape and np.allclose(x, y, rtol=t, atol=t)
        for x, y, t in zip(la, lb, tol, strict=True)
    )


def widened(step: MemoryEstimate, name: str, how: str, args: int, outs: int, temp: int, flops=None):
    """A program's plan widened to a whole Python-dispatched call: its arguments, outputs and
    ``temp`` (``how``: what the plan counts); no aliasing, no XLA peak."""
    return dataclasses.replace(
        step,
        argument_bytes=args,
        output_bytes=outs,
        temp_bytes=temp,
        alias_bytes=0,
        xla_peak_bytes=None,
        flops=flops,
        name=name,
        planned_bytes=args + outs + temp,
        planned_from=how,
    )


def dispatched_plan(fn: Callable, fn_s: Callable, s: str, sub: tuple, lay: Any, out: Any):
    """(plan, dispatches per call) of ``fn_s = batch(fn, strategy=s)`` called on ``sub``."""
    if s == "host":
        p = fn_s.plan(*sub)
        step, temp = max(p.steps, key=lambda m: m.temp_bytes), p.extra_bytes
        how = "the largest step's temp + the chunks' input copy + chunk outputs until concatenated"
        dispatches = p.dispatches
    else:  # loop: the per-item program, on item 0 (``lay``: the call's Layout)
        item = [
            x if ax is None else jax.lax.index_in_dim(x, 0, ax, keepdims=False)
            for x, ax in zip(jax.tree.leaves((sub, {})), lay.axes, strict=True)
        ]
        step = memory_estimate(fn, *jax.tree.unflatten(lay.treedef, item)[0])
        temp = step.temp_bytes + nbytes(out)
        how = "the item program's temp + item outputs held for the stack"
        mapped, moved = len(lay.mapped_axes), sum(ax != 0 for ax in lay.mapped_axes)
        # moveaxis per moved leaf; per item a slice per mapped leaf and the step; one stack
        dispatches = moved + lay.batch_size * (mapped + 1) + 1
    how = "inputs + output + " + how
    return widened(step, "dispatched", how, nbytes(sub), nbytes(out), temp), dispatches


def _prepare(fn: Callable, fn_s: Callable, s: str, sub: tuple, lay: Any) -> tuple:
    """Compiles ``fn_s`` for ``sub``, calls it once: (call, output, dispatches, Measurement
    maker)."""
    dispatched = s in DISPATCHED  # it compiles inside its first call, timed with the compiles
    with count_compiles() as compiles:
        compiled = None if dispatched else compile_fn(fn_s, sub, {})
        call = (lambda: fn_s(*sub)) if dispatched else compiled.call
        t0 = time.perf_counter()
        out = jax.block_until_ready(call())
        first = time.perf_counter() - t0
    if dispatched:
        memory, dispatches = dispatched_plan(fn, fn_s, s, sub, lay, out)
    else:
        memory, dispatches = estimate_from_compiled(compiled.executable, compiled.name), 1

    def measured(times: tuple) -> Measurement:
        steady = sorted(times)[len(times) // 2]
        return Measurement(
            name=function_name(fn),
            trace_lower_seconds=0.0 if dispatched else compiled.trace_lower_seconds,
            compile_seconds=max(first - steady, 0.0) if dispatched else compiled.compile_seconds,
            first_call_seconds=first,
            times=times,
            number=1,
            memory=memory,
            live=live_memory(),
            compiles=compiles.count,
            notes=(COMPILE_NOTE, SAMPLE_NOTE) if dispatched else (SAMPLE_NOTE,),
            source=SOURCES,
        )

    return call, out, dispatches, measured


def compare(
    fn: Callable,
    *args: Any,
    strategies: Sequence[str] = STRATEGIES[:-1],  # all but "manual", which needs `manual`
    chunk_size: int | None = None,
    in_axes: Any = 0,
    manual: Callable | None = None,
    batch_sizes: Sequence[int] | None = None,
    max_time: float = 0.3,
) -> Comparison:
    """Each strategy on the same batch ``args``, timed interleaved, checked against ``jax.vmap``.

    Args:
      fn: the per-item function; *args: the batch, mapped as ``in_axes`` says.
      strategies: drawn from ``"loop"``, ``"vmap"``, ``"map"``, ``"chunked"``, ``"host"`` and
        ``"manual"`` (which needs ``manual``); default: all but ``"manual"``.
      chunk_size: items per chunk of "chunked" and "host" (default: an eighth of the batch).
      in_axes: as in ``jax.vmap``.
      manual: your hand-batched ``fn`` (a function of the whole batch), timed as "manual".
      batch_sizes: the first items of ``args`` to time at, each (default: the whole batch).
      max_time: seconds of timing per strategy and batch size.

    Returns:
      A :class:`Comparison`: per batch size and strategy, its measurement (or the error that
      stopped it), whether it agrees with ``jax.vmap`` and its dispatches.

    Raises:
      TypeError: ``fn`` / ``manual`` is not callable, or ``batch_sizes``, ``chunk_size`` or
        ``max_time`` of the wrong type.
      ValueError: an unknown ``strategies`` entry ("manual" without ``manual``), a
        ``batch_sizes`` outside 1..the batch, ``max_time`` or ``chunk_size`` not positive, or
        what ``jax.vmap`` raises for ``in_axes`` and ``args``.

    Example:
      >>> import jax.numpy as jnp
      >>> c = compare(lambda x: x * 2, jnp.ones((16, 4)), strategies=("vmap", "chunked"))
      >>> [(r.label, r.agrees, r.dispatches) for r in c.results]
      [('vmap', True, 1), ('chunked (chunk 2)', True, 1)]
    """
    check_callable(fn)
    if manual is not None:
        check_callable(manual, "manual")
    allowed = STRATEGIES if manual is not None else STRATEGIES[:-1]
    if isinstance(strategies, str) or not set(strategies) <= set(allowed):
        raise ValueError(
            f"`strategies` may hold {allowed} ('manual' with manual=my_batched_fn), got "
            f"{strategies!r}."
        )
    strategies = list(dict.fromkeys([*strategies, *(["manual"] if manual is not None else [])]))
    sizes = None if batch_sizes is None else check_positive_ints(batch_sizes, "batch_sizes")
    check_positive_float(max_time, "max_time")
    check_positive_int(chunk_size, "chunk_size", allow_none=True)
    lay = layout_of(fn, in_axes, args, {})
    sizes = sizes or [lay.batch_size]
    if max(sizes) > lay.batch_size:
        raise ValueError(
            f"`batch_sizes` must lie in 1..{lay.batch_size} (the batch in `args`), got {sizes}."
        )
    reference = batch(fn, strategy="vmap", in_axes=in_axes)
    results = []
    for b in sizes:
        sub = _take(args, lay, b)
        lay_b = layout_of(fn, in_axes, sub, {})
        row, ready = {}, {}  # strategy: its result; (chunk, call, output, dispatches, measured)
        for s in strategies:
            chunk = (chunk_size or max(1, b // 8)) if s in ("chunked", "host") else None
            own = {"manual": manual, "vmap": reference}.get(s)
            fn_s = own or batch(fn, strategy=s, chunk_size=chunk, in_axes=in_axes)
            try:
                ready[s] = (chunk, *_prepare(fn, fn_s, s, sub, lay_b))
            except Exception as e:  # e.g. out of memory: keep the other strategies' figures
                error = f"{type(e).__name__}: {str(e).splitlines()[0]}"
                row[s] = StrategyResult(s, b, chunk, None, error=error)
        calls = {s: p[1] for s, p in ready.items()}
        if len(calls) >= 2:
            timed = interleaved(calls, rounds=15, max_seconds=max_time * len(calls))
        else:  # one strategy: nothing to interleave with
            timed = {s: Samples(s, time_alone(c, 15, max_time), SOURCES) for s, c in calls.items()}
        expected = reference(*sub) if ready else None
        for s, (chunk, _, out, dispatches, measured) in ready.items():
            m, agrees = measured(tuple(timed[s].values)), _agree(out, expected)
            row[s] = StrategyResult(s, b, chunk, m, agrees, None, dispatches, timed[s])
        results += [row[s] for s in strategies]
    return Comparison(function_name(fn), tuple(results))
