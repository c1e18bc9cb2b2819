"""The ways to batch the user's function (:class:`Candidate`): XLA's plan (the kit's one plan
path), a zero-argument call on the measured data (the compiled program: timing it compiles
nothing again) and the plain JAX to paste."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import numpy as np

from batchlab.batching.strategies import batch
from batchlab.measuring.plan import batch_planner, compile_program, spec_of, unjit
from batchlab.ragged.bucketing import bucket_batches
from batchlab.ragged.packing import pack
from batchlab.runs.errors import is_out_of_memory
from batchlab.runs.search import NO_ROOM


class Candidate(NamedTuple):
    """One way to batch: label, kind, chunk (or tokens per batch), XLA's plan (``NO_ROOM``: its
    compile ran out of device memory; ``call`` None), a call, the code."""

    label: str
    strategy: str  # vmap, chunked, host; pad, buckets, pack
    chunk: int | None
    planned: int | float
    call: Callable[[], Any] | None
    code: str


def fn_name(fn: Any) -> str:
    name = getattr(fn, "__name__", None)
    return name if isinstance(name, str) and name.isidentifier() and name != "<lambda>" else "fn"


def chunk_sweep(n: int) -> list[int]:
    """1, 2, 4, ... below ``n`` (a chunk of ``n`` is vmap)."""
    return [1 << i for i in range(max(0, n - 1).bit_length()) if 1 << i < n]


def dense_code(name: str, strategy: str, k: int | None, in_axes: Any) -> str:
    """Plain JAX for one dense candidate (``args``: the batch, then shared arguments)."""
    axes = "" if in_axes == 0 else f", in_axes={in_axes!r}"
    if strategy == "vmap":
        return f"out = jax.jit(jax.vmap({name}{axes}))(*args)"
    if strategy == "chunked" and isinstance(in_axes, tuple):
        params = ", ".join(f"a{i}" for i in range(len(in_axes)))
        mapped = [i for i, ax in enumerate(in_axes) if ax == 0]
        inner = ", ".join(
            f"m[{mapped.index(i)}]" if ax == 0 else f"a{i}" for i, ax in enumerate(in_axes)
        )
        xs = ", ".join(f"a{i}" for i in mapped)
        return (
            f"out = jax.jit(lambda {params}: jax.lax.map(lambda m: {name}({inner}), ({xs},), "
            f"batch_size={k}))(*args)"
        )
    if strategy == "chunked":
        return f"out = jax.jit(lambda xs: jax.lax.map({name}, xs, batch_size={k}))(xs)"
    return f"out = bl.batch({name}, strategy='host', chunk_size={k}{axes})(*args)"


def dense_candidates(
    fn: Callable, args: tuple, in_axes: Any, n: int, strategies: Sequence[str]
) -> list[Candidate]:
    """vmap, lax.map at every chunk size, host chunks of at most 4 dispatches; planned at ``n``."""
    plain, name, chunks = unjit(fn), fn_name(fn), chunk_sweep(n)
    specs = tuple(jax.tree_util.tree_map(spec_of, a) for a in args)
    on_device = jax.device_put(args)
    settings = [("vmap", None)] if "vmap" in strategies else []
    settings += [("chunked", k) for k in chunks if "chunked" in strategies]
    settings += [("host", k) for k in chunks if "host" in strategies and 4 * k >= n]
    out = []
    for s, k in settings:
        f = batch(plain, strategy=s, chunk_size=k, in_axes=in_axes)
        try:
            if s == "host":  # dispatched from Python: its HostPlan, and the function itself runs
                planned, call = int(batch_planner(f)(*specs)), (lambda f=f: f(*on_device))
            else:  # the compiled program runs: timing it compiles nothing again
                program = compile_program(f, *specs)
                planned, call = int(program.planned), (lambda p=program: p(*on_device))
        except Exception as e:  # out of memory at compile time (XLA:TPU): no plan, not run
            if not is_out_of_memory(e):
                raise
            planned, call = NO_ROOM, None
        label = "vmap" if k is None else f"{'lax.map' if s == 'chunked' else 'host'} chunk {k}"
        out.append(Candidate(label, s, k, planned, call, dense_code(name, s, k, in_axes)))
    return out


def _padded_steps(fn: Callable, batches: list) -> tuple[int, Callable[[], Any]]:
    """The largest batch's plan, and one call running every batch (one program per shape)."""
    shapes = {(v.shape, m.shape): (v, m) for v, m in batches}
    programs = {
        k: compile_program(jax.vmap(fn), spec_of(v), spec_of(m)) for k, (v, m) in shapes.items()
    }
    on_device = jax.device_put(batches)
    plan = max(p.planned for p in programs.values())
    return plan, lambda: [programs[(v.shape, m.shape)](v, m) for v, m in on_device]


def pack_groups(lengths: np.ndarray, tokens: int) -> list[np.ndarray]:
    """Consecutive items grouped so that each group holds at most ``tokens`` tokens."""
    starts, total = [0], 0
    for i, n in enumerate(lengths):
        if total + n > tokens and i > starts[-1]:
            starts.append(i)
            total = 0
        total += int(n)
    return np.split(np.arange(len(lengths)), starts[1:])


def ragged_candidates(
    fn: Callable, data: Any, rows: int, packed_fn: Callable | None
) -> list[Candidate]:
    """Pad, 4 buckets of ``rows x longest`` tokens per batch, and (given ``packed_fn(values,
    segment_ids, num_segments)``) packing into those tokens."""
    plain, name = unjit(fn), fn_name(fn)
    longest = int(data.lengths.max())
    tokens = rows * longest
    out = []
    for label, s, kw in (
        ("pad to longest", "pad", dict(boundaries=[longest], batch_size=rows)),
        ("4 buckets", "buckets", dict(n_buckets=4, tokens_per_batch=tokens)),
    ):
        bb = bucket_batches(data, **kw)
        batches = [(np.asarray(b.padded.values), np.asarray(b.padded.mask)) for b in bb]
        plan, call = _padded_steps(plain, batches)
        how = f"batch_size={rows}" if s == "pad" else f"tokens_per_batch={tokens}"
        bounds = [int(x) for x in bb.boundaries]
        code = (
            f"batches = bl.bucket_batches(data, boundaries={bounds}, {how})\n"
            f"step = jax.jit(jax.vmap({name}))\n"
            "out = batches.restore([step(b.padded.values, b.padded.mask) for b in batches])"
        )
        out.append(Candidate(label, s, rows if s == "pad" else tokens, plan, call, code))
    if packed_fn is not None:
        groups = pack_groups(data.lengths, tokens)
        most = max(len(g) for g in groups)
        packs = [
            pack([data.item(int(i)) for i in g], total_length=tokens, max_items=most)
            for g in groups
        ]
        step = unjit(packed_fn)
        program = compile_program(
            lambda v, s: step(v, s, most), spec_of(packs[0].values), spec_of(packs[0].segment_ids)
        )
        on_device = jax.device_put([(p.values, p.segment_ids) for p in packs])
        code = (
            f"groups = consecutive items of at most {tokens} tokens (at most {most} items)\n"
            f"packs = [bl.pack(items, total_length={tokens}, max_items={most}) "
            f"for items in groups]\n"
            f"step = jax.jit({fn_name(packed_fn)}, static_argnums=2)\n"
            f"out = [step(p.values, p.segment_ids, {most}) for p in packs]"
        )
        call = lambda: [program(v, s) for v, s in on_device]  # noqa: E731
        out.append(Candidate("pack per batch", "pack", tokens, program.planned, call, code))
    return out
