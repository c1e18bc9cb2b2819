"""Measuring a bucketed epoch (05): boundaries -> padding, compilations, run time."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax

from batchlab._util.checks import check_positive_int
from batchlab._util.format import format_seconds
from batchlab.batching.dispatch import measure_dispatched
from batchlab.measuring.compiles import count_compiles
from batchlab.measuring.measurement import Measurement
from batchlab.measuring.memory import MemoryEstimate, estimate_from_compiled
from batchlab.ragged.boundaries import RuleCost, lengths_of, rule_cost
from batchlab.ragged.bucketing import Buckets, bucketize
from batchlab.ragged.masking import mean_pool
from batchlab.ragged.padding import as_ragged

#: the rules that place bucket boundaries in the explorer
BOUNDARY_RULES = ("optimal", "quantile", "fixed")
#: the timing options a setting's run accepts (see :func:`batchlab.measure`)
RUN_OPTIONS = ("max_time", "repeat", "tolerance")


@dataclasses.dataclass(frozen=True)
class BucketPlan(RuleCost):
    """What a bucketing setting will cost before anything is compiled or run."""

    n_buckets: int

    def __repr__(self) -> str:
        return (
            f"{self.n_buckets} {self.rule} buckets: {self.ratio:.2f}x ragged, "
            f"{self.shapes} shapes to compile"
        )


@dataclasses.dataclass(frozen=True)
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
    """The pooling workload of 04 and 05, checked: ``(Ragged token ids, (vocab, features) table)``."""
    check_positive_int(vocab, "vocab")
    check_positive_int(features, "features")
    return as_ragged(data), jax.random.normal(jax.random.key(seed), (vocab, features))


def plan_buckets(data: Any, rule: str, n_buckets: int, features: int) -> tuple[BucketPlan, Buckets]:
    """What a setting will cost, nothing compiled or timed: its plan and its buckets."""
    cost = rule_cost(lengths_of(data.lengths), rule, n_buckets)
    return BucketPlan(**vars(cost), n_buckets=n_buckets), bucketize(
        data, boundaries=cost.boundaries
    )


def measure_buckets(
    plan: BucketPlan, buckets: Buckets, table: jax.Array, **run_options: Any
) -> BucketPoint:
    """Compiles every bucket shape once (counted), then times one jitted call per bucket."""
    arrays = [(bk.padded.values, bk.padded.mask) for bk in buckets]

    def pool(values, mask, table):  # a new function per setting: JAX caches traces and
        return mean_pool(values, mask, table)  # programs per function, so nothing is reused

    fresh = jax.jit(pool)

    def run_buckets(arrays, table):  # an epoch's work: one jitted call per bucket
        return [fresh(v, m, table) for v, m in arrays]

    # every compilation of `pool` is counted: one per bucket shape, ahead of time; a JAX
    # that compiled again on the first call would show twice the shapes here
    with count_compiles(match="pool") as c:
        plans = [estimate_from_compiled(fresh.lower(*a, table).compile(), "pool") for a in arrays]
        meas, _ = measure_dispatched(
            run_buckets, (arrays, table), lambda out: summed_plan(plans), **run_options
        )
    note = (
        "compiled ahead of time, one program per bucket shape (compile_seconds: JAX's compile "
        "events); run = one jitted call per bucket, wall clock around jax.block_until_ready"
    )
    counted = {"compiles": c.count, "compile_seconds": c.seconds}
    meas = dataclasses.replace(meas, name="pool, every bucket", notes=(note,), **counted)
    return BucketPoint(**vars(plan), **counted, measurement=meas, trace_seconds=c.trace_seconds)


def summed_plan(plans: list[MemoryEstimate]) -> MemoryEstimate:
    """XLA's plans of the buckets' programs, widened to the epoch."""
    if not plans:
        return MemoryEstimate(0, 0, 0, 0, 0, "no buckets", None, 0.0, jax.default_backend())
    flops = [p.flops for p in plans]
    sums = {k: sum(getattr(p, k) for p in plans) for k in ("argument_bytes", "output_bytes")}
    sums["flops"] = None if None in flops else sum(flops)
    sums.update(temp_bytes=max(p.temp_bytes for p in plans), alias_bytes=0, xla_peak_bytes=None)
    sums["planned_bytes"] = sums["argument_bytes"] + sums["output_bytes"] + sums["temp_bytes"]
    sums["planned_from"] = "every bucket's inputs + outputs + the largest temp"
    return dataclasses.replace(plans[0], **sums, name="pool, every bucket")
