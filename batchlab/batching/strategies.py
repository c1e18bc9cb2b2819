"""Five ways to run a per-item function over a batch (notebook 03): ``program(mapped, shared)``.

``jax.vmap`` decides what a call means (which leaves are mapped, on which axis, what it refuses);
a strategy only decides how the mapped leaves are cut into items or chunks. Unmapped values that
are not JAX arrays (a function, a string, a flag, a shape, a numpy array) reach ``fn`` untouched,
closed over by the compiled program, as ``jax.vmap`` passes them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from batchlab._util.checks import check_callable, check_choice, check_positive_int
from batchlab.batching.axes_spec import Layout, layout_of, out_axis_per_leaf
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


def static_key(x: Any) -> Any:
    """What a compiled program that closes over ``x`` depends on: its value (a numpy array's
    bytes), or, for a value that cannot be hashed, the object itself (kept alive by the cache)."""
    if isinstance(x, np.ndarray):
        return (np.ndarray, x.shape, x.dtype.str, x.tobytes())
    try:
        return (type(x), hash(x), x)
    except TypeError:
        return (type(x), id(x))


# Each maker: (fn, jax.vmap(fn, in_axes, out_axes), the call's layout, its untouched values,
# out_axes, chunk_size) -> program(mapped, shared): mapped / shared are the traced leaves.
def vmap_program(fn: Callable, vf: Callable, lay: Layout, static: list, out_axes: Any, k=None):
    """``"vmap"``: ``jax.jit(jax.vmap(fn, in_axes, out_axes))``, one program for the batch."""

    def vmap_step(mapped: list, shared: list) -> Any:  # also host's step, one chunk
        return lay.call(vf, mapped, shared, static)

    return jax.jit(vmap_step)


def map_program(fn: Callable, vf: Callable, lay: Layout, static: list, out_axes: Any, k=None):
    """``"map"``, ``"chunked"``: ``jax.lax.map``, ``chunk_size`` items at a time, one program."""

    def program(mapped: list, shared: list) -> Any:
        item = lambda xs: lay.call(fn, list(xs), shared, static)  # noqa: E731
        stacked = jax.lax.map(item, to_front(mapped, lay.mapped_axes), batch_size=k)
        return place_outputs(stacked, out_axes)

    return jax.jit(program)


def loop_program(fn: Callable, vf: Callable, lay: Layout, static: list, out_axes: Any, k=None):
    """``"loop"``: one jitted ``fn`` per item, called from Python, then a stack."""
    step = jax.jit(lambda xs, shared: lay.call(fn, xs, shared, static))

    def program(mapped: list, shared: list) -> Any:
        xs = to_front(mapped, lay.mapped_axes)
        outs = [step([x[i] for x in xs], shared) for i in range(xs[0].shape[0])]
        return place_outputs(jax.tree_util.tree_map(lambda *ys: jnp.stack(ys), *outs), out_axes)

    return program


def host_program(fn: Callable, vf: Callable, lay: Layout, static: list, out_axes: Any, k=None):
    """``"host"``: ``jax.jit(jax.vmap(fn))`` per chunk of ``k``, dispatched from Python."""
    step = vmap_program(fn, vf, lay, static, out_axes)

    def program(mapped: list, shared: list) -> Any:
        if any(isinstance(x, jax.core.Tracer) for x in [*mapped, *shared]):
            raise TypeError(
                "strategy='host' dispatches one compiled program per chunk from Python, so it "
                "cannot run inside jax.jit, grad, vmap or scan (it got a tracer): call it outside, "
                "or use strategy='chunked' with the same chunk_size (the same chunks, as one "
                "lax.map inside the program) or strategy='vmap'."
            )
        n = mapped[0].shape[lay.mapped_axes[0]]
        if n <= k:
            return step(mapped, shared)  # one chunk: no slices, no concatenation
        ranges = tuple(bounds(n, k))
        outs = [step(chunk, shared) for chunk in split_chunks(mapped, ranges, lay.mapped_axes)]
        _, per, treedef = out_axis_per_leaf(outs[0], out_axes)
        parts = list(zip(*map(jax.tree_util.tree_leaves, outs), strict=True))
        return jax.tree_util.tree_unflatten(treedef, concat(parts, tuple(per)))

    program.step = step  # type: ignore[attr-defined]
    return program


MAKERS = {"vmap": vmap_program, "map": map_program, "chunked": map_program}
MAKERS |= {"loop": loop_program, "host": host_program}


def _check_options(strategy: str, chunk_size: Any) -> int | None:
    """The options ``batch`` takes, checked before anything traces; returns ``chunk_size``."""
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
    """``jax.jit(jax.vmap(fn, in_axes, out_axes))`` run by another ``strategy``, same result.

    ``in_axes`` and ``out_axes`` go to ``jax.vmap`` as they are, so every call ``jax.vmap``
    accepts works under every strategy and every call it refuses is refused with its error.
    Mapped leaves and unmapped JAX arrays are arguments of the compiled programs; any other
    unmapped value (a function, a string, a bool, an int used as a shape, a numpy array) reaches
    ``fn`` untouched, as under ``jax.vmap``, and a new value of it compiles anew.

    Args:
      fn: the per-item function.
      strategy: ``"vmap"`` (one program), ``"map"`` / ``"chunked"`` (``jax.lax.map`` with
        ``batch_size=chunk_size``, one program), ``"host"`` (``jax.jit(jax.vmap(fn))`` per chunk
        of ``chunk_size`` items, dispatched from Python) or ``"loop"`` (one call per item).
      chunk_size: items per chunk: required for "chunked" and "host", optional for "map".
      in_axes: as in ``jax.vmap`` (keyword arguments are mapped on axis 0).
      out_axes: as in ``jax.vmap``.

    Returns:
      The batched function, named and documented as ``jax.vmap(fn)`` is, with ``fn``,
      ``strategy``, ``chunk_size`` and ``plan`` (for "host", a :class:`HostPlan`) attached.

    Raises:
      TypeError: ``fn`` is not callable, ``chunk_size`` is not an int, or ``jax.vmap`` refuses
        ``in_axes`` / ``out_axes`` (its own message, naming the argument).
      ValueError: an unknown ``strategy`` or a ``chunk_size`` it does not take; at call time,
        what ``jax.vmap`` raises, its own words (``explain_axes`` says why and how to fix it).

    Example:
      >>> import jax.numpy as jnp
      >>> f = batch(lambda x, w: x @ w, strategy="host", chunk_size=4, in_axes=(0, None))
      >>> f(jnp.ones((10, 3)), jnp.ones((3, 2))).shape  # 2 chunks of 4, a remainder of 2
      (10, 2)
    """
    check_callable(fn)
    k = chunk_size = _check_options(strategy, chunk_size)
    try:
        vf = jax.vmap(fn, in_axes=in_axes, out_axes=out_axes)
    except TypeError as e:  # JAX's words; the kit adds the argument's name
        raise TypeError(f"{e} (`in_axes`={in_axes!r}, `out_axes`={out_axes!r})") from None
    programs: dict[tuple, Callable] = {}  # per tree, axes, untouched values, kind: not shapes
    layouts: dict[tuple, Layout] = {}  # per tree, types and shapes: jax.vmap's reading of it

    def program_for(args: tuple, kwargs: dict) -> tuple:
        flat = jax.tree_util.tree_leaves((args, kwargs))
        shapes = [(type(x), getattr(x, "shape", None), getattr(x, "dtype", None)) for x in flat]
        key = (jax.tree_util.tree_structure((args, kwargs)), tuple(shapes))
        if key not in layouts:  # host's time on the MLP benchmark without this: 6.2x vmap's -> 1.5x
            layouts[key] = layout_of(fn, in_axes, args, kwargs)
        lay = layouts[key]
        mapped, shared, static = lay.split(flat)
        kind = "vmap" if lay.batch_size == 0 else strategy  # an empty batch: vmap's program
        pkey = (key[0], lay.axes, lay.traced, tuple(map(static_key, static)), kind)
        if pkey not in programs:  # jax.vmap's own errors (out_axes, output types) first
            check = vmap_program(fn, vf, lay, static, out_axes)
            try:
                jax.eval_shape(check, mapped, shared)
            except ValueError as e:
                if "out of bounds" not in str(e):
                    raise
                raise ValueError(
                    f"`out_axes`={out_axes!r} is not an axis of fn's output with the batch axis "
                    f"added (JAX: {e}); an output of rank r takes out_axes in -(r+1)..r."
                ) from e
            make = MAKERS[kind]
            programs[pkey] = check if kind == "vmap" else make(fn, vf, lay, static, out_axes, k)
        return programs[pkey], lay, mapped, shared

    @functools.wraps(vf)
    def batched(*args: Any, **kwargs: Any) -> Any:
        program, _, mapped, shared = program_for(args, kwargs)
        return program(mapped, shared)

    def plan(*args: Any, **kwargs: Any) -> HostPlan:
        """What ``"host"`` does for this call: a :class:`HostPlan`."""
        program, lay, mapped, shared = program_for(args, kwargs)
        if strategy != "host" or lay.batch_size == 0:
            raise ValueError(
                f"`plan` describes strategy='host' on a non-empty batch; this is "
                f"strategy={strategy!r} on {lay.batch_size} items."
            )
        return plan_call(program, lay.mapped_axes, mapped, shared, lay.batch_size, chunk_size)

    vars(batched).update(fn=fn, strategy=strategy, chunk_size=chunk_size, plan=plan)
    batched.__wrapped__ = fn  # as jax.vmap's
    return batched
