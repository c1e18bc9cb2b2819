"""Padding strategies (04) and bucket counts (05), measured on token pooling (masked mean)."""

from __future__ import annotations

import functools
import warnings
from typing import Any, NamedTuple

import jax
import numpy as np

from batchlab._util.backend import machine_label
from batchlab._util.checks import check_positive_ints
from batchlab._util.format import format_bytes, format_seconds
from batchlab._util.plotting import log2_axis, new_figure, seconds_log_axis
from batchlab.measuring.timing import Measurement, measure
from batchlab.ragged.boundaries import RULE_COLORS, PaddingReport, plot_padding_report
from batchlab.ragged.bucketing import (
    BOUNDARY_RULES,
    RUN_OPTIONS,
    BucketPlan,
    BucketPoint,
    measure_buckets,
    plan_buckets,
    token_workload,
)
from batchlab.ragged.masking import mean_pool, mean_pool_reference
from batchlab.ragged.packing import pack, packed_mean_pool
from batchlab.ragged.padding import pad
from batchlab.widgets.controls import choice, stops_slider
from batchlab.widgets.explorer import Explorer

PAD_COLORS = {"max": "tab:red", "multiple": "tab:orange", "fixed": "tab:gray", "pack": "tab:green"}


def plot_runs(ax, ex: Explorer, kind: str, colors: dict, x: str, label: str) -> dict:
    """Run times (ms) of every point measured, one series per ``kind`` (median, min..max);
    a black ring around the current setting's (none while a preview is shown)."""
    series = {}
    for name, color in colors.items():
        by_x = {getattr(q, x): q for q in ex.cache.values() if getattr(q, kind) == name}
        if by_x:
            xs = sorted(by_x)
            series[name] = (xs, [by_x[k] for k in xs])
            m = [by_x[k].measurement for k in xs]
            lo, med, hi = 1e3 * np.array([(q.min, q.median, q.max) for q in m]).T
            style = dict(fmt="o-", color=color, capsize=3, label=label.format(name))
            ax.errorbar(xs, med, yerr=[med - lo, hi - med], **style)
    if ex.pending is None:
        at, ms = getattr(ex.result, x), ex.result.measurement.median * 1e3
        ax.plot([at], [ms], "o", ms=14, mfc="none", mec="black", mew=2, label="current setting")
    return series


class PaddingPoint(NamedTuple):
    """One padding setting, measured; ``padded_elements``: the positions computed on."""

    strategy: str
    size: int
    padded_length: int
    padded_elements: int
    waste: float
    truncated: int
    correct: float
    measurement: Measurement

    def __repr__(self) -> str:
        flops = self.measurement.memory.flops
        flops = "" if flops is None else f", {flops / 1e6:.2f} M flops"
        return (
            f"PaddingPoint({self.strategy} {self.size}: length {self.padded_length}, "
            f"padding {self.waste:.1%}, {self.truncated} items cut, {self.correct:.0%} items "
            f"correct{flops}, run {format_seconds(self.measurement.median)}, planned peak "
            f"{format_bytes(self.measurement.memory.planned_bytes)})"
        )


class PaddingExplorer(Explorer):
    """Strategy and size -> wasted compute, run time, memory and correctness, measured.

    ``max``: to the longest; ``multiple``: to a multiple of ``size``; ``fixed``: pads or *cuts*
    to ``size`` (cut items come out wrong); ``pack``: items back to back.

    Example:
      >>> from batchlab import Ragged
      >>> data = Ragged.from_lengths(np.arange(10) % 7, [1, 4, 5])
      >>> ex = PaddingExplorer(data, vocab=7, features=4, sizes=(2, 8), repeat=3)
      >>> p = ex.update(strategy="fixed", size=2)
      >>> p.padded_length, p.truncated, round(p.correct, 2)
      (2, 2, 0.33)
    """

    def __init__(
        self,
        data: Any,
        *,
        vocab: int,
        features: int = 16,
        sizes: tuple[int, ...] = (16, 32, 64, 128),
        **measure_options: Any,
    ):
        self.data, self.table = token_workload(data, vocab, features, 0)
        sizes = tuple(check_positive_ints(sizes, "sizes"))
        self.reference = mean_pool_reference(self.data, self.table)
        self.measure_options = measure_options
        super().__init__(
            self._compute_point,
            {"strategy": "max", "size": sizes[0]},
            controls={
                "strategy": choice(PAD_COLORS, description="strategy"),
                "size": stops_slider(sizes, "length / multiple"),
            },
            draw=_draw_padding,
            title="Padding explorer",
        )
        self.update()

    def _compute_point(self, strategy: str, size: int) -> PaddingPoint:
        if strategy == "pack":
            p = pack(self.data)
            args, fn, length, truncated = (p, self.table), packed_mean_pool, p.padded_elements, 0
        else:
            options = {"max": {}, "multiple": {"multiple_of": size}}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the cut count is reported in the result instead
                p = pad(self.data, **options.get(strategy, {"length": size, "truncate": True}))
            args, fn, length = (p.values, p.mask, self.table), mean_pool, int(p.values.shape[1])
            truncated = int(np.sum(self.data.lengths > length))
        m = measure(fn, *args, **self.measure_options)
        out = np.asarray(jax.jit(fn)(*args))
        close = np.isclose(out, self.reference, rtol=1e-4, atol=1e-5)
        correct = float(np.all(close, axis=1).mean()) if len(out) else 1.0
        return PaddingPoint(
            strategy, size, length, int(p.padded_elements), p.waste, truncated, correct, m
        )


def _draw_padding(ex: PaddingExplorer):
    fig, ax = new_figure(1, width=6.4, height=4.2)
    p = ex.result
    plot_runs(ax, ex, "strategy", PAD_COLORS, "padded_elements", "{} (median, bar = min..max)")
    wrong = [q for q in ex.cache.values() if q.correct < 1]  # fast because it cut items: marked
    if wrong:
        xs, ms = [q.padded_elements for q in wrong], [1e3 * q.measurement.median for q in wrong]
        ax.plot(xs, ms, "x", ms=12, mew=2.5, color="crimson", label="items wrong (cut)", zorder=1)
    log2_axis(ax, "x")  # plain numbers at powers of two, no 2x10^0
    times = [v * 1e3 for q in ex.cache.values() for v in (q.measurement.min, q.measurement.max)]
    seconds_log_axis(ax, times, per_second=1e3)  # ticks at 1-2-5 or finer: a narrow range too
    ax.set(xlabel="positions computed (log scale)", ylabel="run time (log scale)")
    setting = p.strategy if p.strategy == "pack" else f"{p.strategy} {p.size}"  # no size: pack
    title = f"{setting}: {p.waste:.0%} pads, {p.correct:.0%} items correct"
    ax.set_title(f"{title}\n{machine_label()}", fontsize=10)
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(fontsize=9, loc="lower right")  # pack sits at the left, its bars reach up
    return fig


class BucketExplorer(Explorer):
    """Bucket count and boundary rule -> padding, compilations, run time; the plan drawn first."""

    def __init__(
        self,
        data: Any,
        *,
        vocab: int,
        features: int = 16,
        bucket_counts: tuple[int, ...] = (1, 2, 4, 8),
        **measure_options: Any,
    ):
        self.data, self.table = token_workload(data, vocab, features, 0)
        counts = tuple(check_positive_ints(bucket_counts, "bucket_counts"))
        if set(measure_options) - set(RUN_OPTIONS):
            raise TypeError(
                f"`measure_options` may hold {', '.join(RUN_OPTIONS)} (as in batchlab.measure), "
                f"got {sorted(measure_options)}."
            )

        @functools.lru_cache(maxsize=1)  # the preview's plan, reused by the measurement
        def planned(rule: str, n_buckets: int):
            return plan_buckets(self.data, rule, n_buckets, features)

        def compute(rule: str, n_buckets: int) -> BucketPoint:
            return measure_buckets(*planned(rule, n_buckets), self.table, **measure_options)

        super().__init__(
            compute,
            {"rule": "optimal", "n_buckets": counts[0]},
            controls={
                "rule": choice(BOUNDARY_RULES, description="boundaries"),
                "n_buckets": stops_slider(counts, "buckets"),
            },
            draw=_draw_buckets,
            title="Bucket explorer",
            preview=lambda rule, n_buckets: planned(rule, n_buckets)[0],
        )
        self.update()


def _draw_buckets(ex: BucketExplorer):
    # layout="none": 0.3-0.5 s per redraw on 2 cores, and every new setting is drawn twice
    fig, (ax_h, ax_t) = new_figure(2, width=5.6, height=4.2, layout="none")
    fig.subplots_adjust(left=0.07, right=0.93, top=0.92, bottom=0.34, wspace=0.32)
    p = ex.pending if ex.pending is not None else ex.result  # a plan while it is measured
    measuring = isinstance(p, BucketPlan)
    plot_padding_report(PaddingReport(ex.data.lengths, ()), axes=ax_h)
    color = RULE_COLORS.get(p.rule, "k")
    edges = [(max(int(ex.data.lengths.min()), 1) if len(ex.data) else 1) * 0.9, *p.boundaries]
    for k, span in enumerate(zip(edges, p.boundaries, strict=False)):  # shades alternate
        label = f"{p.rule} buckets" if k == 0 else None
        ax_h.axvspan(*span, color=color, alpha=0.08 if k % 2 else 0.22, lw=0, label=label)
    ax_h.legend(fontsize=9, loc="upper right")
    done = f"{p.shapes} shapes: compiling..." if measuring else f"{p.compiles} compiles"
    ax_h.set_title(f"{p.ratio:.2f}x ragged, {done}", fontsize=11)
    colors = {rule: RULE_COLORS.get(rule, "k") for rule in BOUNDARY_RULES}
    runs = "{}: run, one epoch (median, min..max)"
    for rule, (k, pts) in plot_runs(ax_t, ex, "rule", colors, "n_buckets", runs).items():
        compiles = [1e3 * q.compile_seconds for q in pts]
        ax_t.plot(
            k, compiles, "s--", color=colors[rule], alpha=0.6, label=f"{rule}: compile, all buckets"
        )
    if measuring:  # nothing measured yet for this setting: mark where its point will be
        ax_t.axvline(
            p.n_buckets, color="black", ls=":", lw=1.5, label="current setting (measuring)"
        )
    shown = sorted({q.n_buckets for q in ex.cache.values()} | {p.n_buckets})
    ax_t.set_xticks(shown, [str(k) for k in shown])
    ax_t.set(xlim=(0, max(shown) + 1), xlabel="buckets (= compilations)")
    log2_axis(ax_t, "y")  # run and compile times, ms, a decade or more apart
    ax_t.set_ylabel("time, ms (log scale)")
    ax_t.set_title(f"run vs compile time; {machine_label()}", fontsize=10)
    ax_h.minorticks_off()
    ax_t.grid(True, alpha=0.3)
    # below the panel: inside it would cover the run points at the low bucket counts
    ax_t.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    return fig
