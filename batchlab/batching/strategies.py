"""Five ways to run a per-item function over a batch (notebook 03): ``program(mapped, shared)``.

``jax.vmap`` decides what a call means (which leaves are mapped, on which axis, what it refuses);
a strategy only decides how the mapped leaves are cut into items or chunks (see :func:`batch`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from batchlab._util.checks import check_callable, check_choice, check_positive_int
from batchlab._util.format import Rows, format_bytes
from batchlab.batching.axes_spec import Layout, axis_per_leaf, layout_of
from batchlab.measuring.plan import MemoryEstimate, estimate_from_compiled, hoisted_const_bytes

#: every strategy ``batch`` takes, then "manual" (``compare(manual=)``, batched by hand)
STRATEGIES: tuple[str, ...] = ("loop", "vmap", "map", "chunked", "host", "manual")
#: run from Python, one dispatch per item or chunk (timed as they run)
DISPATCHED: tuple[str, ...] = ("loop", "host")
#: with a memory plan for the whole batch (``max_batch_size``, ``run_batches``)
PLANNED: tuple[str, ...] = ("vmap", "map", "chunked", "host")
#: what ``advise`` chooses between
ADVISED: tuple[str, ...] = ("vmap", "chunked", "host")


# --- strategy "host": jax.jit(jax.vmap(fn)) per chunk, dispatched from Python, joined ---
def bounds(n: int, k: int) -> list[tuple[int, int]]:
    """The item ranges of the chunks: full chunks of ``k``, then the remainder.

    >>> bounds(10, 4)
    [(0, 4), (4, 8), (8, 10)]
    """
    return [(a, min(a + k, n)) for a in range(0, n, k)]


@functools.partial(jax.jit, static_argnums=1)
def concat(parts: list, axes: tuple) -> list:
    """Each output leaf's chunks concatenated along its batch axis (None: the first chunk's)."""
    return [
        p[0] if ax is None else jnp.concatenate(p, axis=ax)
        for p, ax in zip(parts, axes, strict=True)
    ]


# One dispatch for all slices: eager slices cost 5x vmap's time (MLP benchmark), a dynamic_slice
# in the step 7.6x (outer product, XLA:CPU); the price is a copy of the mapped inputs.
@functools.partial(jax.jit, static_argnums=(1, 2))
def _split(xs: list, ranges: tuple, axes: tuple) -> list:
    """Every chunk of every leaf: [[leaf slices of chunk 0], [chunk 1], ...]."""
    return [
        [jax.lax.slice_in_dim(x, a, b, axis=ax) for x, ax in zip(xs, axes, strict=True)]
        for a, b in ranges
    ]


def split_chunks(mapped: list, ranges: tuple, axes: tuple) -> list:
    """Chunks of the mapped leaves: numpy leaves as views, jax leaves by one jitted split."""
    dev = [i for i, x in enumerate(mapped) if not isinstance(x, np.ndarray)]
    parts = _split([mapped[i] for i in dev], ranges, tuple(axes[i] for i in dev)) if dev else None
    return [
        [
            x[(slice(None),) * ax + (slice(a, b),)] if isinstance(x, np.ndarray) else next(on_dev)
            for x, ax in zip(mapped, axes, strict=True)
        ]
        for (a, b), on_dev in zip(ranges, map(iter, parts or [()] * len(ranges)), strict=True)
    ]


def nbytes(tree: Any) -> int:
    """Bytes of the arrays and ``jax.ShapeDtypeStruct`` leaves; 0 for a Python value."""
    leaves = [x for x in jax.tree.leaves(tree) if hasattr(x, "shape") and hasattr(x, "dtype")]
    return sum(int(np.prod(x.shape, dtype=np.int64)) * np.dtype(x.dtype).itemsize for x in leaves)


@dataclass(frozen=True)
class HostPlan(Rows):
    """What ``"host"`` does for one call, planned (XLA) before it runs: chunks, programs, bytes."""

    items: int
    chunk: int
    dispatches: int
    steps: tuple[MemoryEstimate, ...]  # the full chunks' step program (if any), the remainder's
    input_copy_bytes: int
    chunk_output_bytes: int
    argument_bytes: int

    _header = ("", "strategy='host'")
    _inline = True

    full_chunks: int = field(init=False)  # chunks of ``chunk`` items
    remainder: int = field(init=False)  # items in the last, shorter chunk (0: none)
    programs: int = field(init=False)  # step programs compiled: one per chunk size
    temp_bytes: int = field(init=False)  # the largest step's planned temporaries

    def __post_init__(self):
        object.__setattr__(self, "full_chunks", self.items // self.chunk)
        object.__setattr__(self, "remainder", self.items % self.chunk)
        object.__setattr__(self, "programs", len(self.steps))
        object.__setattr__(self, "temp_bytes", max(m.temp_bytes for m in self.steps))

    @property
    def extra_bytes(self) -> int:
        """What one call holds beyond vmap's own plan, at most."""
        outputs = self.chunk_output_bytes if self.dispatches > 1 else 0
        return self.temp_bytes + self.input_copy_bytes + outputs

    @property
    def planned_bytes(self) -> int:
        return self.argument_bytes + self.chunk_output_bytes + self.extra_bytes

    def _title(self) -> str:
        return "compiled memory analysis (XLA) per step"

    def _rows(self) -> list[tuple[str, str]]:
        rest = f"1 remainder of {self.remainder}" if self.remainder else "no remainder"
        return [
            ("chunks", f"{self.items} items: {self.full_chunks} full of {self.chunk} + {rest}"),
            ("programs compiled", str(self.programs)),
            ("dispatches per call", str(self.dispatches)),
            ("planned temp per step", format_bytes(self.temp_bytes)),
            ("copy of the inputs, in chunks", format_bytes(self.input_copy_bytes)),
            ("chunk outputs, until concatenated", format_bytes(self.chunk_output_bytes)),
            ("beyond vmap's plan (temp + copies + chunk outputs)", format_bytes(self.extra_bytes)),
            ("planned for the call (+ arguments + output)", format_bytes(self.planned_bytes)),
        ]


def plan_call(program: Callable, axes: tuple, mapped: list, shared: list, n: int, k: int):
    """Compiles (does not run) the step programs of one call and counts its dispatches."""
    chunks = bounds(n, k)
    sizes = sorted({b - a for a, b in chunks}, reverse=True)  # the full chunk, the remainder

    def estimate(size: int) -> MemoryEstimate:
        chunk = [
            jax.ShapeDtypeStruct((*x.shape[:ax], size, *x.shape[ax + 1 :]), x.dtype)
            for x, ax in zip(mapped, axes, strict=True)
        ]
        return estimate_from_compiled(program.step.lower(chunk, shared).compile(), "host step")

    steps = tuple(map(estimate, sizes))
    full = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in mapped]
    closed = hoisted_const_bytes(program.step, full, shared)  # the arrays fn closes over
    several = len(chunks) > 1
    on_device = [x for x in mapped if not isinstance(x, np.ndarray)]
    slices = 1 if several and on_device else 0
    return HostPlan(
        items=n,
        chunk=k,
        dispatches=slices + len(chunks) + several,
        steps=steps,
        input_copy_bytes=nbytes(on_device) if slices else 0,
        chunk_output_bytes=sum(steps[sizes.index(b - a)].output_bytes for a, b in chunks),
        argument_bytes=nbytes([mapped, shared]) + closed,  # as compile_fn's hoisted ones
    )


def to_front(mapped: list, axes: tuple) -> list:
    """Every mapped leaf with its batch axis first."""
    return [x if ax == 0 else jnp.moveaxis(x, ax, 0) for x, ax in zip(mapped, axes, strict=True)]


def place_outputs(stacked: Any, out_axes: Any) -> Any:
    """Stacked outputs (batch on axis 0) -> batch axis at ``out_axes`` (None: item 0)."""
    flat, treedef = jax.tree.flatten(stacked)
    axes = axis_per_leaf(out_axes, stacked)
    placed = [
        y[0] if ax is None else jnp.moveaxis(y, 0, ax) for y, ax in zip(flat, axes, strict=True)
    ]
    return jax.tree.unflatten(treedef, placed)


def static_key(x: Any) -> Any:
    """What a program that closes over ``x`` depends on: its value (a numpy array's bytes), or
    the object itself where it cannot be hashed (kept alive by the cache)."""
    if isinstance(x, np.ndarray):
        return (np.ndarray, x.shape, x.dtype.str, x.tobytes())
    try:
        return (type(x), hash(x), x)
    except TypeError:
        return (type(x), id(x))


def make_program(kind: str, fn: Callable, vf: Callable, lay: Layout, static: list, out_axes, k):
    """``program(mapped, shared)`` of one strategy (``vf``: ``jax.vmap(fn, in_axes, out_axes)``;
    ``mapped`` / ``shared``: the call's traced leaves, ``static``: its untouched values)."""

    def vmap_step(mapped: list, shared: list) -> Any:  # "vmap", and host's step on one chunk
        return lay.call(vf, mapped, shared, static)

    def lax_map(mapped: list, shared: list) -> Any:  # "map", "chunked": one program
        item = lambda xs: lay.call(fn, list(xs), shared, static)  # noqa: E731
        stacked = jax.lax.map(item, to_front(mapped, lay.mapped_axes), batch_size=k)
        return place_outputs(stacked, out_axes)

    # host: the vmap program on one chunk; loop: fn on one item
    step = jax.jit(vmap_step if kind == "host" else lambda xs, sh: lay.call(fn, xs, sh, static))

    def loop(mapped: list, shared: list) -> Any:  # one jitted fn per item, then a stack
        xs = to_front(mapped, lay.mapped_axes)
        outs = [step([x[i] for x in xs], shared) for i in range(xs[0].shape[0])]
        return place_outputs(jax.tree.map(lambda *ys: jnp.stack(ys), *outs), out_axes)

    def host(mapped: list, shared: list) -> Any:  # the vmap step per chunk of k, then one concat
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
        per, treedef = tuple(axis_per_leaf(out_axes, outs[0])), jax.tree.structure(outs[0])
        parts = list(zip(*map(jax.tree.leaves, outs), strict=True))
        return jax.tree.unflatten(treedef, concat(parts, per))

    if kind == "vmap":
        return jax.jit(vmap_step)
    if kind in ("map", "chunked"):
        return jax.jit(lax_map)
    if kind == "loop":
        return loop
    host.step = step  # type: ignore[attr-defined]
    return host


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
        flat = jax.tree.leaves((args, kwargs))
        shapes = [(type(x), getattr(x, "shape", None), getattr(x, "dtype", None)) for x in flat]
        key = (jax.tree.structure((args, kwargs)), tuple(shapes))
        if key not in layouts:  # host's time on the MLP benchmark without this: 6.2x vmap's -> 1.5x
            layouts[key] = layout_of(fn, in_axes, args, kwargs)
        lay = layouts[key]
        mapped, shared, static = lay.split(flat)
        kind = "vmap" if lay.batch_size == 0 else strategy  # an empty batch: vmap's program
        pkey = (key[0], lay.axes, lay.traced, tuple(map(static_key, static)), kind)
        if pkey not in programs:  # jax.vmap's own errors (out_axes, output types) first
            check = make_program("vmap", fn, vf, lay, static, out_axes, k)
            try:
                jax.eval_shape(check, mapped, shared)
            except ValueError as e:
                if "out of bounds" not in str(e):
                    raise
                raise ValueError(
                    f"`out_axes`={out_axes!r} is not an axis of fn's output with the batch axis "
                    f"added (JAX: {e}); an output of rank r takes out_axes in -(r+1)..r."
                ) from e
            programs[pkey] = (
                check if kind == "vmap" else make_program(kind, fn, vf, lay, static, out_axes, k)
            )
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
