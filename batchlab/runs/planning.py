"""Planned bytes of a batch, from XLA's compiled memory analysis (nothing is allocated).

The figure a budget is compared with is :func:`planned_bytes`
(:attr:`batchlab.measuring.MemoryEstimate.planned_bytes`): the larger of XLA's
``peak_memory_in_bytes`` and ``argument + output + temp - alias``. It is a
lower bound of what a device needs.

A function of one item usually closes over the model's weights. Traced, those
arrays are the jaxpr's constants, and XLA plans a constant apart from the
arguments and temporaries (XLA:CPU's peak holds it, the sum does not), so the
plan of ``x -> tanh(x @ W)`` would depend on whether ``W`` was closed over or
passed. :func:`compile_program` hoists the constants into arguments before
lowering: the plan of a function with closed-over arrays is the plan with them
as arguments, and the program that runs takes them as arguments too (on the
device once, passed by reference). Constants of a ``jax.jit`` nested below
the top (inside a ``lax.map`` body, say) stay embedded; a per-item function
that is itself jitted is planned unwrapped (:func:`unjit`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

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


def _is_const(c: Any) -> bool:
    return hasattr(c, "shape") and hasattr(c, "dtype") and np.ndim(c) > 0


def _unwrap_jit(closed):
    """The body of a jaxpr that is one ``jit`` of all its inputs (a jitted function's trace)."""
    while not closed.consts and len(closed.jaxpr.eqns) == 1:
        eqn = closed.jaxpr.eqns[0]
        inner = eqn.params.get("jaxpr")
        if eqn.primitive.name not in ("jit", "pjit") or not hasattr(inner, "consts"):
            break
        if list(eqn.invars) != list(closed.jaxpr.invars) or list(eqn.outvars) != list(
            closed.jaxpr.outvars
        ):
            break
        closed = inner
    return closed


def compile_program(f: Callable, *specs: Any) -> Program:
    """``jax.jit(f)`` compiled for ``specs``, its closed-over arrays hoisted into an argument.

    Without closed-over arrays it is ``jax.jit(f).lower(*specs).compile()``
    (``f`` itself when it is jitted), unchanged.
    """
    closed, out_shape = jax.make_jaxpr(f, return_shape=True)(*specs)
    closed = _unwrap_jit(closed)
    consts = tuple(closed.consts)
    if not consts or not any(_is_const(c) for c in consts):
        jitted = f if hasattr(f, "lower") else jax.jit(f)
        compiled = jitted.lower(*specs).compile()
        return Program(compiled, (), estimate_from_compiled(compiled))
    jaxpr, out_tree = closed.jaxpr, jax.tree_util.tree_structure(out_shape)

    def hoisted(consts, *args):
        outs = jax.core.eval_jaxpr(jaxpr, list(consts), *jax.tree_util.tree_leaves(args))
        return jax.tree_util.tree_unflatten(out_tree, outs)

    name = getattr(unjit(f), "__name__", "fn")
    hoisted.__name__ = hoisted.__qualname__ = name if isinstance(name, str) else "fn"
    const_specs = tuple(jax.ShapeDtypeStruct(np.shape(c), c.dtype) for c in consts)
    compiled = jax.jit(hoisted).lower(const_specs, *specs).compile()
    on_device = tuple(jax.device_put(c) if _is_const(c) else c for c in consts)
    return Program(compiled, on_device, estimate_from_compiled(compiled), hoisted=True)


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
