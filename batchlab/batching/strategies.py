"""Six ways to run a per-item function over a batch, all a drop-in for ``jax.vmap``.

``"loop"``: a jitted ``fn`` per item from Python, stacked (under an outer ``jax.jit`` it
unrolls). ``"vmap"``: ``jax.jit(jax.vmap(fn))``. ``"map"`` / ``"chunked"``:
``jax.lax.map(item, xs, batch_size=chunk_size)``, a loop inside one XLA program.
``"host"``: one jitted ``vmap`` per chunk, dispatched from Python and concatenated.
``"manual"``: ``fn`` already batched, jitted. Every one runs compiled code, so timing a
call after the first compares strategies, not dispatch modes. Read
:func:`strategy_program`: each strategy is one line of JAX beside its name, one hop away.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax

from batchlab._util.checks import check_callable, check_positive_int
from batchlab._util.compile import function_name
from batchlab.batching.axes_spec import check_axis_types, resolve
from batchlab.batching.batch_args import Split, remember, split, static_key
from batchlab.batching.host_chunks import HostPlan, host_program, plan_call
from batchlab.batching.in_program import (
    eager_loop_program,
    manual_program,
    vmap_program,
    whole_batch_program,
)

#: every strategy ``batch`` takes; the kit's other lists are named parts of this one
STRATEGIES: tuple[str, ...] = ("loop", "vmap", "map", "chunked", "host", "manual")
#: what ``compare`` measures: the strategies plus "unrolled" (the loop under ``jax.jit``)
COMPARED: tuple[str, ...] = (*STRATEGIES, "unrolled")
#: run from Python, one dispatch per item or chunk (timed as they run)
DISPATCHED: tuple[str, ...] = ("loop", "host")
#: with a memory plan for the whole batch (``max_batch_size``, ``run_batches``)
PLANNED: tuple[str, ...] = ("vmap", "map", "chunked", "host")
#: what ``advise`` chooses between
ADVISED: tuple[str, ...] = ("vmap", "chunked", "host")
_CHUNKED = ("chunked", "host")


def _check_axes(in_axes: Any, out_axes: Any) -> None:
    """Axis specs with the wrong types: TypeError now, as jax.vmap raises (at call time)."""
    if isinstance(in_axes, dict):
        raise TypeError(
            f"`in_axes` must be an int, None, or a tuple with one entry per positional argument "
            f"(jax.vmap raises the same TypeError), got the dict {in_axes!r}. A dict of axes "
            f"belongs inside the tuple, for a dict argument: in_axes=({in_axes!r},)."
        )
    check_axis_types(in_axes, "in_axes")
    check_axis_types(out_axes, "out_axes")


def _check_strategy(strategy: Any, chunk_size: Any, in_axes: Any, out_axes: Any) -> int | None:
    if strategy not in STRATEGIES:
        raise ValueError(f"`strategy` must be one of {STRATEGIES}, got strategy={strategy!r}.")
    if strategy in _CHUNKED:
        if chunk_size is None:
            raise ValueError(
                f"`chunk_size` is required for strategy={strategy!r}: the number of items per "
                "chunk (e.g. chunk_size=32); smaller chunks use less memory, larger ones run faster."
            )
        return check_positive_int(chunk_size, "chunk_size")
    if strategy == "map":
        return check_positive_int(chunk_size, "chunk_size", allow_none=True)
    if chunk_size is not None:
        raise ValueError(
            f"`chunk_size` only applies to strategy='chunked', 'host' or 'map', got "
            f"chunk_size={chunk_size!r} with strategy={strategy!r}; drop it or pick a chunked strategy."
        )
    if strategy == "manual" and (in_axes != 0 or out_axes != 0):
        raise ValueError(
            f"strategy='manual' uses `fn` as written for the whole batch, so in_axes/out_axes do not "
            f"apply (got in_axes={in_axes!r}, out_axes={out_axes!r}); leave them at 0."
        )
    return None


def _check_axis_options(strategy: str, axis_size: Any, axis_name: Any, spmd_axis_name: Any) -> None:
    if axis_size is not None:
        check_positive_int(axis_size, "axis_size")
    if strategy == "vmap":
        return
    for option, value in (("axis_name", axis_name), ("spmd_axis_name", spmd_axis_name)):
        if value is not None:
            raise ValueError(
                f"`{option}` names the batch axis for collectives (jax.lax.psum, pmean, all_gather) "
                f"over ALL items; strategy={strategy!r} runs the items one at a time or in chunks, "
                f"so a collective would see one item or one chunk and give a wrong answer. Use "
                f"strategy='vmap' with {option}={value!r}, or reduce outside: batch(fn, "
                f"strategy={strategy!r}, ...)(xs).sum(0)."
            )
    if strategy == "manual" and axis_size is not None:
        raise ValueError(
            "`axis_size` does not apply to strategy='manual' (fn sees the whole batch)."
        )


def _raise_out_axes(error: ValueError, out_axes: Any) -> None:
    """JAX's own out-of-bounds ``out_axes`` error, with the argument named beside it."""
    if out_axes != 0 and "out of bounds" in str(error):
        raise ValueError(
            f"`out_axes`={out_axes!r} is not an axis of fn's output with the batch axis added "
            f"(JAX says: {str(error).splitlines()[0]}). An output of rank r takes out_axes in "
            f"-(r+1)..r; e.g. out_axes=0 puts the batch first."
        ) from error


def _check_out_axes(fn: Callable, sp: Split, mapped: list, shared: list, out_axes: Any) -> None:
    """JAX's own out_axes errors (None for a batched output, bounds, tree), before any strategy."""
    try:
        jax.eval_shape(
            lambda m, s: jax.vmap(
                lambda xs: sp.call(fn, xs, s), in_axes=(list(sp.axes),), out_axes=out_axes
            )(m),
            mapped,
            shared,
        )
    except ValueError as e:
        _raise_out_axes(e, out_axes)
        raise


def _static_ranks(mapped: list, shared: list) -> tuple:
    return tuple(len(getattr(x, "shape", ())) for x in (*mapped, *shared))


def _shape_sig(x: Any) -> tuple:
    """What a call's fast path keys on per leaf: type, shape and dtype (values: see statics)."""
    shape = getattr(x, "shape", None)
    return (type(x),) if shape is None else (type(x), tuple(shape), getattr(x, "dtype", None))


def strategy_program(
    fn: Callable,
    strategy: str,
    chunk_size: int | None,
    out_axes: Any,
    sp: Split,
    **vmap_options: Any,
) -> Callable[[list, list], Any]:
    """``program(mapped, shared)``: the strategy, for one call's kind of arguments.

    ``vmap_options`` (axis_size, axis_name, spmd_axis_name) go to ``jax.vmap``.
    """
    if strategy == "vmap":
        return vmap_program(fn, out_axes, sp, **vmap_options)  # jax.vmap(fn)
    if strategy == "loop":
        return eager_loop_program(fn, out_axes, sp)  # [jax.jit(fn)(x) for x in xs], stacked
    if strategy == "host":
        return host_program(fn, chunk_size, out_axes, sp)  # jax.jit(jax.vmap(fn)) per chunk
    # "map", "chunked": jax.lax.map(fn, xs, batch_size=chunk_size), one program
    return whole_batch_program(fn, chunk_size, out_axes, sp)


def batch(
    fn: Callable,
    *,
    strategy: str = "vmap",
    chunk_size: int | None = None,
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_size: int | None = None,
    axis_name: Any = None,
    spmd_axis_name: Any = None,
) -> Callable:
    """Turns a per-item function into a batched one, with a chosen strategy.

    Every strategy returns what ``jax.vmap(fn, in_axes, out_axes)`` returns (to float
    tolerance) and accepts what it accepts: keyword arguments, pytrees, unmapped Python
    values (passed to ``fn`` untouched), a remainder, an empty batch.

    Args:
      fn: the per-item function (for ``"manual"``: the hand-batched function).
      strategy: ``"loop"``, ``"vmap"``, ``"map"``, ``"chunked"``, ``"host"`` or
        ``"manual"``.
      chunk_size: items per chunk; required for ``"chunked"`` and ``"host"``,
        optional for ``"map"`` (``jax.lax.map(chunk_size=)``), not allowed otherwise.
      in_axes: as in ``jax.vmap`` (ints, negative ints, None, per-argument
        tuples, pytree prefixes of those); keyword arguments use axis 0.
      out_axes: as in ``jax.vmap``.
      axis_size: as in ``jax.vmap`` (needed only when no argument is mapped).
      axis_name, spmd_axis_name: as in ``jax.vmap``; only with ``"vmap"``:
        a collective under another strategy would see one chunk, not the batch.

    Returns:
      ``batched(*args, **kwargs)``, compiled (``batch(fn)`` is ``jax.jit(jax.vmap(fn))``),
      named and documented as ``jax.vmap`` names it; it carries ``.fn``, ``.strategy``,
      ``.chunk_size`` and, for ``"host"``, ``.plan(*args)`` (a :class:`HostPlan`).

    Example:
      >>> import jax.numpy as jnp
      >>> f = batch(lambda x, w: x @ w, strategy="chunked", chunk_size=4, in_axes=(0, None))
      >>> f(jnp.ones((10, 3)), jnp.ones((3, 2))).shape   # 2 chunks of 4, a remainder of 2
      (10, 2)
      >>> batch(lambda x, n: x[:n], strategy="host", chunk_size=4, in_axes=(0, None))(
      ...     jnp.ones((10, 3)), 2).shape                # n reaches fn as the Python int 2
      (10, 2)
    """
    check_callable(fn)
    _check_axes(in_axes, out_axes)
    chunk_size = _check_strategy(strategy, chunk_size, in_axes, out_axes)
    _check_axis_options(strategy, axis_size, axis_name, spmd_axis_name)
    name = function_name(fn)
    programs: dict[tuple, tuple] = {}  # per kind of call (tree, axes, static values, ranks)
    vmap_options = dict(axis_size=axis_size, axis_name=axis_name, spmd_axis_name=spmd_axis_name)

    def program_for(args: tuple, kwargs: dict) -> tuple:
        res = resolve(fn, args, in_axes, kwargs, allow_static=True, axis_size=axis_size)
        sp, mapped, shared = split(res, args, kwargs)
        # an empty batch, or no mapped argument (axis_size): vmap's program under every strategy
        whole = res.batch_size == 0 or not any(lf.axis is not None for lf in res.leaves)
        kind = "vmap" if whole else strategy

        def make() -> tuple:
            if out_axes != 0 and kind != "vmap":
                _check_out_axes(fn, sp, mapped, shared, out_axes)
            return strategy_program(fn, kind, chunk_size, out_axes, sp, **vmap_options), sp

        program, sp = remember(programs, (sp.key, _static_ranks(mapped, shared), whole), make)
        return program, sp, res, mapped, shared

    # A call whose leaves have the types, shapes and static values of an earlier call skips
    # resolve() (the axis checks): a Python-dispatched strategy pays this wrapper on every call
    # (the host strategy on the MLP benchmark: 6.2x vmap's time with it on every call, 1.5x without).
    seen: dict[tuple, tuple] = {}
    manual = manual_program(fn) if strategy == "manual" else None

    @functools.wraps(fn)
    def batched(*args: Any, **kwargs: Any) -> Any:
        if manual is not None:
            return manual(*args, **kwargs)
        flat, tdef = jax.tree_util.tree_flatten((*args, *kwargs.values()))
        sig = (tdef, tuple(kwargs), tuple(_shape_sig(x) for x in flat))
        hit = seen.get(sig)
        if hit is None or any(static_key(flat[i]) != key for i, key in hit[3]):
            program, sp, _, _, _ = program_for(args, kwargs)  # BatchAxisError before tracing
            statics = tuple(
                (i, static_key(flat[i])) for i, lf in enumerate(sp.res.leaves) if lf.static
            )
            seen.pop(sig, None)
            hit = remember(seen, sig, lambda: (program, sp.mapped, sp.shared, statics))
        program, mapped_idx, shared_idx, _ = hit
        try:
            return program([flat[i] for i in mapped_idx], [flat[i] for i in shared_idx])
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
        program, sp, res, mapped, shared = program_for(args, kwargs)
        if res.batch_size == 0 or not mapped:
            raise ValueError("`plan` needs a non-empty mapped batch; this call maps no items.")
        return plan_call(program, sp, mapped, shared, res.batch_size, chunk_size)

    # as jax.vmap (jax._src.util.wraps): fn's name, qualname, module and __wrapped__ (set by
    # functools.wraps above), a docstring that starts "Vectorized version of <name>"
    batched.__name__ = getattr(fn, "__name__", name)
    batched.__qualname__ = getattr(fn, "__qualname__", batched.__name__)
    how = f"strategy={strategy!r}" + (f", chunk_size={chunk_size}" if chunk_size else "")
    batched.__doc__ = (
        f"Vectorized version of {name}. Takes similar arguments as {name} but with additional "
        f"array axes over which {name} is mapped (batchlab.batch, {how}, in_axes={in_axes!r}, "
        f"out_axes={out_axes!r}; compiled: see batchlab.batch)."
    )
    doc = getattr(fn, "__doc__", None)
    if doc:
        batched.__doc__ += f"\n\nOriginal documentation:\n\n{doc}"
    batched.fn, batched.strategy, batched.chunk_size = fn, strategy, chunk_size  # type: ignore[attr-defined]
    batched.plan = plan  # type: ignore[attr-defined]
    return batched
