"""Planned bytes of a batch from XLA's compiled memory analysis, through the kit's one plan path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np

from batchlab._util.compile import Compiled, compile_fn
from batchlab.measuring.memory import MemoryEstimate, estimate_from_compiled


def planned_bytes(estimate: MemoryEstimate) -> int:
    """The figure a budget is compared with (a lower bound)."""
    return int(estimate.planned_bytes)


class Program(NamedTuple):
    """A compiled batch program (:func:`compile_fn`'s result: closed-over arrays hoisted) and its plan."""

    compiled: Compiled
    estimate: MemoryEstimate

    planned = property(lambda self: planned_bytes(self.estimate))

    def __call__(self, *args):
        c = self.compiled
        return c.executable(c.consts, *args) if c.hoisted else c.executable(*args)


def unjit(fn: Callable) -> Callable:
    """The Python function under ``jax.jit`` wrappers (a jit inside a batch is inlined by XLA)."""
    while hasattr(fn, "lower") and callable(getattr(fn, "__wrapped__", None)):
        fn = fn.__wrapped__
    return fn


def compile_program(f: Callable, *specs: Any) -> Program:
    """``jax.jit(f)`` compiled for ``specs`` by :func:`compile_fn`."""
    c = compile_fn(f, specs, {})
    return Program(c, estimate_from_compiled(c.executable, c.name))


def batch_planner(f: Callable) -> Callable[..., int]:
    """``plan(*batch_args) -> planned bytes`` for a function of a whole batch (host: its ``plan``)."""
    if getattr(f, "strategy", None) == "host" and hasattr(f, "plan"):
        return lambda *specs: int(f.plan(*specs).planned_bytes)
    return lambda *specs: compile_program(f, *specs).planned


def spec_of(leaf: Any) -> jax.ShapeDtypeStruct:
    """A leaf's shape and dtype (a Python number as numpy would hold it)."""
    leaf = leaf if hasattr(leaf, "shape") and hasattr(leaf, "dtype") else np.asarray(leaf)
    return jax.ShapeDtypeStruct(tuple(leaf.shape), leaf.dtype)


def batch_spec(example_item: Any, batch_size: int) -> Any:
    """``ShapeDtypeStruct`` pytree of a batch of ``batch_size`` items like ``example_item``."""

    def one(leaf):
        s = spec_of(leaf)
        return jax.ShapeDtypeStruct((batch_size, *s.shape), s.dtype)

    return jax.tree_util.tree_map(one, example_item)


def batch_args(example_item: Any, batch_size: int, in_axes: Any = 0) -> tuple:
    """The arguments of a batched call: ``(batch,)``, or one per ``in_axes`` (None: passed whole)."""
    if not isinstance(in_axes, tuple):
        return (batch_spec(example_item, batch_size),)
    return tuple(
        batch_spec(a, batch_size) if ax == 0 else jax.tree_util.tree_map(spec_of, a)
        for a, ax in zip(example_item, in_axes, strict=True)
    )
