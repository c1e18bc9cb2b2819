"""Bucketing by length: less padding than pad-to-max, fewer shapes than no padding; and what a
bucketed epoch costs, measured (05's explorer): padding, compilations, run time."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from batchlab._util.checks import check_positive_int
from batchlab._util.format import Rows, format_seconds
from batchlab.batching.comparison import widened
from batchlab.measuring.compiles import count_compiles
from batchlab.measuring.live import live_memory
from batchlab.measuring.plan import MemoryEstimate, estimate_from_compiled
from batchlab.measuring.timing import Measurement, autorange, sample, take_samples
from batchlab.ragged.boundaries import (
    RuleCost,
    check_boundaries,
    lengths_of,
    optimal_boundaries,
    rule_cost,
)
from batchlab.ragged.masking import mean_pool
from batchlab.ragged.padding import Cost, Padded, as_ragged, scatter_rows

REDUCE_HINT = "Reduce over the sequence axis first, e.g. masked_sum(p.values, p.mask, axis=1)."


@dataclass(frozen=True)
class Bucket:
    """One bucket (or one batch of it): its items (``indices`` in the input) padded."""

    boundary: int
    indices: np.ndarray
    padded: Padded


@dataclass(frozen=True)
class Buckets(Cost, Rows):
    """The non-empty buckets (or fixed-shape batches) of the data; ``restore`` puts
    per-bucket results back in input order. ``waste`` counts the filler rows as padding."""

    buckets: tuple[Bucket, ...]
    boundaries: np.ndarray
    n_items: int
    true_elements: int = field(init=False)
    padded_elements: int = field(init=False)
    shapes: int = field(init=False)  # distinct array shapes: what ``jit`` compiles for, at most

    def __post_init__(self):
        padded = [b.padded for b in self.buckets]
        object.__setattr__(self, "true_elements", sum(p.true_elements for p in padded))
        object.__setattr__(self, "padded_elements", sum(p.padded_elements for p in padded))
        object.__setattr__(self, "shapes", len({p.values.shape for p in padded}))

    _header = ("boundary", "batches", "rows per batch", "items", "padding")

    def __iter__(self) -> Iterator[Bucket]:
        return iter(self.buckets)

    def __len__(self) -> int:
        return len(self.buckets)

    @property
    def filler_rows(self) -> int:
        """Fully masked rows added to fill the last batch of each bucket."""
        return sum(len(b.padded.lengths) - len(b.indices) for b in self.buckets)

    def restore(self, outputs: list[Any]) -> np.ndarray:
        """Per-bucket outputs (leading axis = the bucket's rows) -> one array in input order."""
        is_list = isinstance(outputs, (list, tuple))
        ok = is_list and len(outputs) == len(self.buckets)
        shapes = [np.shape(o) for o in outputs] if is_list else []
        for shape, b in zip(shapes, self.buckets, strict=False):
            rows = (len(b.indices), len(b.padded.lengths))
            ok = ok and shape[:1] in ((rows[0],), (rows[1],)) and shape[1:] == shapes[0][1:]
        if not ok:
            got = shapes[:8] if is_list else f"{type(outputs).__name__} {outputs!r:.40}"
            raise (ValueError if is_list else TypeError)(
                f"`outputs` must be a list of one array per bucket ({len(self)}), each with one "
                f"row per item of its bucket ({[len(b.indices) for b in self.buckets][:8]}) and "
                f"one row shape, got {got}. {REDUCE_HINT}"
            )
        pairs = zip(outputs, self.buckets, strict=True)
        stacked = np.concatenate([np.asarray(o)[: len(b.indices)] for o, b in pairs] or [[]])
        order = np.concatenate([b.indices for b in self.buckets] or [np.zeros(0, np.int64)])
        return stacked[np.argsort(order)]  # order is a permutation: row k goes to order[k]

    def map(self, fn: Callable[[Padded], Any]) -> np.ndarray:
        """``fn(padded)`` on every bucket, results in input order (one compile per shape)."""
        first = {b.padded.values.shape: k for k, b in reversed(list(enumerate(self.buckets)))}
        for k in sorted(first.values()):  # each shape once, at its first bucket
            _check_rows_follow(fn, self.buckets[k].padded, k)
        return self.restore([fn(b.padded) for b in self.buckets])

    def _rows(self) -> list[tuple]:
        rows = []
        for boundary in sorted({b.boundary for b in self.buckets}):
            group = tuple(b for b in self.buckets if b.boundary == boundary)
            sizes = " ".join(sorted({str(len(b.padded.lengths)) for b in group}, key=int))
            items = sum(len(b.indices) for b in group)
            waste = Buckets(group, self.boundaries, items).waste
            rows.append((boundary, len(group), sizes, items, f"{waste:.1%}"))
        return rows

    def _title(self) -> str:
        return (
            f"{self.n_items} items in {len(self)} batches of {self.shapes} shapes, "
            f"padding {self.waste:.1%}"
        )


def _check_rows_follow(fn: Callable, padded: Padded, k: int) -> None:
    """Refuses an ``fn`` whose output's leading axis is not the batch's rows (one row added)."""
    grown = Padded(*(np.concatenate([a, np.zeros_like(a[:1])]) for a in padded))
    try:
        out = jax.eval_shape(fn, grown)
    except Exception:  # not traceable (numpy inside): call it
        out = fn(grown)
    shape, rows = np.shape(jax.tree.leaves(out)[0]), len(padded.lengths)
    if shape[:1] != (rows + 1,):
        raise ValueError(
            f"`fn` returned shape {shape} for {rows + 1} rows (bucket {k} with one row added): "
            "its leading axis does not follow the batch's rows, so it is not one output per "
            f"item. {REDUCE_HINT}"
        )


def bucketize(seqs: Any, *, boundaries: Any = None, n_buckets: int | None = None) -> Buckets:
    """Groups items by length and pads each group (with zeros) to its bucket boundary.

    One batch per non-empty bucket, by increasing boundary.

    Args:
      seqs, boundaries, n_buckets: as in :func:`bucket_batches`.

    Returns:
      :class:`Buckets`: per non-empty bucket its ``boundary``, items' ``indices`` and ``padded``.

    Raises:
      TypeError: ``seqs`` is not a list of 1-D sequences of numbers, or ``n_buckets`` not an int.
      ValueError: both or neither of ``boundaries`` and ``n_buckets``, ``n_buckets`` below 1, or
        ``boundaries`` not positive, strictly increasing ints covering the longest item.

    Example:
      >>> bs = bucketize([[1, 2, 3], [4], [5, 6]], boundaries=[2, 4])
      >>> [(b.boundary, b.indices.tolist()) for b in bs]
      [(2, [1, 2]), (4, [0])]
      >>> bs.restore([b.padded.lengths for b in bs]).tolist()   # back in input order
      [3, 1, 2]
    """
    return bucket_batches(seqs, boundaries=boundaries, n_buckets=n_buckets)


def bucket_batches(
    seqs: Any,
    *,
    batch_size: int | None = None,
    tokens_per_batch: int | None = None,
    boundaries: Any = None,
    n_buckets: int | None = None,
    seed: int | None = None,
) -> Buckets:
    """Fixed-shape batches per bucket: every batch of a bucket is ``(rows, boundary)``.

    Args:
      seqs: 1-D sequences or a :class:`Ragged`.
      boundaries: increasing bucket upper lengths; the last must be >= the longest item.
      n_buckets: instead, this many :func:`optimal_boundaries`.
      batch_size: rows per batch, the same for every bucket.
      tokens_per_batch: instead, positions per batch: ``max(1, tokens_per_batch // boundary)``
        rows (neither: one batch per bucket, as :func:`bucketize`).
      seed: shuffle the items within each bucket and the order of the batches (an epoch, as a
        training loop sees it); ``None`` keeps input order.

    Returns:
      :class:`Buckets` with one entry per batch (and its items' ``indices``); ``restore``
      drops the filler rows.
    """
    if batch_size is not None and tokens_per_batch is not None:
        raise ValueError(
            "pass one of `batch_size` (rows per batch, e.g. 64) or `tokens_per_batch` "
            f"(positions per batch, e.g. 8192), not both; got batch_size={batch_size!r} and "
            f"tokens_per_batch={tokens_per_batch!r}."
        )
    batch_size = check_positive_int(batch_size, "batch_size", allow_none=True)
    tokens = check_positive_int(tokens_per_batch, "tokens_per_batch", allow_none=True)
    if (boundaries is None) == (n_buckets is None):
        raise ValueError(
            "pass exactly one of `boundaries` (e.g. [32, 64, 128]) or `n_buckets` (e.g. 8), "
            f"got boundaries={boundaries!r:.40} and n_buckets={n_buckets!r}."
        )
    ragged = as_ragged(seqs)
    lengths = ragged.lengths
    if n_buckets is not None:
        boundaries = optimal_boundaries(lengths, n_buckets)
    b = check_boundaries(boundaries, lengths)
    which = np.searchsorted(b, lengths)
    rng = None if seed is None else np.random.default_rng(seed)
    batches = []
    for k, boundary in enumerate(b.tolist()):
        idx = np.flatnonzero(which == k)  # the bucket's items, in input order
        if not len(idx):
            continue
        idx = idx if rng is None else rng.permutation(idx)
        n = batch_size or (max(1, tokens // boundary) if tokens else len(idx))
        for chunk in (idx[start : start + n] for start in range(0, len(idx), n)):
            filler = np.zeros(n - len(chunk), np.int64)
            starts = np.concatenate([ragged.offsets[chunk], filler])
            kept = np.concatenate([lengths[chunk], filler])
            padded = scatter_rows(ragged.flat, starts, kept, boundary, 0)
            batches.append(Bucket(boundary, chunk, padded))
    if rng is not None:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return Buckets(tuple(batches), b, len(lengths))


#: the rules that place bucket boundaries in the explorer
BOUNDARY_RULES = ("optimal", "quantile", "fixed")
#: the timing options a setting's run accepts (see :func:`batchlab.measure`)
RUN_OPTIONS = ("max_time", "repeat", "tolerance")


@dataclass(frozen=True)
class BucketPlan(RuleCost):
    """What a bucketing setting will cost before anything is compiled or run."""

    n_buckets: int

    def __repr__(self) -> str:
        return (
            f"{self.n_buckets} {self.rule} buckets: {self.ratio:.2f}x ragged, "
            f"{self.shapes} shapes to compile"
        )


@dataclass(frozen=True)
class BucketPoint(RuleCost):
    """One bucketing setting: padding, compilations (count and seconds), run time of all buckets."""

    n_buckets: int
    compiles: int
    compile_seconds: float
    measurement: Measurement
    trace_seconds: float

    def __repr__(self) -> str:
        return (
            f"BucketPoint({self.rule}, {self.n_buckets} buckets: {self.ratio:.2f}x ragged, "
            f"{self.compiles} compiles ({format_seconds(self.compile_seconds)}, "
            f"+{format_seconds(self.trace_seconds)} tracing), "
            f"run {format_seconds(self.measurement.median)} for all buckets)"
        )


def token_workload(data: Any, vocab: int, features: int, seed: int) -> tuple[Any, jax.Array]:
    """The pooling workload of 04 and 05, checked: ``(Ragged ids, (vocab, features) table)``."""
    check_positive_int(vocab, "vocab")
    check_positive_int(features, "features")
    return as_ragged(data), jax.random.normal(jax.random.key(seed), (vocab, features))


def plan_buckets(data: Any, rule: str, n_buckets: int, features: int) -> tuple[BucketPlan, Buckets]:
    """What a setting will cost, nothing compiled or timed: its plan and its buckets."""
    cost = rule_cost(lengths_of(data.lengths), rule, n_buckets)
    buckets = bucketize(data, boundaries=cost.boundaries)
    return BucketPlan(**vars(cost), n_buckets=n_buckets), buckets


def measure_buckets(
    plan: BucketPlan,
    buckets: Buckets,
    table: jax.Array,
    *,
    max_time: float = 0.3,
    repeat: int | None = None,
    tolerance: float = 0.02,
) -> BucketPoint:
    """Compiles every bucket shape once (counted), then times one jitted call per bucket."""
    arrays = [(bk.padded.values, bk.padded.mask) for bk in buckets]

    def pool(values, mask, table):  # a new function per setting: JAX caches traces and
        return mean_pool(values, mask, table)  # programs per function, so nothing is reused

    fresh = jax.jit(pool)

    def run_buckets():  # an epoch's work: one jitted call per bucket
        return [fresh(v, m, table) for v, m in arrays]

    # every compilation of `pool` is counted: one per bucket shape, ahead of time; a JAX
    # that compiled again on the first call would show twice the shapes here
    with count_compiles(match="pool") as c:
        plans = [estimate_from_compiled(fresh.lower(*a, table).compile(), "pool") for a in arrays]
        first, number = sample(run_buckets, 1), autorange(run_buckets, 0.02)
        times = take_samples(run_buckets, number, repeat, max_time, tolerance)
    note = (
        "compiled ahead of time, one program per bucket shape (compile_seconds: JAX's compile "
        "events); run = one jitted call per bucket, wall clock around jax.block_until_ready"
    )
    counted = {"compiles": c.count, "compile_seconds": c.seconds}
    meas = Measurement(
        name="pool, every bucket",
        trace_lower_seconds=0.0,
        first_call_seconds=first,
        times=tuple(times),
        number=number,
        memory=summed_plan(plans),
        live=live_memory(),
        notes=(note,),
        source="wall clock around jax.block_until_ready of the whole Python-dispatched call",
        **counted,
    )
    return BucketPoint(**vars(plan), **counted, measurement=meas, trace_seconds=c.trace_seconds)


def summed_plan(plans: list[MemoryEstimate]) -> MemoryEstimate:
    """XLA's plans of the buckets' programs, widened to the epoch."""
    if not plans:
        return MemoryEstimate(0, 0, 0, 0, 0, "no buckets", None, 0.0, jax.default_backend())
    flops = None if any(p.flops is None for p in plans) else sum(p.flops for p in plans)
    args, outs = (sum(getattr(p, k) for p in plans) for k in ("argument_bytes", "output_bytes"))
    how = "every bucket's inputs + outputs + the largest temp"
    temp = max(p.temp_bytes for p in plans)
    return widened(plans[0], "pool, every bucket", how, args, outs, temp, flops)
