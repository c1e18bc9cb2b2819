"""The bucket explorer (05): bucket count and boundaries -> padding, compilations, run time.

A setting is measured the way a bucketed epoch runs: every bucket shape is
compiled once, ahead of time (``jax.jit(f).lower(...).compile()``, counted
and timed by JAX's own compile events); then the run is one call per bucket
of the same ``jax.jit`` function (its cache holds those programs), timed as
it runs. No outer ``jit`` fuses the buckets into one program: an epoch does
not run that way. A fresh ``jax.jit`` per setting starts with an empty
cache, as in a new process, so each bucket shape compiles exactly once.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from .._dispatch_measure import measure_dispatched
from .._format import format_seconds
from ..bucketing import bucketize
from ..compiles import count_compiles
from ..masking import mean_pool
from ..measure import Measurement
from ..memory import MemoryEstimate, estimate_from_compiled
from ..padding_report import (
    STRATEGY_COLORS,
    PaddingReport,
    plot_padding_report,
    strategy_boundaries,
)
from .explorer import Explorer
from .ragged import _dropdown, _slider, timing_source, token_workload

#: the timing options a setting's run accepts (see :func:`batchlab.measure`)
RUN_OPTIONS = ("max_time", "repeat", "tolerance")
RUN_NOTE = (
    "compiled ahead of time, one program per bucket shape (compile_seconds: JAX's compile "
    "events); run = one jitted call per bucket, wall clock around jax.block_until_ready"
)


@dataclass(frozen=True)
class BucketPoint:
    """One bucketing setting: padding, compilations (count and seconds), run time of all buckets.

    ``largest_bytes`` is the biggest gathered ``(items, boundary, features)``
    float32 array of one bucket: what must stream through memory.
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

    @property
    def ratio(self) -> float:
        return self.padded_elements / self.true_elements

    def __repr__(self) -> str:
        return (
            f"BucketPoint({self.strategy}, {self.n_buckets} buckets: {self.ratio:.2f}x ragged, "
            f"{self.compiles} compiles ({format_seconds(self.compile_seconds)}), "
            f"run {format_seconds(self.measurement.median)} for all buckets)"
        )


BUCKET_STRATEGIES = ("optimal", "quantile", "fixed")


class BucketExplorer(Explorer):
    """Bucket-count slider (+ strategy) -> padding, compilations, run time of the whole dataset.

    Example:
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
        super().__init__(
            self._compute_point,
            {"strategy": strategy, "n_buckets": self.bucket_counts[0]},
            controls={
                "strategy": _dropdown(BUCKET_STRATEGIES, "boundaries"),
                "n_buckets": _slider(self.bucket_counts, "buckets"),
            },
            draw=_draw_buckets,
            describe=repr,
            title=title,
        )
        self.update()

    def _compute_point(self, strategy: str, n_buckets: int) -> BucketPoint:
        b = strategy_boundaries(self.data.lengths, strategy, n_buckets=n_buckets)
        buckets = bucketize(self.data, boundaries=b)
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
        largest = max((v.size for v, _ in arrays), default=0) * self.features * 4
        return BucketPoint(
            strategy,
            n_buckets,
            tuple(int(x) for x in b),
            len(buckets),
            c.count,
            c.seconds,
            buckets.padded_elements,
            buckets.true_elements,
            int(largest),
            meas,
        )

    @property
    def measured(self) -> list[BucketPoint]:
        return list(self.cache.values())


def _draw_buckets(ex: BucketExplorer):
    from matplotlib.patches import Patch

    from ..plots import _new_figure

    fig, (ax_h, ax_t) = _new_figure(2, width=5.6, height=4.2)
    p = ex.result
    plot_padding_report(PaddingReport(ex.data.lengths, ()), axes=ax_h)
    color = STRATEGY_COLORS.get(p.strategy, "k")
    lo = max(int(ex.data.lengths.min()), 1) if len(ex.data) else 1
    edges = [lo * 0.9, *p.boundaries]
    for k in range(len(p.boundaries)):
        ax_h.axvspan(edges[k], edges[k + 1], color=color, alpha=0.22 if k % 2 else 0.08, lw=0)
    handles, _ = ax_h.get_legend_handles_labels()
    ax_h.legend(
        handles=[*handles, Patch(color=color, alpha=0.3, label=f"{p.strategy} buckets")],
        fontsize=9,
        loc="upper right",
    )
    ax_h.set_title(f"{p.ratio:.2f}x ragged, {p.compiles} compiles", fontsize=11)
    for strategy in BUCKET_STRATEGIES:
        pts = sorted((q for q in ex.measured if q.strategy == strategy), key=lambda q: q.n_buckets)
        if not pts:
            continue
        c = STRATEGY_COLORS.get(strategy, "k")
        k = [q.n_buckets for q in pts]
        med = np.array([q.measurement.median for q in pts]) * 1e3
        lo_err = med - np.array([q.measurement.min for q in pts]) * 1e3
        hi_err = np.array([q.measurement.max for q in pts]) * 1e3 - med
        ax_t.errorbar(
            k,
            med,
            yerr=[lo_err, hi_err],
            fmt="o-",
            color=c,
            capsize=3,
            label=f"{strategy}: run, all buckets (median, min..max)",
        )
        ax_t.plot(
            k,
            [q.compile_seconds * 1e3 for q in pts],
            "s--",
            color=c,
            alpha=0.6,
            label=f"{strategy}: compile, all buckets",
        )
    ax_t.plot(
        [p.n_buckets],
        [p.measurement.median * 1e3],
        "o",
        ms=14,
        mfc="none",
        mec="black",
        mew=2,
        label="current setting",
    )
    ax_t.set_xscale("log", base=2)
    ax_t.set_xticks(ex.bucket_counts, [str(k) for k in ex.bucket_counts])
    ax_t.set_xlabel("buckets (= compilations; log scale)")
    ax_t.set_ylabel("ms (log scale)")
    ax_t.set_yscale("log")
    ax_t.set_title(f"run vs compile time; {timing_source()}", fontsize=10)
    ax_t.grid(True, alpha=0.3, which="both")
    # below the panel: inside it would cover the run points at the low bucket counts
    ax_t.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    return fig


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
