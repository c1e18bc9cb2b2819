"""The bucket explorer (05): bucket count and boundaries -> padding, compilations, run time.

A setting is measured the way a bucketed epoch runs: every bucket shape is
compiled once, ahead of time (``jax.jit(f).lower(...).compile()``, counted
and timed by JAX's own compile events); then the run is one call per bucket
of the same ``jax.jit`` function (its cache holds those programs), timed as
it runs. No outer ``jit`` fuses the buckets into one program: an epoch does
not run that way. A fresh ``jax.jit`` per setting starts with an empty
cache, as in a new process, so each bucket shape compiles exactly once.

A new setting is answered in two steps: its plan (boundaries, padding, how
many shapes it will compile; nothing compiled or timed) is drawn at once,
then the measurement replaces it. With 16 buckets the second step is mostly
JAX tracing and XLA compiling 16 programs: that cost is what 05 teaches.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import jax

from .._dispatch_measure import measure_dispatched
from .._format import format_seconds
from ..bucketing import bucketize
from ..compiles import count_compiles
from ..masking import mean_pool
from ..measure import Measurement
from ..memory import MemoryEstimate, estimate_from_compiled
from ..padding_report import (
    strategy_boundaries,
)
from .bucket_plot import draw_buckets
from .explorer import Explorer
from .ragged import _dropdown, _slider, token_workload

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
    """What a bucketing setting will cost before anything is compiled or run.

    ``shapes`` is the number of distinct bucket shapes: the compilations a
    fresh ``jit`` will need (the measurement then counts them).
    """

    strategy: str
    n_buckets: int
    boundaries: tuple[int, ...]
    shapes: int
    padded_elements: int
    true_elements: int
    largest_bytes: int

    def __repr__(self) -> str:
        return (
            f"{self.n_buckets} {self.strategy} buckets: {self.ratio:.2f}x ragged, "
            f"{self.shapes} shapes to compile"
        )


@dataclass(frozen=True)
class BucketPoint(_Padding):
    """One bucketing setting: padding, compilations (count and seconds), run time of all buckets.

    ``largest_bytes`` is the biggest gathered ``(items, boundary, features)``
    float32 array of one bucket: what must stream through memory.
    ``trace_seconds``: JAX tracing and lowering the new shapes (before XLA's
    ``compile_seconds``); a new shape pays both.
    """

    strategy: str
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
            f"BucketPoint({self.strategy}, {self.n_buckets} buckets: {self.ratio:.2f}x ragged, "
            f"{self.compiles} compiles ({format_seconds(self.compile_seconds)}, "
            f"+{format_seconds(self.trace_seconds)} tracing), "
            f"run {format_seconds(self.measurement.median)} for all buckets)"
        )


BUCKET_STRATEGIES = ("optimal", "quantile", "fixed")


class BucketExplorer(Explorer):
    """Bucket-count slider (+ strategy) -> padding, compilations, run time of the whole dataset.

    Example:
      >>> import numpy as np
      >>> from batchlab import Ragged
      >>> data = Ragged.from_lengths(np.arange(40) % 5, [3, 9, 1, 12, 15])
      >>> ex = BucketExplorer(data, vocab=5, features=4, bucket_counts=(1, 2), repeat=3)
      >>> pt = ex.update(n_buckets=2)
      >>> pt.shapes, pt.compiles, pt.compile_seconds > 0
      (2, 2, True)
    """

    def __init__(
        self,
        data: Any,
        *,
        vocab: int,
        features: int = 16,
        bucket_counts: tuple[int, ...] = (1, 2, 4, 8),
        strategy: str = "optimal",
        seed: int = 0,
        title: str = "Bucket explorer",
        **measure_options: Any,
    ):
        """``measure_options``: ``max_time``, ``repeat`` or ``tolerance`` for each setting's run."""
        from .._checks import check_positive_ints

        self.data, self.table = token_workload(data, vocab, features, seed)
        self.bucket_counts = tuple(check_positive_ints(bucket_counts, "bucket_counts"))
        self.choices = {"n_buckets": self.bucket_counts}
        self.features = features
        unknown = sorted(set(measure_options) - set(RUN_OPTIONS))
        if unknown:
            raise TypeError(
                f"BucketExplorer got unexpected option(s) {unknown}: a setting's run accepts "
                f"{', '.join(RUN_OPTIONS)} (as in batchlab.measure)."
            )
        self.run_options = measure_options
        self._last_bucketed: tuple = (
            None,
        )  # (setting, boundaries, buckets): the preview's, reused
        super().__init__(
            self._compute_point,
            {"strategy": strategy, "n_buckets": self.bucket_counts[0]},
            controls={
                "strategy": _dropdown(BUCKET_STRATEGIES, "boundaries"),
                "n_buckets": _slider(self.bucket_counts, "buckets"),
            },
            draw=draw_buckets,
            describe=repr,
            title=title,
            preview=self._plan,
            describe_preview=repr,
        )
        self.update()

    def _bucketed(self, strategy: str, n_buckets: int):
        key = (strategy, n_buckets)
        if self._last_bucketed[0] != key:
            b = strategy_boundaries(self.data.lengths, strategy, n_buckets=n_buckets)
            self._last_bucketed = (key, b, bucketize(self.data, boundaries=b))
        return self._last_bucketed[1:]

    def _plan(self, strategy: str, n_buckets: int) -> BucketPlan:
        b, buckets = self._bucketed(strategy, n_buckets)
        largest = max((bk.padded.values.size for bk in buckets), default=0) * self.features * 4
        return BucketPlan(
            strategy,
            n_buckets,
            tuple(int(x) for x in b),
            len(buckets),
            buckets.padded_elements,
            buckets.true_elements,
            int(largest),
        )

    def _compute_point(self, strategy: str, n_buckets: int) -> BucketPoint:
        plan = self._plan(strategy, n_buckets)
        _, buckets = self._bucketed(strategy, n_buckets)
        arrays = [(bk.padded.values, bk.padded.mask) for bk in buckets]

        def pool(values, mask, table):  # a new function per setting: JAX caches traces and
            return mean_pool(values, mask, table)  # programs per function, so nothing is reused

        fresh = jax.jit(pool)

        def run_buckets(arrays, table):  # an epoch's work: one jitted call per bucket
            return [fresh(v, m, table) for v, m in arrays]

        # every compilation of `pool` is counted: one per bucket shape, ahead of time; a JAX
        # that compiled again on the first call would show twice the shapes here
        with count_compiles(match="pool") as c:
            programs = [fresh.lower(v, m, self.table).compile() for v, m in arrays]
            plans = [estimate_from_compiled(p, "pool") for p in programs]
            meas, _ = measure_dispatched(
                run_buckets,
                (arrays, self.table),
                lambda out: _summed_plan(plans),
                **self.run_options,
            )
        meas = dataclasses.replace(
            meas,
            name="pool, every bucket",
            compiles=c.count,
            compile_seconds=c.seconds,
            notes=(RUN_NOTE,),
        )
        return BucketPoint(
            plan.strategy,
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

    @property
    def measured(self) -> list[BucketPoint]:
        return list(self.cache.values())


def _summed_plan(plans: list[MemoryEstimate]) -> MemoryEstimate:
    """XLA's plans of the buckets' programs, widened to the epoch.

    Every bucket's inputs and outputs are held for the whole epoch; one
    program's temp block is live at a time, so the largest one counts.
    ``flops`` and ``bytes_accessed`` add up over the buckets.
    """
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
