"""Chunks dispatched from Python: one jitted ``vmap`` per chunk (strategy ``"host"``)::

    step = jax.jit(jax.vmap(fn))
    outs = [step(xs[i:i + k]) for i in range(0, len(xs), k)]
    out = jnp.concatenate(outs)

Each chunk is a top-level program (its dot as fast as in ``vmap``, not slowed down as in a
``lax.map`` body), the temp memory one chunk's; the costs are a dispatch per chunk, two
programs (full chunks, remainder), the chunk outputs held until concatenated, and no
outer ``jax.jit`` (it would unroll), so it refuses tracers. ``.plan(*args)`` counts and
plans one call (:class:`HostPlan`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from batchlab._util.format import Rows, format_bytes
from batchlab.batching.batch_args import Split
from batchlab.batching.in_program import out_axis_per_leaf
from batchlab.measuring.memory import MemoryEstimate, estimate_from_compiled


def _refuse_tracers(mapped: list, shared: list, labels: list[str]) -> None:
    for x, label in zip([*mapped, *shared], labels, strict=False):
        if isinstance(x, jax.core.Tracer):
            raise TypeError(
                f"strategy='host' dispatches one compiled program per chunk from Python, so it "
                f"cannot run while JAX traces it (`{label}` is a {type(x).__name__}: the batched "
                f"function was called inside jax.jit, grad, vmap or scan). Call it outside the "
                f"transformation, or use strategy='chunked' with the same chunk_size (the same "
                f"chunks, as one lax.map inside the program) or strategy='vmap'."
            )


def _concat(parts: list, axes: tuple) -> list:
    """Concatenates each output leaf's chunks along its batch axis (None: the first chunk's)."""
    return [
        p[0] if ax is None else jnp.concatenate(p, axis=ax)
        for p, ax in zip(parts, axes, strict=True)
    ]


_concat_jit = jax.jit(_concat, static_argnums=1)


def _split(xs: list, ranges: tuple, axes: tuple) -> list:
    """Every chunk of every leaf, in ONE program: [[leaf slices of chunk 0], [chunk 1], ...]."""
    return [
        [jax.lax.slice_in_dim(x, a, b, axis=ax) for x, ax in zip(xs, axes, strict=True)]
        for a, b in ranges
    ]


# One dispatch for all the slices: an eager slice per chunk costs a slow dispatch each (5x
# vmap's time on the MLP benchmark), and a dynamic_slice inside the step slows XLA:CPU's dot
# down (7.6x on the outer product); the price is a copy of the mapped inputs, held for the call.
_split_jit = jax.jit(_split, static_argnums=(1, 2))


def split_chunks(mapped: list, ranges: list, axes: tuple) -> list:
    """Chunks of the mapped leaves: numpy leaves as views, jax leaves by one jitted split."""
    on_device = [i for i, x in enumerate(mapped) if not isinstance(x, np.ndarray)]
    if len(on_device) == len(mapped):  # every leaf on the device: the split is the answer
        return _split_jit(mapped, tuple(ranges), tuple(axes))
    split = (
        _split_jit([mapped[i] for i in on_device], tuple(ranges), tuple(axes[i] for i in on_device))
        if on_device
        else []
    )
    chunks = []
    for c, (a, b) in enumerate(ranges):
        leaves = [
            x[(slice(None),) * ax + (slice(a, b),)] if isinstance(x, np.ndarray) else None
            for x, ax in zip(mapped, axes, strict=True)
        ]
        for j, i in enumerate(on_device):
            leaves[i] = split[c][j]
        chunks.append(leaves)
    return chunks


def chunk_step(fn: Callable, out_axes: Any, sp: Split) -> Callable:
    """``step(chunk, shared)``: ``jax.vmap`` of ``fn`` over one chunk, jitted (compiled per shape)."""

    def step(chunk: list, shared: list) -> Any:
        def item(xs: Any) -> Any:
            return sp.call(fn, list(xs), shared)

        return jax.vmap(item, in_axes=(list(sp.axes),), out_axes=out_axes)(chunk)

    return jax.jit(step)


def bounds(n: int, k: int) -> list[tuple[int, int]]:
    """The item ranges of the chunks: full chunks of ``k``, then the remainder.

    Example:
      >>> bounds(10, 4)
      [(0, 4), (4, 8), (8, 10)]
    """
    return [(a, min(a + k, n)) for a in range(0, n, k)]


def host_program(fn: Callable, k: int, out_axes: Any, sp: Split) -> Callable:
    """``program(mapped, shared)``: the host loop over chunks of ``k`` items."""
    step = chunk_step(fn, out_axes, sp)
    labels = [sp.res.leaves[i].label for i in (*sp.mapped, *sp.shared)]
    # what only depends on the batch size or the output's structure is worked out once: this
    # Python runs while the first chunks compute, so on a 2-core CPU it slows them down
    ranges: dict[int, list] = {}
    out_layout: dict[Any, tuple] = {}

    def program(mapped: list, shared: list) -> Any:
        _refuse_tracers(mapped, shared, labels)
        n = mapped[0].shape[sp.axes[0]]
        if n <= k:
            return step(mapped, shared)  # one chunk: no slices, no concatenation
        if n not in ranges:
            ranges[n] = bounds(n, k)
        outs = [step(chunk, shared) for chunk in split_chunks(mapped, ranges[n], sp.axes)]
        leaves, treedef = jax.tree_util.tree_flatten(outs[0])
        if treedef not in out_layout:
            out_layout[treedef] = tuple(out_axis_per_leaf(outs[0], out_axes)[1])
        per = out_layout[treedef]
        columns = [leaves, *(jax.tree_util.tree_leaves(o) for o in outs[1:])]
        parts = [list(chunk_leaves) for chunk_leaves in zip(*columns, strict=True)]
        return jax.tree_util.tree_unflatten(treedef, _concat_jit(parts, per))

    program.step = step  # type: ignore[attr-defined]
    return program


@dataclass(frozen=True)
class HostPlan(Rows):
    """What strategy ``"host"`` does for one call, counted and planned, before it runs."""

    items: int
    chunk: int
    full_chunks: int
    remainder: int
    programs: int
    dispatches: int
    full_step: MemoryEstimate | None
    remainder_step: MemoryEstimate | None
    input_copy_bytes: int
    chunk_output_bytes: int
    argument_bytes: int = 0
    output_bytes: int = 0

    @property
    def planned_bytes(self) -> int:
        """What one call holds at most: its arguments, its output and :attr:`extra_bytes`."""
        return self.argument_bytes + self.output_bytes + self.extra_bytes

    @property
    def temp_bytes(self) -> int:
        """The largest temp memory of the step programs (XLA plans each one)."""
        return max(m.temp_bytes for m in (self.full_step, self.remainder_step) if m is not None)

    @property
    def held_bytes(self) -> int:
        """Held beyond the inputs at the concatenation: input chunks, chunk outputs, the output."""
        several = self.dispatches > 1
        return self.input_copy_bytes + self.chunk_output_bytes * (2 if several else 1)

    @property
    def extra_bytes(self) -> int:
        """What one call holds beyond vmap's own plan (inputs + output + temp), at most."""
        several = self.dispatches > 1
        return self.temp_bytes + self.input_copy_bytes + (self.chunk_output_bytes if several else 0)

    def _rows(self) -> list[tuple[str, str]]:
        return [
            ("items, chunk", f"{self.items} items in chunks of {self.chunk}"),
            (
                "chunks",
                f"{self.full_chunks} full + {'1 remainder of ' + str(self.remainder) if self.remainder else 'no remainder'}",
            ),
            ("programs compiled", str(self.programs)),
            ("dispatches per call", str(self.dispatches)),
            ("planned temp per step", format_bytes(self.temp_bytes)),
            ("copy of the inputs, in chunks", format_bytes(self.input_copy_bytes)),
            ("chunk outputs, until concatenated", format_bytes(self.chunk_output_bytes)),
            ("beyond vmap's plan (temp + copies + chunk outputs)", format_bytes(self.extra_bytes)),
            (
                "planned for the call (arguments + output + the above)",
                format_bytes(self.planned_bytes),
            ),
        ]

    _header = ("", "strategy='host'")
    _inline = True

    def _title(self) -> str:
        return "compiled memory analysis (XLA) per step"


def plan_call(program: Callable, sp: Split, mapped: list, shared: list, n: int, k: int) -> HostPlan:
    """Compiles (does not run) the step programs of one call and counts its dispatches."""
    chunks = bounds(n, k)
    full, rest = divmod(n, k)

    def estimate(a: int, b: int) -> MemoryEstimate:
        chunk = [
            jax.ShapeDtypeStruct((*x.shape[:ax], b - a, *x.shape[ax + 1 :]), x.dtype)
            for x, ax in zip(mapped, sp.axes, strict=True)
        ]
        compiled = program.step.lower(chunk, shared).compile()
        return estimate_from_compiled(compiled, "host step")

    first = estimate(*chunks[0])
    last = estimate(*chunks[-1]) if rest and full else None
    several = len(chunks) > 1
    slices = 1 if several and any(not isinstance(x, np.ndarray) for x in mapped) else 0
    copies = sum(_nbytes(x) for x in mapped if not isinstance(x, np.ndarray)) if slices else 0
    concat = 1 if several else 0
    chunk_outputs = first.output_bytes * full + (last.output_bytes if last is not None else 0)
    if not full:
        chunk_outputs = first.output_bytes
    return HostPlan(
        items=n,
        chunk=k,
        full_chunks=full,
        remainder=rest,
        programs=1 + (last is not None),
        dispatches=slices + len(chunks) + concat,
        full_step=first if full else None,
        remainder_step=last if last is not None else (None if full else first),
        input_copy_bytes=copies,
        chunk_output_bytes=chunk_outputs,
        argument_bytes=sum(_nbytes(x) for x in [*mapped, *jax.tree_util.tree_leaves(shared)]),
        output_bytes=chunk_outputs,  # the concatenation of the chunk outputs
    )


def _nbytes(x: Any) -> int:
    """Bytes of an array or a ``jax.ShapeDtypeStruct`` (plans work from shapes alone).

    A Python value passed through unmapped (an int, a function) holds no device memory: 0.
    """
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return int(np.prod(x.shape, dtype=np.int64)) * np.dtype(x.dtype).itemsize
    return 0
