"""Chunks dispatched from Python: one jitted ``vmap`` per chunk (strategy ``"host"``).

There are three ways to run a batch in chunks of ``k`` items in JAX:

1. **in-program loop** (``"map"`` / ``"chunked"``): ``jax.lax.map`` over
   chunks inside one XLA program. One dispatch; temp memory of one chunk.
   On XLA:CPU a dot inside a loop body can run several times slower than
   the same dot at the top level of a program.
2. **in-program unrolled**: a Python loop under ``jax.jit`` unrolls into one
   copy of the chunk's work per chunk; compile time grows with the chunks.
3. **host loop** (``"host"``, this module): a Python loop calls ONE jitted
   ``vmap`` of ``fn`` per chunk, then concatenates, in plain code::

       step = jax.jit(jax.vmap(fn))
       outs = [step(xs[i:i + k]) for i in range(0, len(xs), k)]
       out = jnp.concatenate(outs)

   Each chunk is a top-level program, so it runs at ``vmap`` speed, and the
   temp memory is one chunk's. Its costs: one dispatch per chunk (plus one
   slice per mapped input per chunk and one concatenation), two programs
   compiled (full chunks and the remainder), the chunk outputs held beside
   the concatenated output for a moment, and it cannot run inside an outer
   ``jax.jit`` (it would unroll into way 2), so it refuses tracers.

:func:`host_plan` says, for a call, how many chunks, programs and
dispatches it makes and what XLA planned for each program.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from ._batch_args import Split
from ._format import format_bytes, html_table
from ._in_program import out_axis_per_leaf
from .memory import MemoryEstimate, estimate_from_compiled


def _refuse_tracers(mapped: list, shared: list, labels: list[str]) -> None:
    for x, label in zip([*mapped, *shared], labels, strict=False):
        if isinstance(x, jax.core.Tracer):
            raise TypeError(
                f"strategy='host' dispatches one compiled program per chunk from Python, so it "
                f"cannot run while JAX traces it (`{label}` is a {type(x).__name__}: the batched "
                f"function was called inside jax.jit, grad, vmap or scan). Call it outside the "
                f"transformation, or use strategy='chunked' (the same chunks inside one program) "
                f"or strategy='map' with batch_size=."
            )


def _concat(parts: list, axes: tuple) -> list:
    """Concatenates each output leaf's chunks along its batch axis (None: the first chunk's)."""
    return [p[0] if ax is None else jnp.concatenate(p, axis=ax) for p, ax in zip(parts, axes, strict=True)]


_concat_jit = jax.jit(_concat, static_argnums=1)


def chunk_step(fn: Callable, out_axes: Any, sp: Split) -> Callable:
    """``step(chunk, shared)``: ``jax.vmap`` of ``fn`` over one chunk, jitted (compiled per shape)."""

    def step(chunk: list, shared: list) -> Any:
        def item(xs: Any) -> Any:
            return sp.call(fn, list(xs), shared)

        return jax.vmap(item, in_axes=(list(sp.axes),), out_axes=out_axes)(chunk)

    return jax.jit(step)


def bounds(n: int, k: int) -> list[tuple[int, int]]:
    """The item ranges of the chunks: full chunks of ``k``, then the remainder."""
    return [(a, min(a + k, n)) for a in range(0, n, k)]


def host_program(fn: Callable, k: int, out_axes: Any, sp: Split) -> Callable:
    """``program(mapped, shared)``: the host loop over chunks of ``k`` items."""
    step = chunk_step(fn, out_axes, sp)
    labels = [sp.res.leaves[i].label for i in (*sp.mapped, *sp.shared)]

    def program(mapped: list, shared: list) -> Any:
        _refuse_tracers(mapped, shared, labels)
        n = mapped[0].shape[sp.axes[0]]
        if n <= k:
            return step(mapped, shared)  # one chunk: no slices, no concatenation
        outs = []
        for a, b in bounds(n, k):
            chunk = [jax.lax.slice_in_dim(x, a, b, axis=ax) for x, ax in zip(mapped, sp.axes, strict=True)]
            outs.append(step(chunk, shared))
        flat, per, treedef = out_axis_per_leaf(outs[0], out_axes)
        parts = [[jax.tree_util.tree_leaves(o)[j] for o in outs] for j in range(len(flat))]
        return jax.tree_util.tree_unflatten(treedef, _concat_jit(parts, tuple(per)))

    program.step = step  # type: ignore[attr-defined]
    return program


@dataclass(frozen=True)
class HostPlan:
    """What strategy ``"host"`` does for one call, counted and planned, before it runs.

    ``dispatches`` counts the calls into compiled programs: one slice per
    mapped input per chunk (none when a single chunk covers the batch), one
    step per chunk, one concatenation. ``held_bytes`` is what sits in memory
    at the concatenation beyond the inputs: every chunk's output and the
    concatenated output (twice the output when every output is batched).
    """

    items: int
    chunk: int
    full_chunks: int
    remainder: int
    programs: int
    dispatches: int
    full_step: MemoryEstimate | None
    remainder_step: MemoryEstimate | None
    held_bytes: int

    @property
    def temp_bytes(self) -> int:
        """The largest temp memory of the step programs (XLA plans each one)."""
        return max(m.temp_bytes for m in (self.full_step, self.remainder_step) if m is not None)

    def _rows(self) -> list[tuple[str, str]]:
        return [
            ("items, chunk", f"{self.items} items in chunks of {self.chunk}"),
            ("chunks", f"{self.full_chunks} full + {'1 remainder of ' + str(self.remainder) if self.remainder else 'no remainder'}"),
            ("programs compiled", str(self.programs)),
            ("dispatches per call", str(self.dispatches)),
            ("planned temp per step", format_bytes(self.temp_bytes)),
            ("outputs held at the concatenation", format_bytes(self.held_bytes)),
        ]

    def __repr__(self) -> str:
        return "HostPlan(" + "; ".join(f"{k}: {v}" for k, v in self._rows()) + ")"

    def _repr_html_(self) -> str:
        return html_table(self._rows(), ("", "strategy='host'"), caption="compiled memory analysis (XLA) per step")


def plan_call(program: Callable, sp: Split, mapped: list, shared: list, n: int, k: int) -> HostPlan:
    """Compiles (does not run) the step programs of one call and counts its dispatches."""
    chunks = bounds(n, k)
    full, rest = divmod(n, k)

    def estimate(a: int, b: int) -> MemoryEstimate:
        chunk = [
            jax.ShapeDtypeStruct(x.shape[:ax] + (b - a,) + x.shape[ax + 1 :], x.dtype)
            for x, ax in zip(mapped, sp.axes, strict=True)
        ]
        compiled = program.step.lower(chunk, shared).compile()
        return estimate_from_compiled(compiled, "host step")

    first = estimate(*chunks[0])
    last = estimate(*chunks[-1]) if rest and full else None
    slices = len(mapped) * len(chunks) if len(chunks) > 1 else 0
    concat = 1 if len(chunks) > 1 else 0
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
        held_bytes=chunk_outputs * (2 if concat else 1),
    )
