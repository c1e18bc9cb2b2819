"""Timing and planning a batched function that dispatches from Python (``"loop"``, ``"host"``)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import jax

from batchlab.batching.host_chunks import nbytes
from batchlab.measuring.compiles import count_compiles
from batchlab.measuring.live import live_memory
from batchlab.measuring.memory import MemoryEstimate, memory_estimate
from batchlab.measuring.timing import Measurement, autorange, take_samples

COMPILE_NOTE = (
    "compile_seconds = first call minus the steady median: a Python-dispatched strategy "
    "compiles its programs inside its first call"
)


def widened(step: MemoryEstimate, args: Any, out: Any, temp: int, how: str):
    """The plan of the largest dispatched program, widened to the whole call (no flops)."""
    arg, outb = nbytes(args), nbytes(out)
    return dataclasses.replace(
        step,
        argument_bytes=arg,
        output_bytes=outb,
        temp_bytes=temp,
        alias_bytes=0,
        xla_peak_bytes=None,
        flops=None,
        name="dispatched",
        planned_bytes=arg + outb + temp,
        planned_from=f"inputs + output + {how}",
    )


def measure_dispatched(
    fn: Callable,
    args: tuple,
    memory: Callable[[Any], MemoryEstimate],
    *,
    max_time: float = 0.3,
    repeat: int | None = None,
    tolerance: float = 0.02,
) -> tuple[Measurement, Any]:
    """Times ``fn(*args)`` as it runs (no outer jit); ``memory(out)`` gives its plan."""
    with count_compiles() as compiles:
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn(*args))
        first = time.perf_counter() - t0
    call = lambda: fn(*args)  # noqa: E731
    number = autorange(call, 0.02)
    samples = take_samples(call, number, repeat, max_time, tolerance)
    median = sorted(samples)[len(samples) // 2]
    m = Measurement(
        name=getattr(fn, "__name__", "fn"),
        trace_lower_seconds=0.0,
        compile_seconds=max(first - median, 0.0),
        first_call_seconds=first,
        times=tuple(samples),
        number=number,
        memory=memory(out),
        live=live_memory(),
        compiles=compiles.count,
        notes=(COMPILE_NOTE,),
        source="wall clock around jax.block_until_ready of the whole Python-dispatched call",
    )
    return m, out


def dispatched_plan(fn: Callable, fn_s: Callable, s: str, sub: tuple, res: Any, out: Any):
    """(plan, dispatches per call) of ``fn_s = batch(fn, strategy=s)`` called on ``sub``."""
    if s == "host":
        p = fn_s.plan(*sub)
        big = max(p.steps, key=lambda m: m.temp_bytes)
        how = "the largest step's temp + the chunks' input copy + chunk outputs until concatenated"
        return widened(big, sub, out, p.extra_bytes, how), p.dispatches
    # loop: the per-item program, on item 0
    item = [
        x if lf.axis is None else jax.lax.index_in_dim(x, 0, lf.axis, keepdims=False)
        for x, lf in zip(jax.tree_util.tree_leaves(sub), res.leaves, strict=True)
    ]
    step = memory_estimate(fn, *jax.tree_util.tree_unflatten(res.treedef, item))
    how = "the item program's temp + item outputs held for the stack"
    mapped = sum(lf.axis is not None for lf in res.leaves)
    moved = sum(lf.axis not in (None, 0) for lf in res.leaves)
    # moveaxis per moved leaf; per item a slice per mapped leaf and the step; one stack
    dispatches = moved + res.batch_size * (mapped + 1) + 1
    return widened(step, sub, out, step.temp_bytes + nbytes(out), how), dispatches
