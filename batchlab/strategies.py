"""Five ways to run a per-item function over a batch, all giving ``jax.vmap``'s answer.

* ``"loop"``: a Python loop, each item through a jitted ``fn``, then a
  stack. The naive baseline. Under ``jax.jit`` (as :func:`batchlab.measure`
  runs it) the loop *unrolls*: XLA compiles one copy of ``fn`` per item.
* ``"vmap"``: ``jax.vmap`` over the whole batch: one vectorized program.
* ``"map"``: ``jax.lax.map``: a sequential loop inside XLA, one item at a
  time (``batch_size=k`` uses ``lax.map``'s own chunking).
* ``"chunked"``: ``vmap`` over chunks of ``batch_size`` items, a sequential
  ``lax.map`` over the full chunks, and one ``vmap`` over the remainder, in
  one ``jit``: the remainder is never padded and a call with the same shapes
  never recompiles. Temp memory scales with the chunk, not the batch.
* ``"manual"``: ``fn`` is already written for a whole batch (an einsum, a
  matmul); used as-is, for the "is vmap as fast as hand-batched" question.

Mapped axes are moved to the front, the strategy maps over axis 0, and each
output's batch axis is moved to its ``out_axes``, exactly as ``jax.vmap``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from ._axes_spec import BatchAxisError, Resolved, _is_axis_leaf, resolve
from ._checks import check_callable, check_positive_int
from ._compile import function_name

STRATEGIES: tuple[str, ...] = ("loop", "vmap", "map", "chunked", "manual")


def _split(res: Resolved, args: tuple) -> tuple[list, Callable[[list], tuple]]:
    """Mapped leaves moved to axis 0, and a function rebuilding one item's arguments."""
    leaves = jax.tree_util.tree_leaves(args)
    mapped_idx = [k for k, lf in enumerate(res.leaves) if lf.axis is not None]
    front = [jnp.moveaxis(jnp.asarray(leaves[k]), res.leaves[k].axis, 0) for k in mapped_idx]

    def rebuild(items: list) -> tuple:
        full = list(leaves)
        for k, x in zip(mapped_idx, items, strict=False):
            full[k] = x
        return jax.tree_util.tree_unflatten(res.treedef, full)

    return front, rebuild


def _place_outputs(out: Any, out_axes: Any) -> Any:
    """Stacked outputs (batch on axis 0) -> batch axis at ``out_axes`` (None: item 0)."""
    spec_def = jax.tree_util.tree_structure(out_axes, is_leaf=_is_axis_leaf)
    subtrees = spec_def.flatten_up_to(out)
    placed = []
    for ax, sub in zip(
        jax.tree_util.tree_leaves(out_axes, is_leaf=_is_axis_leaf), subtrees, strict=False
    ):
        placed.append(
            jax.tree_util.tree_map(
                lambda y, ax=ax: y[0] if ax is None else jnp.moveaxis(y, 0, ax), sub
            )
        )
    return jax.tree_util.tree_unflatten(spec_def, placed)


def _chunked(item: Callable, xs: list, n: int, k: int) -> Any:
    """vmap over chunks of ``k`` (sequential lax.map over full chunks) + one vmap for the rest."""
    full, rest = divmod(n, k)
    vitem = jax.vmap(item)
    parts = []
    if full:
        head = [x[: full * k].reshape((full, k, *x.shape[1:])) for x in xs]
        out = jax.lax.map(vitem, head)
        parts.append(jax.tree_util.tree_map(lambda y: y.reshape((full * k, *y.shape[2:])), out))
    if rest:
        parts.append(vitem([x[full * k :] for x in xs]))
    if len(parts) == 1:
        return parts[0]
    return jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a, b]), *parts)


def _run(
    fn: Callable,
    strategy: str,
    batch_size: int | None,
    out_axes: Any,
    res: Resolved,
    args: tuple,
    item_jit: Callable | None = None,
) -> Any:
    front, rebuild = _split(res, args)
    call = item_jit or fn

    def item(xs: list) -> Any:
        return call(*rebuild(list(xs)))

    if strategy == "loop":
        outs = [item([x[i] for x in front]) for i in range(res.batch_size)]
        stacked = jax.tree_util.tree_map(lambda *ys: jnp.stack(ys), *outs)
    elif strategy == "map":
        stacked = jax.lax.map(item, front, batch_size=batch_size)
    else:
        stacked = _chunked(item, front, res.batch_size, batch_size)
    return _place_outputs(stacked, out_axes)


def _check_strategy(strategy: Any, batch_size: Any, in_axes: Any, out_axes: Any) -> int | None:
    if strategy not in STRATEGIES:
        raise ValueError(f"`strategy` must be one of {STRATEGIES}, got strategy={strategy!r}.")
    if strategy == "chunked":
        if batch_size is None:
            raise ValueError(
                "`batch_size` is required for strategy='chunked': the number of items per chunk "
                "(e.g. batch_size=32); smaller chunks use less memory, larger ones run faster."
            )
        return check_positive_int(batch_size, "batch_size")
    if strategy == "map":
        return check_positive_int(batch_size, "batch_size", allow_none=True)
    if batch_size is not None:
        raise ValueError(
            f"`batch_size` only applies to strategy='chunked' or 'map', got batch_size={batch_size!r} "
            f"with strategy={strategy!r}; drop it or pick a chunked strategy."
        )
    if strategy == "manual" and (in_axes != 0 or out_axes != 0):
        raise ValueError(
            f"strategy='manual' uses `fn` as written for the whole batch, so in_axes/out_axes do not "
            f"apply (got in_axes={in_axes!r}, out_axes={out_axes!r}); leave them at 0."
        )
    return None


def batch(
    fn: Callable,
    *,
    strategy: str = "vmap",
    batch_size: int | None = None,
    in_axes: Any = 0,
    out_axes: Any = 0,
) -> Callable:
    """Turns a per-item function into a batched one, with a chosen strategy.

    Every strategy returns what ``jax.vmap(fn, in_axes, out_axes)`` returns
    (to float tolerance), for any batch size: a remainder that ``batch_size``
    does not divide, a batch of one, an empty batch (computed by ``vmap``:
    there is no work to schedule), pytrees in and out.

    Args:
      fn: the per-item function (for ``"manual"``: the hand-batched function).
      strategy: ``"loop"``, ``"vmap"``, ``"map"``, ``"chunked"`` or ``"manual"``.
      batch_size: items per chunk; required for ``"chunked"``, optional for
        ``"map"`` (``jax.lax.map(batch_size=)``), not allowed otherwise.
      in_axes: as in ``jax.vmap`` (ints, negative ints, None, per-argument
        tuples, pytrees of those).
      out_axes: as in ``jax.vmap``.

    Returns:
      ``batched(*args)``, checking the batch axes before tracing. It carries
      ``.fn``, ``.strategy`` and ``.batch_size``.

    Raises:
      ValueError: unknown ``strategy``; ``batch_size`` missing, below 1 or
        given where it does not apply; in_axes/out_axes with ``"manual"``.
      BatchAxisError: (when called) axes that do not fit the arguments.

    Example:
      >>> import jax.numpy as jnp
      >>> f = batch(lambda x, w: x @ w, strategy="chunked", batch_size=4, in_axes=(0, None))
      >>> f(jnp.ones((10, 3)), jnp.ones((3, 2))).shape   # 2 chunks of 4, a remainder of 2
      (10, 2)
    """
    check_callable(fn)
    batch_size = _check_strategy(strategy, batch_size, in_axes, out_axes)
    name = f"{strategy}({function_name(fn)})"
    item_jit = jax.jit(fn) if strategy == "loop" else None

    def core(*args: Any) -> Any:
        res = resolve(fn, args, in_axes)
        return _run(fn, strategy, batch_size, out_axes, res, args, item_jit)

    jitted_core = jax.jit(core) if strategy in ("map", "chunked") else core

    @functools.wraps(fn)
    def batched(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(
                f"pass the batched function's arguments positionally (in_axes refers to positions), "
                f"got keyword(s) {sorted(kwargs)}."
            )
        if strategy == "manual":
            return fn(*args)
        res = resolve(fn, args, in_axes)  # raises BatchAxisError before tracing
        if strategy == "vmap" or res.batch_size == 0:
            return jax.vmap(fn, res.in_axes, out_axes)(*args)
        if any(ax is None for ax in jax.tree_util.tree_leaves(out_axes, is_leaf=_is_axis_leaf)):
            from .axes import resolve_out_axes

            resolve_out_axes(fn, res, out_axes)  # None only for outputs with no batch axis
        return jitted_core(*args)

    batched.__name__ = batched.__qualname__ = name
    batched.fn, batched.strategy, batched.batch_size = fn, strategy, batch_size  # type: ignore[attr-defined]
    return batched


__all__ = ["STRATEGIES", "BatchAxisError", "batch"]
