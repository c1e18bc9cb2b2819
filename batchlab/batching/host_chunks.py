"""Strategy ``"host"``: ``jax.jit(jax.vmap(fn))`` per chunk, dispatched from Python, joined."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from batchlab._util.format import Rows, format_bytes
from batchlab.measuring.plan import MemoryEstimate, estimate_from_compiled


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
    leaves = [
        x for x in jax.tree_util.tree_leaves(tree) if hasattr(x, "shape") and hasattr(x, "dtype")
    ]
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
        argument_bytes=nbytes([mapped, shared]),
    )
