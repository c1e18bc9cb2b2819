"""The candidates the advisor measures: one way to batch the user's function each.

A :class:`Candidate` is what runs (``run(*args)``: a module-level function, so it
travels to the observing child process by reference, the user's function by
value), what XLA planned for it, and the plain JAX code that does the same.
Dense input: ``vmap``, ``lax.map`` with ``batch_size`` (``"chunked"``) at a few
chunk sizes, host chunks. Ragged input (:class:`batchlab.Ragged`): pad to the
longest item, optimal length buckets, and packing when a packed function is given.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np

from batchlab.batching.strategies import batch
from batchlab.ragged.bucketing import bucket_batches
from batchlab.ragged.packing import pack
from batchlab.runs.planning import batch_planner, compile_program, spec_of, unjit


class Candidate(NamedTuple):
    """One way to batch: its label, what runs, XLA's plan, and the code to paste."""

    label: str
    strategy: str
    chunk_size: int | None
    run: Runner
    args: tuple
    planned_bytes: int
    code: str
    items: int


class Runner:
    """``runner(*args)`` runs one candidate's whole batch; its program is built on the first call.

    Pickled (to the observing child process) without the built program, which the
    child builds again: the user's function travels by value, the kit by reference.
    """

    def __init__(
        self,
        kind: str,
        fn: Callable,
        strategy: str | None = None,
        chunk_size: int | None = None,
        in_axes: Any = 0,
    ):
        self.kind, self.fn, self.strategy = kind, fn, strategy
        self.chunk_size, self.in_axes = chunk_size, in_axes
        self._program: Callable | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_program": None}

    def _build(self) -> Callable:
        if self.kind == "dense":
            return batch(
                self.fn, strategy=self.strategy, chunk_size=self.chunk_size, in_axes=self.in_axes
            )
        if self.kind == "padded":  # one jitted vmap(fn) call per batch, as an epoch runs
            step = jax.jit(jax.vmap(self.fn))
            return lambda batches: [step(v, m) for v, m in batches]
        return jax.jit(self.fn, static_argnums=2)  # packed: (values, segment_ids, num_segments)

    def __call__(self, *args: Any) -> Any:
        if self._program is None:
            self._program = self._build()
        return self._program(*args)


def fn_name(fn: Any) -> str:
    name = getattr(fn, "__name__", None)
    return name if isinstance(name, str) and name.isidentifier() and name != "<lambda>" else "fn"


def _axes_text(in_axes: Any) -> str:
    return "" if in_axes == 0 else f", in_axes={in_axes!r}"


def dense_code(name: str, strategy: str, k: int | None, in_axes: Any, n_args: int) -> str:
    """Plain JAX for one dense candidate (``xs`` the batch; shared arguments by name)."""
    if isinstance(in_axes, tuple):
        params = [f"x{i}" if a == 0 else f"shared{i}" for i, a in enumerate(in_axes)]
    else:
        params = ["xs"]
    call = ", ".join(params)
    if strategy == "vmap":
        return f"out = jax.jit(jax.vmap({name}{_axes_text(in_axes)}))({call})"
    if strategy == "chunked":
        if isinstance(in_axes, tuple):
            mapped = [p for p, a in zip(params, in_axes, strict=True) if a == 0]
            inner = ", ".join(
                f"m[{mapped.index(p)}]" if a == 0 else p
                for p, a in zip(params, in_axes, strict=True)
            )
            return (
                f"out = jax.jit(lambda {call}: jax.lax.map(lambda m: {name}({inner}), "
                f"({', '.join(mapped)},), batch_size={k}))({call})"
            )
        return f"out = jax.jit(lambda xs: jax.lax.map({name}, xs, batch_size={k}))(xs)"
    step = f"step = jax.jit(jax.vmap({name}{_axes_text(in_axes)}))"
    if isinstance(in_axes, tuple):
        sliced = ", ".join(
            f"{p}[i:i + {k}]" if a == 0 else p for p, a in zip(params, in_axes, strict=True)
        )
        n = params[in_axes.index(0)]
    else:
        sliced, n = f"xs[i:i + {k}]", "xs"
    return (
        f"{step}\nout = jnp.concatenate([step({sliced}) for i in range(0, len({n}), {k})])"
        "  # one output leaf; a pytree: tree_map(concatenate)"
    )


def dense_candidates(
    fn: Callable, args: tuple, in_axes: Any, batch_size: int, chunk_sizes: list[int], strategies
) -> list[Candidate]:
    """vmap, lax.map chunks (one per chunk size), host chunks (the middle chunk size)."""
    plain = unjit(fn)
    specs = tuple(jax.tree_util.tree_map(spec_of, a) for a in args)
    name = fn_name(fn)
    settings: list[tuple[str, int | None]] = []
    if "vmap" in strategies:
        settings.append(("vmap", None))
    if "chunked" in strategies:
        settings += [("chunked", k) for k in chunk_sizes]
    if "host" in strategies and chunk_sizes:
        settings.append(("host", chunk_sizes[len(chunk_sizes) // 2]))
    out = []
    for s, k in settings:
        f = batch(plain, strategy=s, chunk_size=k, in_axes=in_axes)
        planned = int(batch_planner(f)(*specs))
        label = s if k is None else f"{'lax.map' if s == 'chunked' else 'host'} chunk {k}"
        out.append(
            Candidate(
                label,
                s,
                k,
                Runner("dense", plain, s, k, in_axes),
                tuple(args),
                planned,
                dense_code(name, s, k, in_axes, len(args)),
                batch_size,
            )
        )
    return out


def _batches_plan(fn: Callable, batches: list) -> int:
    """The largest batch program's plan (batches run one after another)."""
    step = jax.vmap(fn)
    shapes = {(v.shape, v.dtype.str, m.shape) for v, m in batches}
    plans = []
    for vs, vd, ms in shapes:
        v = jax.ShapeDtypeStruct(vs, np.dtype(vd))
        plans.append(compile_program(step, v, jax.ShapeDtypeStruct(ms, np.bool_)).planned)
    return max(plans)


def ragged_candidates(
    fn: Callable, data: Any, batch_size: int, n_buckets: int, packed_fn: Callable | None
) -> list[Candidate]:
    """Pad to the longest item, optimal buckets (fixed-shape batches), and packing if given."""
    plain = unjit(fn)
    name = fn_name(fn)
    longest = int(data.lengths.max())
    out = []
    for label, kw in (
        ("pad to longest", dict(boundaries=[longest])),
        (f"{n_buckets} buckets", dict(n_buckets=n_buckets)),
    ):
        bb = bucket_batches(data, batch_size=batch_size, **kw)
        batches = [(np.asarray(b.padded.values), np.asarray(b.padded.mask)) for b in bb]
        bounds = [int(x) for x in bb.boundaries]
        code = (
            f"batches = bl.bucket_batches(data, boundaries={bounds}, batch_size={batch_size})\n"
            f"step = jax.jit(jax.vmap({name}))\n"
            f"out = batches.restore([step(b.padded.values, b.padded.mask) for b in batches])"
        )
        out.append(
            Candidate(
                label,
                "pad" if len(bounds) == 1 else "buckets",
                batch_size,
                Runner("padded", plain),
                (batches,),
                _batches_plan(plain, batches),
                code,
                len(data),
            )
        )
    if packed_fn is not None:
        p = pack(data)
        args = (np.asarray(p.values), np.asarray(p.segment_ids), p.num_segments)
        program = compile_program(
            lambda v, s: unjit(packed_fn)(v, s, p.num_segments), spec_of(args[0]), spec_of(args[1])
        )
        code = (
            "p = bl.pack(data)\n"
            f"out = jax.jit({fn_name(packed_fn)}, static_argnums=2)"
            "(p.values, p.segment_ids, p.num_segments)"
        )
        out.append(
            Candidate(
                "pack",
                "pack",
                None,
                Runner("packed", unjit(packed_fn)),
                args,
                program.planned,
                code,
                len(data),
            )
        )
    return out


def per_item_fn_check(fn: Callable, item: Any) -> Any:
    """``jax.eval_shape`` of one item: fails early, with the user's own error, before any timing."""
    return jax.eval_shape(fn, *item) if isinstance(item, tuple) else jax.eval_shape(fn, item)


__all__ = ["Candidate", "Runner", "dense_candidates", "ragged_candidates"]
