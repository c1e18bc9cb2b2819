"""Drawing the bucket explorer (05): where the buckets fall, and run against compile time.

A setting being measured is drawn from its plan (``explorer.pending``, a
:class:`~batchlab.ragged.BucketPlan`): its buckets on the
histogram, and a marker where its point will appear.
"""

from __future__ import annotations

import numpy as np

from batchlab._util.plotting import new_figure
from batchlab.ragged.report import RULE_COLORS, PaddingReport, plot_padding_report
from batchlab.ragged.timing import BOUNDARY_RULES, BucketPlan
from batchlab.widgets.ragged import ring_current, run_times_ms, timing_source


def draw_buckets(ex):
    from matplotlib.patches import Patch

    # 0.3-0.5 s per redraw on a 2-core CPU, and every new setting is drawn twice
    fig, (ax_h, ax_t) = new_figure(2, width=5.6, height=4.2, layout="none")
    fig.subplots_adjust(left=0.07, right=0.93, top=0.92, bottom=0.34, wspace=0.32)
    p = ex.pending if ex.pending is not None else ex.result  # a plan while it is measured
    measuring = isinstance(p, BucketPlan)
    plot_padding_report(PaddingReport(ex.data.lengths, ()), axes=ax_h)
    color = RULE_COLORS.get(p.rule, "k")
    lo = max(int(ex.data.lengths.min()), 1) if len(ex.data) else 1
    edges = [lo * 0.9, *p.boundaries]
    for k in range(len(p.boundaries)):
        ax_h.axvspan(edges[k], edges[k + 1], color=color, alpha=0.22 if k % 2 else 0.08, lw=0)
    handles, _ = ax_h.get_legend_handles_labels()
    ax_h.legend(
        handles=[*handles, Patch(color=color, alpha=0.3, label=f"{p.rule} buckets")],
        fontsize=9,
        loc="upper right",
    )
    ax_h.set_title(
        f"{p.ratio:.2f}x ragged, "
        + (f"{p.shapes} shapes: compiling..." if measuring else f"{p.compiles} compiles"),
        fontsize=11,
    )
    ax_c = ax_t.twinx()  # compile seconds on their own axis: another unit, another scale
    for rule in BOUNDARY_RULES:
        pts = sorted((q for q in ex.measured if q.rule == rule), key=lambda q: q.n_buckets)
        if not pts:
            continue
        c = RULE_COLORS.get(rule, "k")
        k = [q.n_buckets for q in pts]
        med, lo_err, hi_err = run_times_ms(pts)
        ax_t.errorbar(
            k,
            med,
            yerr=[lo_err, hi_err],
            fmt="o-",
            color=c,
            capsize=3,
            label=f"{rule}: run, one epoch (median, min..max)",
        )
        ax_c.plot(
            k,
            [q.compile_seconds for q in pts],
            "s--",
            color=c,
            alpha=0.6,
            label=f"{rule}: compile, all buckets (right axis)",
        )
    if measuring:  # nothing measured yet for this setting: say so where its point will be
        ax_t.axvline(
            p.n_buckets, color="black", ls=":", lw=1.5, label="current setting (measuring)"
        )
        ax_t.text(
            p.n_buckets,
            0.5,
            f" compiling {p.shapes} shapes,\n then measuring...",
            transform=ax_t.get_xaxis_transform(),
            fontsize=10,
            ha="left"
            if p.n_buckets <= np.sqrt(min(ex.bucket_counts) * max(ex.bucket_counts))
            else "right",
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
    h1, l1 = ax_t.get_legend_handles_labels()
    h2, l2 = ax_c.get_legend_handles_labels()
    ax_t.legend(
        h1 + h2, l1 + l2, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2
    )
    return fig
