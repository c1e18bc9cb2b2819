"""Five ways to run a per-item function over a batch (notebook 03): ``program(mapped, shared)``."""

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
)
from batchlab.batching.host_chunks import HostPlan, bounds, concat, plan_call, split_chunks

#: every strategy ``batch`` takes, then "manual" (``compare(manual=)``, batched by hand)
STRATEGIES: tuple[str, ...] = ("loop", "vmap", "map", "chunked", "host", "manual")
#: run from Python, one dispatch per item or chunk (timed as they run)
DISPATCHED: tuple[str, ...] = ("loop", "host")
#: with a memory plan for the whole batch (``max_batch_size``, ``run_batches``)
PLANNED: tuple[str, ...] = ("vmap", "map", "chunked", "host")
#: what ``advise`` chooses between
ADVISED: tuple[str, ...] = ("vmap", "chunked", "host")


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

    def vmap_step(mapped: list, shared: list) -> Any:  # also host's step, one chunk
        item = lambda xs: res.call(fn, list(xs), shared)  # noqa: E731
        return jax.vmap(item, in_axes=(list(res.axes),), out_axes=out_axes)(mapped)

    return jax.jit(vmap_step)


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


def host_program(fn: Callable, res: Resolved, out_axes: Any, chunk_size: int):
    """``"host"``: ``jax.jit(jax.vmap(fn))`` per chunk, dispatched from Python, concatenated."""
    step = vmap_program(fn, res, out_axes)

    def program(mapped: list, shared: list) -> Any:
        if any(isinstance(x, jax.core.Tracer) for x in [*mapped, *shared]):
            raise TypeError(
                "strategy='host' dispatches one compiled program per chunk from Python, so it "
                "cannot run inside jax.jit, grad, vmap or scan (it got a tracer): call it outside, "
                "or use strategy='chunked' with the same chunk_size (the same chunks, as one "
                "lax.map inside the program) or strategy='vmap'."
            )
        n = mapped[0].shape[res.axes[0]]
        if n <= chunk_size:
            return step(mapped, shared)  # one chunk: no slices, no concatenation
        ranges = tuple(bounds(n, chunk_size))
        outs = [step(chunk, shared) for chunk in split_chunks(mapped, ranges, res.axes)]
        _, per, treedef = out_axis_per_leaf(outs[0], out_axes)
        parts = list(zip(*map(jax.tree_util.tree_leaves, outs), strict=True))
        return jax.tree_util.tree_unflatten(treedef, concat(parts, tuple(per)))

    program.step = step  # type: ignore[attr-defined]
    return program


def check_out_axes(fn: Callable, res: Resolved, out_axes: Any, args: tuple) -> None:
    """vmap's own errors (out_axes, output types), before any strategy runs."""
    try:
        jax.eval_shape(
            vmap_program(fn, res, out_axes), *res.inputs(jax.tree_util.tree_leaves(args))
        )
    except ValueError as e:
        if "out of bounds" not in str(e):
            raise
        raise ValueError(
            f"`out_axes`={out_axes!r} is not an axis of fn's output with the batch axis "
            f"added (JAX: {str(e).splitlines()[0]}); an output of rank r takes out_axes "
            f"in -(r+1)..r."
        ) from e


def _check_options(strategy: str, chunk_size: Any, in_axes: Any, out_axes: Any) -> int | None:
    """The options ``batch`` takes, checked before anything traces; returns ``chunk_size``."""
    check_axis_types(in_axes, "in_axes")
    check_axis_types(out_axes, "out_axes")
    check_choice(strategy, "strategy", STRATEGIES[:-1])
    needs, takes = strategy in ("chunked", "host"), strategy in ("map", "chunked", "host")
    if (needs and chunk_size is None) or (not takes and chunk_size is not None):
        raise ValueError(
            f"`chunk_size` is required for strategy={strategy!r}: items per chunk, e.g. 32"
            if needs
            else f"`chunk_size` only applies to strategy='chunked', 'host' or 'map', got "
            f"chunk_size={chunk_size!r} with strategy={strategy!r}; drop it."
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
    """``jax.jit(jax.vmap(fn, in_axes, out_axes))`` by another ``strategy``: same inputs, same result.

    >>> import jax.numpy as jnp
    >>> f = batch(lambda x, w: x @ w, strategy="host", chunk_size=4, in_axes=(0, None))
    >>> f(jnp.ones((10, 3)), jnp.ones((3, 2))).shape  # 2 chunks of 4, a remainder of 2
    (10, 2)
    """
    check_callable(fn)
    chunk_size = _check_options(strategy, chunk_size, in_axes, out_axes)
    programs: dict[tuple, Callable] = {}  # per tree, axes and ranks: shapes share a program
    seen: dict[tuple, tuple] = {}  # per shapes: (program, res); a repeat skips resolve()

    def program_for(args: tuple, kwargs: dict) -> tuple:
        res = resolve(fn, args, in_axes, kwargs)  # BatchAxisError before tracing
        kind = "vmap" if res.batch_size == 0 else strategy  # an empty batch: vmap's program
        if (res.key, kind) not in programs:
            check_out_axes(fn, res, out_axes, (*args, *kwargs.values()))
            make = {"vmap": vmap_program, "map": map_program, "chunked": map_program}
            make |= {"loop": loop_program, "host": host_program}
            programs[res.key, kind] = make[kind](fn, res, out_axes, chunk_size)
        return programs[res.key, kind], res

    @functools.wraps(fn)
    def batched(*args: Any, **kwargs: Any) -> Any:
        flat, tdef = jax.tree_util.tree_flatten((*args, *kwargs.values()))
        shapes = [(type(x), getattr(x, "shape", None), getattr(x, "dtype", None)) for x in flat]
        key = (tdef, tuple(kwargs), tuple(shapes))
        if key not in seen:  # host's time on the MLP benchmark without this: 6.2x vmap's -> 1.5x
            seen[key] = program_for(args, kwargs)
        program, res = seen[key]
        return program(*res.inputs(flat))

    def plan(*args: Any, **kwargs: Any) -> HostPlan:
        """What ``"host"`` does for this call: a :class:`HostPlan`."""
        res = resolve(fn, args, in_axes, kwargs)  # refused before any program is built
        if strategy != "host" or res.batch_size == 0:
            raise ValueError(
                f"`plan` describes strategy='host' on a non-empty batch; this is "
                f"strategy={strategy!r} on {res.batch_size} items."
            )
        program, res = program_for(args, kwargs)
        mapped, shared = res.inputs(jax.tree_util.tree_leaves((*args, *kwargs.values())))
        return plan_call(program, res.axes, mapped, shared, res.batch_size, chunk_size)

    if not hasattr(fn, "__name__"):  # functools.wraps copied the rest, as jax.vmap does
        batched.__name__ = batched.__qualname__ = function_name(fn)
    vars(batched).update(fn=fn, strategy=strategy, chunk_size=chunk_size, plan=plan)
    return batched
