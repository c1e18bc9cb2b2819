"""Five ways to run a per-item function over a batch, each a drop-in for ``jax.vmap``.

Each strategy is one short function below: ``program(mapped, shared)`` takes a call's
mapped array leaves and its shared ones and returns what ``jax.vmap`` returns. ``"host"``
(one jitted vmap per chunk, dispatched from Python) is in :mod:`host_chunks`. Every one runs
compiled code, so timing a call after the first compares strategies, not dispatch modes.
``"manual"`` (``fn`` batched by hand) is measured beside them by ``compare(manual=)``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from batchlab._util.checks import check_callable, check_choice, check_positive_int
from batchlab._util.compile import function_name
from batchlab.batching.axes_spec import (
    Resolved,
    check_axis_types,
    out_axis_per_leaf,
    resolve,
    static_key,
)
from batchlab.batching.host_chunks import HostPlan, host_program, plan_call

#: every strategy ``batch`` takes, then "manual" (``compare(manual=)``, batched by hand)
STRATEGIES: tuple[str, ...] = ("loop", "vmap", "map", "chunked", "host", "manual")
#: run from Python, one dispatch per item or chunk (timed as they run)
DISPATCHED: tuple[str, ...] = ("loop", "host")
#: with a memory plan for the whole batch (``max_batch_size``, ``run_batches``)
PLANNED: tuple[str, ...] = ("vmap", "map", "chunked", "host")
#: what ``advise`` chooses between
ADVISED: tuple[str, ...] = ("vmap", "chunked", "host")
#: compiled programs kept per batched function (the oldest is dropped first)
CACHE_SIZE = 64


def to_front(mapped: list, axes: tuple) -> list:
    """Every mapped leaf with its batch axis first."""
    return [x if ax == 0 else jnp.moveaxis(x, ax, 0) for x, ax in zip(mapped, axes, strict=True)]


def place_outputs(stacked: Any, out_axes: Any) -> Any:
    """Stacked outputs (batch on axis 0) -> batch axis at ``out_axes`` (None: item 0)."""
    flat, per, treedef = out_axis_per_leaf(stacked, out_axes)
    placed = [
        y[0] if ax is None else jnp.moveaxis(y, 0, ax) for y, ax in zip(flat, per, strict=True)
    ]
    return jax.tree_util.tree_unflatten(treedef, placed)


def vmap_program(fn: Callable, res: Resolved, out_axes: Any, chunk_size: None = None):
    """``"vmap"``: ``jax.jit(jax.vmap(fn))``, one program for the whole batch."""

    def program(mapped: list, shared: list) -> Any:
        item = lambda xs: res.call(fn, list(xs), shared)  # noqa: E731
        return jax.vmap(item, in_axes=(list(res.axes),), out_axes=out_axes)(mapped)

    return jax.jit(program)


def map_program(fn: Callable, res: Resolved, out_axes: Any, chunk_size: int | None):
    """``"map"``, ``"chunked"``: ``jax.lax.map``, ``chunk_size`` items at a time, one program."""

    def program(mapped: list, shared: list) -> Any:
        item = lambda xs: res.call(fn, list(xs), shared)  # noqa: E731
        stacked = jax.lax.map(item, to_front(mapped, res.axes), batch_size=chunk_size)
        return place_outputs(stacked, out_axes)

    return jax.jit(program)


def loop_program(fn: Callable, res: Resolved, out_axes: Any, chunk_size: None = None):
    """``"loop"``: one jitted ``fn`` per item, called from Python, then a stack."""
    step = jax.jit(lambda xs, shared: res.call(fn, xs, shared))

    def program(mapped: list, shared: list) -> Any:
        xs = to_front(mapped, res.axes)
        outs = [step([x[i] for x in xs], shared) for i in range(xs[0].shape[0])]
        return place_outputs(jax.tree_util.tree_map(lambda *ys: jnp.stack(ys), *outs), out_axes)

    return program


#: the program of each strategy ("host": one jitted vmap per chunk, in host_chunks.py)
PROGRAMS = {
    "vmap": vmap_program,
    "map": map_program,
    "chunked": map_program,
    "loop": loop_program,
    "host": host_program,
}


def remember(cache: dict, key: Any, make: Callable[[], Any]) -> Any:
    """``cache[key]``, made by ``make()`` the first time; the oldest entry goes past CACHE_SIZE."""
    if key not in cache:
        if len(cache) >= CACHE_SIZE:
            cache.pop(next(iter(cache)))
        cache[key] = make()
    return cache[key]


def _raise_out_axes(error: ValueError, out_axes: Any) -> None:
    """JAX's own out-of-bounds ``out_axes`` error, with the argument named beside it."""
    if out_axes != 0 and "out of bounds" in str(error):
        raise ValueError(
            f"`out_axes`={out_axes!r} is not an axis of fn's output with the batch axis added "
            f"(JAX says: {str(error).splitlines()[0]}). An output of rank r takes out_axes in "
            f"-(r+1)..r; e.g. out_axes=0 puts the batch first."
        ) from error


def _check_options(strategy: str, chunk_size: Any, in_axes: Any, out_axes: Any) -> int | None:
    """The options ``batch`` takes, checked before anything traces; returns ``chunk_size``."""
    if isinstance(in_axes, dict):
        raise TypeError(
            f"`in_axes` must be an int, None, or a tuple with one entry per positional argument "
            f"(jax.vmap raises the same TypeError), got the dict {in_axes!r}. A dict of axes "
            f"belongs inside the tuple, for a dict argument: in_axes=({in_axes!r},)."
        )
    check_axis_types(in_axes, "in_axes")
    check_axis_types(out_axes, "out_axes")
    if strategy == "manual":
        raise ValueError(
            "strategy='manual' is a function you batched by hand: call it (jax.jit it) as it "
            "is; `batch` maps a per-item function. compare(fn, *args, manual=your_fn) measures "
            "it beside the strategies."
        )
    check_choice(strategy, "strategy", STRATEGIES[:-1])
    if strategy in ("chunked", "host") and chunk_size is None:
        raise ValueError(
            f"`chunk_size` is required for strategy={strategy!r}: the number of items per "
            "chunk (e.g. chunk_size=32); smaller chunks use less memory, larger ones run faster."
        )
    if strategy not in ("map", "chunked", "host") and chunk_size is not None:
        raise ValueError(
            f"`chunk_size` only applies to strategy='chunked', 'host' or 'map', got "
            f"chunk_size={chunk_size!r} with strategy={strategy!r}; drop it or pick a chunked "
            "strategy."
        )
    return check_positive_int(chunk_size, "chunk_size", allow_none=True)


def batch(
    fn: Callable,
    *,
    strategy: str = "vmap",
    chunk_size: int | None = None,
    in_axes: Any = 0,
    out_axes: Any = 0,
) -> Callable:
    """Turns a per-item function into a batched one, with a chosen strategy.

    Every strategy returns what ``jax.vmap(fn, in_axes, out_axes)`` returns (to float
    tolerance) and accepts what it accepts: keyword arguments (mapped on axis 0), pytrees,
    unmapped Python values (passed to ``fn`` untouched), a remainder, an empty batch.
    ``chunk_size`` (items per chunk) is required for ``"chunked"`` and ``"host"``, optional
    for ``"map"``. The result is compiled (``batch(fn)`` is ``jax.jit(jax.vmap(fn))``), named
    as ``fn``, and carries ``.fn``, ``.strategy``, ``.chunk_size`` and ``.plan(*args)`` (a
    :class:`HostPlan`, for ``"host"``).

    >>> import jax.numpy as jnp
    >>> f = batch(lambda x, n: x[:n], strategy="host", chunk_size=4, in_axes=(0, None))
    >>> f(jnp.ones((10, 3)), 2).shape  # 2 chunks of 4, a remainder of 2; n stays the int 2
    (10, 2)
    """
    check_callable(fn)
    chunk_size = _check_options(strategy, chunk_size, in_axes, out_axes)
    programs: dict[tuple, Callable] = {}  # per kind of call (tree, axes, static values, ranks)

    def program_for(args: tuple, kwargs: dict) -> tuple:
        res = resolve(fn, args, in_axes, kwargs, allow_static=True)
        kind = "vmap" if res.batch_size == 0 else strategy  # an empty batch: vmap's program

        def make() -> Callable:
            if kind != "vmap":  # vmap's own errors (out_axes, output types), before any strategy
                leaves = jax.tree_util.tree_leaves((*args, *kwargs.values()))
                try:
                    jax.eval_shape(vmap_program(fn, res, out_axes), *res.inputs(leaves))
                except ValueError as e:
                    _raise_out_axes(e, out_axes)
                    raise
            return PROGRAMS[kind](fn, res, out_axes, chunk_size)

        return remember(programs, (res.key, kind), make), res

    # A call with the leaf types, shapes and static values of an earlier one skips resolve():
    # a Python-dispatched strategy pays this wrapper on every call (host on the MLP
    # benchmark: 6.2x vmap's time with resolve() on every call, 1.5x without).
    seen: dict[tuple, tuple] = {}

    @functools.wraps(fn)
    def batched(*args: Any, **kwargs: Any) -> Any:
        flat, tdef = jax.tree_util.tree_flatten((*args, *kwargs.values()))
        shapes = [(type(x), getattr(x, "shape", None), getattr(x, "dtype", None)) for x in flat]
        sig = (tdef, tuple(kwargs), tuple(shapes))
        hit = seen.get(sig)
        if hit is None or any(static_key(flat[k]) != key for k, key in hit[2]):
            program, res = program_for(args, kwargs)  # BatchAxisError before tracing
            seen.pop(sig, None)
            hit = remember(seen, sig, lambda: (program, res, res.statics))
        program, res, _ = hit
        try:
            return program(*res.inputs(flat))
        except ValueError as e:
            if strategy == "vmap":
                _raise_out_axes(e, out_axes)
            raise

    def plan(*args: Any, **kwargs: Any) -> HostPlan:
        """What ``"host"`` does for this call: chunks, programs, dispatches, XLA's plan per step."""
        if strategy != "host":
            raise ValueError(
                f"`plan` describes strategy='host' only; this is strategy={strategy!r}."
            )
        program, res = program_for(args, kwargs)
        if res.batch_size == 0:
            raise ValueError("`plan` needs a non-empty batch; this call maps no items.")
        mapped, shared = res.inputs(jax.tree_util.tree_leaves((*args, *kwargs.values())))
        return plan_call(program, res.axes, mapped, shared, res.batch_size, chunk_size)

    # as jax.vmap: fn's name, qualname, module, __wrapped__ (functools.wraps above), docstring
    batched.__name__ = getattr(fn, "__name__", function_name(fn))
    batched.__qualname__ = getattr(fn, "__qualname__", batched.__name__)
    for attr, value in dict(fn=fn, strategy=strategy, chunk_size=chunk_size, plan=plan).items():
        setattr(batched, attr, value)
    return batched
