"""Planned bytes of a batch, from XLA's compiled memory analysis (nothing is allocated).

The figure a budget is compared with is :func:`planned_bytes`
(:attr:`batchlab.measuring.MemoryEstimate.planned_bytes`): the larger of XLA's
``peak_memory_in_bytes`` and ``argument + output + temp - alias``. It is a
lower bound of what a device needs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from batchlab.measuring.memory import MemoryEstimate, estimate_from_compiled


def planned_bytes(estimate: MemoryEstimate) -> int:
    """The figure a budget is compared with: :attr:`MemoryEstimate.planned_bytes`.

    ``max(XLA peak_memory_in_bytes, argument + output + temp - alias)`` of
    the compiled plan, in bytes: a lower bound of what a device needs (see
    :class:`batchlab.measuring.MemoryEstimate`).
    """
    return int(estimate.planned_bytes)


def batch_planner(f: Callable) -> Callable[[Any], int]:
    """``plan(batch_spec) -> planned bytes`` for a function of a whole batch.

    A ``strategy="host"`` function of :func:`batchlab.batch` dispatches from
    Python and cannot be compiled as one program: its :class:`batchlab.batching.HostPlan`
    gives the figure (the largest step's temp, the chunks' input copy and
    outputs held for the concatenation, next to the arguments and output).
    Any other function is compiled (``jax.jit``) for the shapes, not run.
    """
    if getattr(f, "strategy", None) == "host" and hasattr(f, "plan"):
        return lambda spec: int(f.plan(spec).planned_bytes)
    jitted = f if hasattr(f, "lower") else jax.jit(f)
    return lambda spec: planned_bytes(estimate_from_compiled(jitted.lower(spec).compile()))


def batch_spec(example_item: Any, batch_size: int) -> Any:
    """``ShapeDtypeStruct`` pytree of a batch of ``batch_size`` items like ``example_item``."""

    def one(leaf):
        if not hasattr(leaf, "shape") or not hasattr(leaf, "dtype"):
            leaf = np.asarray(leaf)
        return jax.ShapeDtypeStruct((batch_size, *leaf.shape), leaf.dtype)

    return jax.tree_util.tree_map(one, example_item)
