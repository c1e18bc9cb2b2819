"""The one plan path: any user function to one compiled XLA executable, timing each stage.

Every planned figure of the kit comes from :func:`compile_fn`:
:func:`batchlab.memory_estimate` and :func:`batchlab.measure`, and through
:func:`batchlab.runs.planning.compile_program` ``max_batch_size``,
``run_batches`` and ``advise``. Accepts plain functions and functions that
are already ``jax.jit``-wrapped (their own static arguments and donation are
kept).

A function usually closes over the model's weights. Traced, those arrays are
the jaxpr's constants, and XLA plans a constant apart from the arguments and
temporaries (XLA:CPU's peak holds it, the sum does not), so the plan of
``x -> tanh(x @ W)`` would depend on whether ``W`` was closed over or passed.
:func:`compile_fn` hoists the constants into a first argument before
lowering: the plan of a function with closed-over arrays is the plan with
them as arguments, and the program that runs takes them as arguments too (on
the device once, passed by reference). Constants of a ``jax.jit`` nested
below the top (inside a ``lax.map`` body, say) stay embedded.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from batchlab._util.checks import check_array_tree, check_callable


@dataclass
class Compiled:
    """The result of lowering and compiling ``fn`` for one set of inputs.

    ``call()`` runs the same computation again through ``jax.jit``'s own
    dispatch, which shares its cache with the ahead-of-time compile above,
    so it does not compile a second time.
    """

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


def _normalize_static(static_argnums: int | Sequence[int], static_argnames: str | Sequence[str]):
    for value, name in ((static_argnums, "static_argnums"), (static_argnames, "static_argnames")):
        if not isinstance(value, (int, str)) and not hasattr(value, "__iter__"):
            raise TypeError(f"`{name}` must be one value or a tuple of them, got {value!r}.")
    if isinstance(static_argnums, str):
        raise TypeError(
            f"`static_argnums` must hold ints (positions), got {static_argnums!r}; "
            f"for names use static_argnames=."
        )
    if isinstance(static_argnames, int):
        raise TypeError(
            f"`static_argnames` must hold strings (names), got {static_argnames!r}; "
            f"for positions use static_argnums=."
        )
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    for n in nums:
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"`static_argnums` must hold ints, got {n!r}.")
    for k in names:
        if not isinstance(k, str):
            raise TypeError(f"`static_argnames` must hold strings, got {k!r}.")
    return nums, names


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
    static_argnames: str | Sequence[str] = (),
) -> Compiled:
    """Validates inputs, then lowers and compiles ``fn(*args, **kwargs)``."""
    check_callable(fn)
    nums, names = _normalize_static(static_argnums, static_argnames)
    n_args = len(args)
    for n in nums:
        if not -n_args <= n < n_args:
            raise ValueError(
                f"`static_argnums` names argument {n} but only {n_args} positional "
                f"argument(s) were given."
            )
    nums = tuple(n % n_args for n in nums)
    for k in names:
        if k not in kwargs:
            raise ValueError(
                f"`static_argnames` names {k!r} but it was not passed as a keyword "
                f"argument; pass it as {k}=..."
            )
    if is_jitted(fn):
        if nums or names:
            raise ValueError(
                "`fn` is already jax.jit-wrapped; declare its static arguments on its own "
                "jax.jit(..., static_argnums=...) instead of passing them here."
            )
        jitted = fn
    else:
        check_array_tree(tuple(a for i, a in enumerate(args) if i not in nums), "args")
        check_array_tree({k: v for k, v in kwargs.items() if k not in names}, "kwargs")
        jitted = jax.jit(fn, static_argnums=nums, static_argnames=names)

    t0 = time.perf_counter()
    traced = jitted.trace(*args, **kwargs)
    closed = _unwrap_jit(traced.jaxpr)
    if not any(_is_const(c) for c in closed.consts):
        lowered = traced.lower()
        t1 = time.perf_counter()
        executable = lowered.compile()
        t2 = time.perf_counter()
        return Compiled(executable, jitted, args, kwargs, t1 - t0, t2 - t1, function_name(fn))
    hoisted = _hoist(closed, traced, function_name(fn))
    consts = tuple(closed.consts)
    on_device = tuple(jax.device_put(c) if _is_const(c) else c for c in consts)
    n_in = len(closed.jaxpr.invars)
    dynamic = _dynamic_leaves(args, kwargs, nums, names, n_in)
    in_specs = dynamic or [
        jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in closed.jaxpr.invars
    ]
    lowered = hoisted.lower(on_device, *in_specs)
    t1 = time.perf_counter()
    executable = lowered.compile()
    t2 = time.perf_counter()
    if dynamic is None:  # a jitted fn with static arguments of its own: run it as the user wrote it
        call_fn, call_args, call_kwargs = jitted, args, kwargs
    else:
        call_fn, call_args, call_kwargs = hoisted, (on_device, *dynamic), {}
    return Compiled(
        executable,
        call_fn,
        call_args,
        call_kwargs,
        t1 - t0,
        t2 - t1,
        function_name(fn),
        consts=on_device,
        hoisted=True,
    )


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


def _hoist(closed, traced, name: str) -> Callable:
    """``jax.jit`` of ``(consts, *flat_args) -> out``: the traced body, its constants an argument.

    The function's donations are kept (each donated input leaf is donated).
    """
    jaxpr, out_tree = closed.jaxpr, traced.out_tree
    donated = [a.donated for a in jax.tree_util.tree_leaves(traced.args_info)]

    def hoisted(consts, *flat):
        return jax.tree_util.tree_unflatten(
            out_tree, jax.core.eval_jaxpr(jaxpr, list(consts), *flat)
        )

    hoisted.__name__ = hoisted.__qualname__ = name
    return jax.jit(hoisted, donate_argnums=tuple(1 + i for i, d in enumerate(donated) if d))


def _dynamic_leaves(args, kwargs, nums, names, n_leaves: int) -> list | None:
    """The array leaves the traced program takes, or None when they cannot be told apart."""
    dyn_args = tuple(a for i, a in enumerate(args) if i not in nums)
    dyn_kwargs = {k: v for k, v in kwargs.items() if k not in names}
    leaves = jax.tree_util.tree_leaves((dyn_args, dyn_kwargs))
    return leaves if len(leaves) == n_leaves else None
