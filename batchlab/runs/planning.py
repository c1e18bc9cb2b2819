"""Planned bytes of a batch, from XLA's compiled memory analysis (nothing is allocated).

The figure a budget is compared with is :func:`planned_bytes`
(:attr:`batchlab.measuring.MemoryEstimate.planned_bytes`): the larger of XLA's
``peak_memory_in_bytes`` and ``argument + output + temp - alias``. It is a
lower bound of what a device needs.

A function of one item usually closes over the model's weights: the plan is
:func:`batchlab._util.compile.compile_fn`'s, the one plan path of the kit
(:func:`batchlab.memory_estimate` uses it too), which plans closed-over
arrays as arguments. A per-item function that is itself jitted is planned
unwrapped (:func:`unjit`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np

from batchlab._util.compile import compile_fn
from batchlab.measuring.memory import MemoryEstimate, estimate_from_compiled


def planned_bytes(estimate: MemoryEstimate) -> int:
    """The figure a budget is compared with: :attr:`MemoryEstimate.planned_bytes`.

    ``max(XLA peak_memory_in_bytes, argument + output + temp - alias)`` of
    the compiled plan, in bytes: a lower bound of what a device needs (see
    :class:`batchlab.measuring.MemoryEstimate`).
    """
    return int(estimate.planned_bytes)


class Program(NamedTuple):
    """A compiled batch program; with ``hoisted``, its closed-over arrays are its first argument."""

    compiled: Any
    consts: tuple
    estimate: MemoryEstimate
    hoisted: bool = False

    @property
    def planned(self) -> int:
        return planned_bytes(self.estimate)

    @property
    def const_bytes(self) -> int:
        """Bytes of the closed-over arrays hoisted into arguments."""
        return int(sum(np.dtype(c.dtype).itemsize * int(np.prod(np.shape(c))) for c in self.consts))

    def __call__(self, *args):
        return self.compiled(self.consts, *args) if self.hoisted else self.compiled(*args)


def unjit(fn: Callable) -> Callable:
    """The Python function under ``jax.jit`` wrappers (a jit inside a batch is inlined by XLA)."""
    while hasattr(fn, "lower") and callable(getattr(fn, "__wrapped__", None)):
        fn = fn.__wrapped__
    return fn


def compile_program(f: Callable, *specs: Any) -> Program:
    """``jax.jit(f)`` compiled for ``specs`` by the kit's one plan path (:func:`compile_fn`).

    Closed-over arrays are hoisted into a first argument and planned as
    arguments; without them it is ``jax.jit(f).lower(*specs).compile()``
    (``f`` itself when it is jitted), unchanged.
    """
    c = compile_fn(f, specs, {})
    estimate = estimate_from_compiled(c.executable, c.name)
    return Program(c.executable, c.consts, estimate, hoisted=c.hoisted)


def batch_planner(f: Callable) -> Callable[..., int]:
    """``plan(*batch_args) -> planned bytes`` for a function of a whole batch.

    A ``strategy="host"`` function of :func:`batchlab.batch` dispatches from
    Python and cannot be compiled as one program: its :class:`batchlab.batching.HostPlan`
    gives the figure (the largest step's temp, the chunks' input copy and
    outputs held for the concatenation, next to the arguments and output).
    Any other function is compiled (:func:`compile_program`: closed-over
    arrays planned as arguments) for the shapes, not run.
    """
    if getattr(f, "strategy", None) == "host" and hasattr(f, "plan"):
        return lambda *specs: int(f.plan(*specs).planned_bytes)
    return lambda *specs: compile_program(f, *specs).planned


def spec_of(leaf: Any) -> jax.ShapeDtypeStruct:
    if not hasattr(leaf, "shape") or not hasattr(leaf, "dtype"):
        leaf = np.asarray(leaf)
    return jax.ShapeDtypeStruct(tuple(leaf.shape), leaf.dtype)


def batch_spec(example_item: Any, batch_size: int) -> Any:
    """``ShapeDtypeStruct`` pytree of a batch of ``batch_size`` items like ``example_item``."""

    def one(leaf):
        s = spec_of(leaf)
        return jax.ShapeDtypeStruct((batch_size, *s.shape), s.dtype)

    return jax.tree_util.tree_map(one, example_item)


def batch_args(example_item: Any, batch_size: int, in_axes: Any = 0) -> tuple:
    """The arguments of a batched call: ``(batch,)``, or per ``in_axes`` (0: batched, None: shared).

    With ``in_axes`` a tuple, ``example_item`` is the tuple of ``fn``'s
    arguments for one item; a shared (``None``) argument is passed whole.
    """
    if not isinstance(in_axes, tuple):
        return (batch_spec(example_item, batch_size),)
    return tuple(
        batch_spec(a, batch_size) if ax == 0 else jax.tree_util.tree_map(spec_of, a)
        for a, ax in zip(example_item, in_axes, strict=True)
    )
