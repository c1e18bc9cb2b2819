"""Measuring a bucketed epoch (05): boundaries -> padding, compilations, run time."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import jax

from batchlab._util.checks import check_positive_int
from batchlab._util.format import format_seconds
from batchlab.batching.dispatch import measure_dispatched
from batchlab.measuring.compiles import count_compiles
from batchlab.measuring.measurement import Measurement
from batchlab.measuring.memory import MemoryEstimate, estimate_from_compiled
from batchlab.ragged.bucketing import Buckets, bucketize
from batchlab.ragged.masking import mean_pool
from batchlab.ragged.padding import as_ragged
from batchlab.ragged.report import rule_boundaries

#: the rules that place bucket boundaries in the explorer (``rule_boundaries``)
BOUNDARY_RULES = ("optimal", "quantile", "fixed")

#: the timing options a setting's run accepts (see :func:`batchlab.measure`)
RUN_OPTIONS = ("max_time", "repeat", "tolerance")
RUN_NOTE = (
    "compiled ahead of time, one program per bucket shape (compile_seconds: JAX's compile "
    "events); run = one jitted call per bucket, wall clock around jax.block_until_ready"
)


class _Padding:
    """``ratio``: padded positions over the ragged minimum (both counted, never timed)."""

    padded_elements: int
    true_elements: int

    @property
    def ratio(self) -> float:
        return self.padded_elements / self.true_elements


@dataclass(frozen=True)
class BucketPlan(_Padding):
    """What a bucketing setting will cost before anything is compiled or run."""

    rule: str
    n_buckets: int
    boundaries: tuple[int, ...]
    shapes: int
    padded_elements: int
    true_elements: int
    largest_bytes: int

    def __repr__(self) -> str:
        return (
            f"{self.n_buckets} {self.rule} buckets: {self.ratio:.2f}x ragged, "
            f"{self.shapes} shapes to compile"
        )


@dataclass(frozen=True)
class BucketPoint(_Padding):
    """One bucketing setting: padding, compilations (count and seconds), run time of all buckets."""

    rule: str
    n_buckets: int
    boundaries: tuple[int, ...]
    shapes: int
    compiles: int
    compile_seconds: float
    padded_elements: int
    true_elements: int
    largest_bytes: int
    measurement: Measurement
    trace_seconds: float = 0.0

    def __repr__(self) -> str:
        return (
            f"BucketPoint({self.rule}, {self.n_buckets} buckets: {self.ratio:.2f}x ragged, "
            f"{self.compiles} compiles ({format_seconds(self.compile_seconds)}, "
            f"+{format_seconds(self.trace_seconds)} tracing), "
            f"run {format_seconds(self.measurement.median)} for all buckets)"
        )


def token_workload(data: Any, vocab: int, features: int, seed: int) -> tuple[Any, jax.Array]:
    """The pooling workload of 04 and 05, checked: ``(Ragged token ids, (vocab, features) table)``."""
    check_positive_int(vocab, "vocab")
    check_positive_int(features, "features")
    return as_ragged(data), jax.random.normal(jax.random.key(seed), (vocab, features))


def plan_buckets(data: Any, rule: str, n_buckets: int, features: int) -> tuple[BucketPlan, Buckets]:
    """What a setting will cost, nothing compiled or timed: its plan and its buckets."""
    b = rule_boundaries(data.lengths, rule, n_buckets=n_buckets)
    buckets = bucketize(data, boundaries=b)
    largest = max((bk.padded.values.size for bk in buckets), default=0) * features * 4
    plan = BucketPlan(
        rule,
        n_buckets,
        tuple(int(x) for x in b),
        len(buckets),
        buckets.padded_elements,
        buckets.true_elements,
        int(largest),
    )
    return plan, buckets


def measure_buckets(
    plan: BucketPlan, buckets: Buckets, table: jax.Array, **run_options: Any
) -> BucketPoint:
    """Compiles every bucket shape once (counted), then times one jitted call per bucket.

    ``run_options``: ``max_time``, ``repeat`` or ``tolerance`` (as in :func:`batchlab.measure`).
    """
    unknown = sorted(set(run_options) - set(RUN_OPTIONS))
    if unknown:
        raise TypeError(
            f"measure_buckets got unexpected option(s) {unknown}: a setting's run accepts "
            f"{', '.join(RUN_OPTIONS)} (as in batchlab.measure)."
        )
    arrays = [(bk.padded.values, bk.padded.mask) for bk in buckets]

    def pool(values, mask, table):  # a new function per setting: JAX caches traces and
        return mean_pool(values, mask, table)  # programs per function, so nothing is reused

    fresh = jax.jit(pool)

    def run_buckets(arrays, table):  # an epoch's work: one jitted call per bucket
        return [fresh(v, m, table) for v, m in arrays]

    # every compilation of `pool` is counted: one per bucket shape, ahead of time; a JAX
    # that compiled again on the first call would show twice the shapes here
    with count_compiles(match="pool") as c:
        programs = [fresh.lower(v, m, table).compile() for v, m in arrays]
        plans = [estimate_from_compiled(p, "pool") for p in programs]
        meas, _ = measure_dispatched(
            run_buckets,
            (arrays, table),
            lambda out: summed_plan(plans),
            **run_options,
        )
    meas = dataclasses.replace(
        meas,
        name="pool, every bucket",
        compiles=c.count,
        compile_seconds=c.seconds,
        notes=(RUN_NOTE,),
    )
    return BucketPoint(
        plan.rule,
        plan.n_buckets,
        plan.boundaries,
        plan.shapes,
        c.count,
        c.seconds,
        plan.padded_elements,
        plan.true_elements,
        plan.largest_bytes,
        meas,
        c.trace_seconds,
    )


def summed_plan(plans: list[MemoryEstimate]) -> MemoryEstimate:
    """XLA's plans of the buckets' programs, widened to the epoch."""
    if not plans:
        return MemoryEstimate(0, 0, 0, 0, 0, 0, "no buckets", None, 0.0, 0.0, jax.default_backend())

    def total(name: str) -> float | None:
        values = [getattr(p, name) for p in plans]
        return None if any(v is None for v in values) else sum(values)

    arg, out = int(total("argument_bytes")), int(total("output_bytes"))
    temp = max(p.temp_bytes for p in plans)
    return dataclasses.replace(
        plans[0],
        argument_bytes=arg,
        output_bytes=out,
        temp_bytes=temp,
        alias_bytes=0,
        generated_code_bytes=int(total("generated_code_bytes")),
        planned_bytes=arg + out + temp,
        planned_from="every bucket's inputs + outputs + the largest temp",
        xla_peak_bytes=None,
        flops=total("flops"),
        bytes_accessed=total("bytes_accessed"),
        name="pool, every bucket",
    )
