"""The bucket explorer (05): bucket count and boundaries -> padding, compilations, run time.

The widget only picks the setting and draws: :func:`batchlab.ragged.plan_buckets` says what
a setting will cost before anything is compiled (drawn at once, from ``explorer.pending``),
:func:`batchlab.ragged.measure_buckets` then compiles every bucket shape once and times the
epoch. With 16 buckets that second step is mostly JAX tracing and XLA compiling 16
programs: that cost is what 05 teaches.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from batchlab._util.checks import check_positive_ints
from batchlab._util.plotting import new_figure
from batchlab.ragged.report import RULE_COLORS, PaddingReport, plot_padding_report
from batchlab.ragged.timing import (
    BOUNDARY_RULES,
    RUN_OPTIONS,
    BucketPlan,
    BucketPoint,
    measure_buckets,
    plan_buckets,
    token_workload,
)
from batchlab.widgets.controls import choice, stops_slider
from batchlab.widgets.explorer import Explorer
from batchlab.widgets.ragged import plot_runs, ring_current, timing_source


class BucketExplorer(Explorer):
    """Bucket-count slider (+ boundary rule) -> padding, compilations, run time of the whole dataset.

    ``measure_options``: ``max_time``, ``repeat`` or ``tolerance`` for each setting's run.

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
        rule: str = "optimal",
        seed: int = 0,
        title: str = "Bucket explorer",
        **measure_options: Any,
    ):
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
        self._last_planned: tuple = (None,)  # (setting, plan, buckets): the preview's, reused
        super().__init__(
            self._compute_point,
            {"rule": rule, "n_buckets": self.bucket_counts[0]},
            controls={
                "rule": choice(BOUNDARY_RULES, description="boundaries"),
                "n_buckets": stops_slider(self.bucket_counts, "buckets"),
            },
            draw=_draw_buckets,
            describe=repr,
            title=title,
            preview=lambda rule, n_buckets: self._planned(rule, n_buckets)[0],
            describe_preview=repr,
        )
        self.update()

    def _planned(self, rule: str, n_buckets: int):
        if self._last_planned[0] != (rule, n_buckets):
            planned = plan_buckets(self.data, rule, n_buckets, self.features)
            self._last_planned = ((rule, n_buckets), *planned)
        return self._last_planned[1:]

    def _compute_point(self, rule: str, n_buckets: int) -> BucketPoint:
        plan, buckets = self._planned(rule, n_buckets)
        return measure_buckets(plan, buckets, self.table, **self.run_options)

    @property
    def measured(self) -> list[BucketPoint]:
        return list(self.cache.values())


def _draw_buckets(ex: BucketExplorer):
    from matplotlib.patches import Patch

    # 0.3-0.5 s per redraw on a 2-core CPU, and every new setting is drawn twice
    fig, (ax_h, ax_t) = new_figure(2, width=5.6, height=4.2, layout="none")
    fig.subplots_adjust(left=0.07, right=0.93, top=0.92, bottom=0.34, wspace=0.32)
    p = ex.pending if ex.pending is not None else ex.result  # a plan while it is measured
    measuring = isinstance(p, BucketPlan)
    plot_padding_report(PaddingReport(ex.data.lengths, ()), axes=ax_h)
    color = RULE_COLORS.get(p.rule, "k")
    edges = [(max(int(ex.data.lengths.min()), 1) if len(ex.data) else 1) * 0.9, *p.boundaries]
    for k in range(len(p.boundaries)):
        ax_h.axvspan(edges[k], edges[k + 1], color=color, alpha=0.22 if k % 2 else 0.08, lw=0)
    handles = [
        *ax_h.get_legend_handles_labels()[0],
        Patch(color=color, alpha=0.3, label=f"{p.rule} buckets"),
    ]
    ax_h.legend(handles=handles, fontsize=9, loc="upper right")
    done = f"{p.shapes} shapes: compiling..." if measuring else f"{p.compiles} compiles"
    ax_h.set_title(f"{p.ratio:.2f}x ragged, {done}", fontsize=11)
    ax_c = ax_t.twinx()  # compile seconds on their own axis: another unit, another scale
    for rule in BOUNDARY_RULES:
        pts = sorted((q for q in ex.measured if q.rule == rule), key=lambda q: q.n_buckets)
        if pts:
            c, k = RULE_COLORS.get(rule, "k"), [q.n_buckets for q in pts]
            plot_runs(ax_t, k, pts, c, f"{rule}: run, one epoch (median, min..max)")
            seconds = [q.compile_seconds for q in pts]
            label = f"{rule}: compile, all buckets (right axis)"
            ax_c.plot(k, seconds, "s--", color=c, alpha=0.6, label=label)
    if measuring:  # nothing measured yet for this setting: say so where its point will be
        ax_t.axvline(
            p.n_buckets, color="black", ls=":", lw=1.5, label="current setting (measuring)"
        )
        left = p.n_buckets <= np.sqrt(min(ex.bucket_counts) * max(ex.bucket_counts))
        text = f" compiling {p.shapes} shapes,\n then measuring..."
        where = ax_t.get_xaxis_transform()
        ax_t.text(
            p.n_buckets, 0.5, text, transform=where, fontsize=10, ha="left" if left else "right"
        )
    else:
        ring_current(ax_t, p.n_buckets, p.measurement.median)
    shown = sorted({q.n_buckets for q in ex.measured} | {p.n_buckets})
    ax_t.set_xticks(shown, [str(k) for k in shown])  # ticks where points are
    ax_t.set_xlim(0, max(shown) + 1)
    ax_t.set_xlabel("buckets (= compilations)")
    ax_t.set_ylabel("run, ms per epoch (circles)")
    ax_c.set_ylabel("compile, s (squares, dashed)")
    ax_t.set_ylim(bottom=0)
    ax_c.set_ylim(bottom=0)
    ax_t.set_title(f"run vs compile time; {timing_source()}", fontsize=10)
    ax_h.minorticks_off()
    ax_t.grid(True, alpha=0.3)
    # below the panel: inside it would cover the run points at the low bucket counts
    (h1, l1), (h2, l2) = ax_t.get_legend_handles_labels(), ax_c.get_legend_handles_labels()
    ax_t.legend(
        h1 + h2, l1 + l2, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2
    )
    return fig
