"""The strategies that run a batch as ONE call: ``vmap``, ``lax.map``, chunked, an item loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.extend.core
import jax.numpy as jnp
import numpy as np

from batchlab.batching.axes_spec import axis_per_leaf, is_axis_leaf
from batchlab.batching.batch_args import Split, remember, static_key


def out_axis_per_leaf(out: Any, out_axes: Any) -> tuple[list, list, Any]:
    """Output leaves and the out axis of each (``out_axes`` is a prefix tree of ``out``)."""
    spec_def = jax.tree_util.tree_structure(out_axes, is_leaf=is_axis_leaf)
    try:
        subtrees = spec_def.flatten_up_to(out)
    except (ValueError, TypeError) as e:
        raise ValueError(
            f"`out_axes`={out_axes!r} must be a tree prefix of fn's output "
            f"({jax.tree_util.tree_structure(out)}), as in jax.vmap: {str(e).splitlines()[0]}"
        ) from None
    flat = [leaf for sub in subtrees for leaf in jax.tree_util.tree_leaves(sub)]
    return flat, axis_per_leaf(out_axes, subtrees), jax.tree_util.tree_structure(out)


def check_jax_types(out: Any) -> Any:
    """fn's output for one item: vmap's TypeError for a leaf that is not a JAX type."""
    for leaf in jax.tree_util.tree_leaves(out):
        if not jax.extend.core.valid_jaxtype(leaf):
            raise TypeError(
                f"Output from batched function {leaf!r} with type {type(leaf)} is not a valid "
                "JAX type (as jax.vmap raises): return arrays or numbers from fn."
            )
    return out


def place_outputs(stacked: Any, out_axes: Any) -> Any:
    """Stacked outputs (batch on axis 0) -> batch axis at ``out_axes`` (None: item 0)."""
    flat, per, treedef = out_axis_per_leaf(stacked, out_axes)
    placed = []
    for y, ax in zip(flat, per, strict=True):
        y = jnp.asarray(y)
        if ax is None:
            placed.append(y[0])
            continue
        if not -y.ndim <= ax < y.ndim:
            raise ValueError(
                f"`out_axes` {ax} is out of bounds for an output of {y.ndim - 1} axes."
            )
        placed.append(jnp.moveaxis(y, 0, ax))
    return jax.tree_util.tree_unflatten(treedef, placed)


def whole_batch_program(
    fn: Callable, chunk_size: int | None, out_axes: Any, sp: Split
) -> Callable[[list, list], Any]:
    """``program(mapped, shared)`` for ``"map"`` and ``"chunked"``: one jitted program."""

    def program(mapped: list, shared: list) -> Any:
        front = [jnp.moveaxis(jnp.asarray(x), ax, 0) for x, ax in zip(mapped, sp.axes, strict=True)]

        def item(xs: Any) -> Any:
            return check_jax_types(sp.call(fn, list(xs), shared))

        stacked = jax.lax.map(item, front, batch_size=chunk_size)
        return place_outputs(stacked, out_axes)

    return jax.jit(program)


def vmap_program(
    fn: Callable,
    out_axes: Any,
    sp: Split,
    *,
    axis_size: int | None = None,
    axis_name: Any = None,
    spmd_axis_name: Any = None,
) -> Callable[[list, list], Any]:
    """``program(mapped, shared)`` for ``"vmap"``: ``jax.jit(jax.vmap(fn))``, one program."""

    def program(mapped: list, shared: list) -> Any:
        def item(xs: Any) -> Any:
            return sp.call(fn, list(xs), shared)

        return jax.vmap(
            item,
            in_axes=(list(sp.axes),),
            out_axes=out_axes,
            axis_size=axis_size,
            axis_name=axis_name,
            spmd_axis_name=spmd_axis_name,
        )(mapped)

    return jax.jit(program)


def eager_loop_program(fn: Callable, out_axes: Any, sp: Split) -> Callable[[list, list], Any]:
    """``program(mapped, shared)`` for ``"loop"``: one jitted ``fn`` per item, then a stack."""
    item_jit = jax.jit(lambda xs, shared: check_jax_types(sp.call(fn, xs, shared)))

    def program(mapped: list, shared: list) -> Any:
        front = [
            x if ax == 0 else jnp.moveaxis(x, ax, 0) for x, ax in zip(mapped, sp.axes, strict=True)
        ]
        outs = [item_jit([x[i] for x in front], shared) for i in range(front[0].shape[0])]
        stacked = jax.tree_util.tree_map(lambda *ys: jnp.stack(ys), *outs)
        return place_outputs(stacked, out_axes)

    program.step = item_jit  # type: ignore[attr-defined]
    return program


def manual_program(fn: Callable) -> Callable:
    """``"manual"``: ``fn`` as written, jitted; array leaves traced, other leaves static."""
    programs: dict = {}

    def run(*args: Any, **kwargs: Any) -> Any:
        flat, tdef = jax.tree_util.tree_flatten((args, kwargs))
        traced = tuple(i for i, x in enumerate(flat) if isinstance(x, (jax.Array, np.ndarray)))
        statics = tuple((i, static_key(x)) for i, x in enumerate(flat) if i not in traced)
        kept = [None if i in traced else x for i, x in enumerate(flat)]  # the static leaves

        def make() -> Callable:
            def program(arrays: list) -> Any:
                leaves = list(kept)
                for i, x in zip(traced, arrays, strict=True):
                    leaves[i] = x
                a, kw = jax.tree_util.tree_unflatten(tdef, leaves)
                return fn(*a, **kw)

            return jax.jit(program)

        return remember(programs, (tdef, traced, statics), make)([flat[i] for i in traced])

    return run
