"""The one plan path: any user function to one compiled XLA executable, each stage timed.

XLA plans closed-over arrays apart from arguments, so :func:`compile_fn` hoists them into a
first argument: ``x -> tanh(x @ W)`` plans the same whether ``W`` is closed over or passed
(constants of a nested ``jax.jit`` or a ``lax.map`` body stay).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from batchlab._util.checks import check_argnums, check_array_tree, check_callable


@dataclass
class Compiled:
    """``fn`` compiled for one set of inputs; ``call()`` runs it through ``jax.jit`` (same cache)."""

    executable: Any  # jax.stages.Compiled
    jitted: Callable
    args: tuple
    kwargs: dict
    trace_lower_seconds: float
    compile_seconds: float
    name: str
    consts: tuple = ()  # closed-over arrays hoisted into the first argument (on the device)
    hoisted: bool = False

    def call(self) -> Any:
        return self.jitted(*self.args, **self.kwargs)

    @property
    def const_bytes(self) -> int:
        """Bytes of the closed-over arrays hoisted into arguments."""
        return int(sum(np.dtype(c.dtype).itemsize * int(np.prod(np.shape(c))) for c in self.consts))


def is_jitted(fn: Any) -> bool:
    """True for functions wrapped by ``jax.jit`` (they have ``.lower``)."""
    return callable(fn) and hasattr(fn, "lower") and hasattr(fn, "trace")


def function_name(fn: Callable) -> str:
    """A readable name for tables and plots."""
    for obj in (fn, getattr(fn, "__wrapped__", None), getattr(fn, "func", None)):
        name = getattr(obj, "__name__", None)
        if name:
            return name
    return type(fn).__name__


def compile_fn(
    fn: Callable,
    args: tuple,
    kwargs: dict,
    *,
    static_argnums: int | Sequence[int] = (),
) -> Compiled:
    """Validates inputs, then lowers and compiles ``fn(*args, **kwargs)``."""
    check_callable(fn)
    nums = tuple(n % len(args) for n in check_argnums(static_argnums, len(args), "static_argnums"))
    dyn_args = tuple(a for i, a in enumerate(args) if i not in nums)
    if is_jitted(fn):
        if nums:
            raise ValueError(
                "`fn` is already jax.jit-wrapped; declare its static arguments on its own "
                "jax.jit(..., static_argnums=...) instead of passing them here."
            )
        jitted = fn
    else:
        check_array_tree(dyn_args, "args")
        check_array_tree(kwargs, "kwargs")
        jitted = jax.jit(fn, static_argnums=nums)
    name = function_name(fn)
    t0 = time.perf_counter()
    traced = jitted.trace(*args, **kwargs)
    closed = _unwrap_jit(traced.jaxpr)
    call, consts = (jitted, args, kwargs), ()
    if not any(_is_const(c) for c in closed.consts):
        lowered = traced.lower()
    else:
        hoisted = _hoist(closed, traced, name)
        consts = tuple(jax.device_put(c) if _is_const(c) else c for c in closed.consts)
        dynamic = jax.tree_util.tree_leaves((dyn_args, kwargs))
        if len(dynamic) != len(closed.jaxpr.invars):  # cannot tell them apart
            dynamic = None
        specs = dynamic or [
            jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in closed.jaxpr.invars
        ]
        lowered = hoisted.lower(consts, *specs)
        # dynamic None: a jitted fn with static arguments of its own runs as the user wrote it
        if dynamic is not None:
            call = (hoisted, (consts, *dynamic), {})
    t1 = time.perf_counter()
    executable = lowered.compile()
    t2 = time.perf_counter()
    return Compiled(executable, *call, t1 - t0, t2 - t1, name, consts, bool(consts))


def _is_const(c: Any) -> bool:
    return hasattr(c, "shape") and hasattr(c, "dtype") and np.ndim(c) > 0


def _unwrap_jit(closed):
    """The body of a jaxpr that is one ``jit`` of all its inputs (a jitted function's trace)."""
    while not closed.consts and len(closed.jaxpr.eqns) == 1:
        eqn, outer = closed.jaxpr.eqns[0], closed.jaxpr
        inner = eqn.params.get("jaxpr")
        if eqn.primitive.name not in ("jit", "pjit") or not hasattr(inner, "consts"):
            break
        if list(eqn.invars) != list(outer.invars) or list(eqn.outvars) != list(outer.outvars):
            break
        closed = inner
    return closed


def _hoist(closed, traced, name: str) -> Callable:
    """``jax.jit`` of ``(consts, *flat_args) -> out``, the function's donations kept."""
    jaxpr, out_tree = closed.jaxpr, traced.out_tree
    donated = [a.donated for a in jax.tree_util.tree_leaves(traced.args_info)]

    def hoisted(consts, *flat):
        return jax.tree_util.tree_unflatten(
            out_tree, jax.core.eval_jaxpr(jaxpr, list(consts), *flat)
        )

    hoisted.__name__ = hoisted.__qualname__ = name
    return jax.jit(hoisted, donate_argnums=tuple(1 + i for i, d in enumerate(donated) if d))
