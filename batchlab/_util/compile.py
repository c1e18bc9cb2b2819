"""Turn any user function into one compiled XLA executable, timing each stage.

Shared by :func:`batchlab.memory_estimate` (compile only) and
:func:`batchlab.measure` (compile, then run). Accepts plain functions and
functions that are already ``jax.jit``-wrapped (their own static arguments
and donation are kept).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax

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

    def call(self) -> Any:
        return self.jitted(*self.args, **self.kwargs)


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
    lowered = jitted.lower(*args, **kwargs)
    t1 = time.perf_counter()
    executable = lowered.compile()
    t2 = time.perf_counter()
    return Compiled(executable, jitted, args, kwargs, t1 - t0, t2 - t1, function_name(fn))
