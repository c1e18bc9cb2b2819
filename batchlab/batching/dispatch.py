"""Planning a batched function that dispatches from Python (``"loop"``, ``"host"``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax

from batchlab.batching.host_chunks import nbytes
from batchlab.measuring.memory import MemoryEstimate, memory_estimate


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


def dispatched_plan(fn: Callable, fn_s: Callable, s: str, sub: tuple, lay: Any, out: Any):
    """(plan, dispatches per call) of ``fn_s = batch(fn, strategy=s)`` called on ``sub``."""
    if s == "host":
        p = fn_s.plan(*sub)
        big = max(p.steps, key=lambda m: m.temp_bytes)
        how = "the largest step's temp + the chunks' input copy + chunk outputs until concatenated"
        return widened(big, sub, out, p.extra_bytes, how), p.dispatches
    # loop: the per-item program, on item 0 (``lay``: the call's Layout)
    item = [
        x if ax is None else jax.lax.index_in_dim(x, 0, ax, keepdims=False)
        for x, ax in zip(jax.tree_util.tree_leaves((sub, {})), lay.axes, strict=True)
    ]
    step = memory_estimate(fn, *jax.tree_util.tree_unflatten(lay.treedef, item)[0])
    how = "the item program's temp + item outputs held for the stack"
    mapped, moved = len(lay.mapped_axes), sum(ax != 0 for ax in lay.mapped_axes)
    # moveaxis per moved leaf; per item a slice per mapped leaf and the step; one stack
    dispatches = moved + lay.batch_size * (mapped + 1) + 1
    return widened(step, sub, out, step.temp_bytes + nbytes(out), how), dispatches
