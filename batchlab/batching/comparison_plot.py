"""Drawing a :class:`batchlab.batching.Comparison`: bars for one batch size, lines for a sweep."""

from __future__ import annotations

from typing import Any

import numpy as np

from batchlab._util.backend import machine_label
from batchlab._util.format import format_bytes, format_seconds
from batchlab._util.plotting import bytes_axis, log2_axis, new_figure, short_bytes, short_seconds
from batchlab.batching.strategies import STRATEGIES

COLORS = {s: f"C{i}" for i, s in enumerate(STRATEGIES)}  # matplotlib's colour cycle


def _spread(rs: list) -> np.ndarray:
    """min..max of each result's timing samples, as error-bar offsets from its median."""
    times = [(r.run_seconds, min(r.measurement.times), max(r.measurement.times)) for r in rs]
    return np.array([[med - lo, hi - med] for med, lo, hi in times]).T


def _bars(ax_t: Any, ax_m: Any, ok: list, items: int) -> None:
    """One batch size: a bar per strategy, its value written past the bar (and its spread)."""
    label = "min..max of the timing samples"
    spread = dict(xerr=_spread(ok), capsize=4, error_kw=dict(label=label))
    for ax, values, fmt, kw in (
        (ax_t, [r.run_seconds for r in ok], format_seconds, spread),
        (ax_m, [r.temp_bytes for r in ok], format_bytes, {}),
    ):
        bars = ax.barh([r.label for r in ok], values, color=[COLORS[r.strategy] for r in ok], **kw)
        ax.bar_label(bars, [" " + fmt(v) for v in values], fontsize=10)
        ax.invert_yaxis()
        ax.margins(x=0.35)
    ax_t.legend(fontsize=9, loc="lower right")
    ax_m.set_yticklabels([])
    ax_t.set(xlabel=f"run time per batch of {items} items")
    ax_m.set(xlabel="planned temp memory")
    ax_t.xaxis.set_major_formatter(short_seconds)
    bytes_axis(ax_m.xaxis)


def _lines(ax_t: Any, ax_m: Any, c: Any, ok: list, current: int | None) -> None:
    """A sweep: each strategy against batch size, a log y axis where the figures span 20x."""
    for s in c.strategies:
        if rs := [r for r in ok if r.strategy == s]:
            xs, kw = [r.items for r in rs], dict(color=COLORS[s], label=s)
            # dashed, hollow lines for hand-batched code: where it coincides with vmap, both show
            kw |= dict(ls="--", mfc="none", ms=11, lw=2.2) if s == "manual" else dict(ms=6)
            ys = [r.run_seconds for r in rs]
            ax_t.errorbar(xs, ys, yerr=_spread(rs), marker="o", capsize=3, **kw)
            ax_m.plot(xs, [r.temp_bytes for r in rs], marker="s", **kw)
    panels = (
        (ax_t, "run time per batch", short_seconds),
        (ax_m, "planned temp memory", short_bytes),
    )
    for ax, name, ticks in panels:
        values = [r.run_seconds if ax is ax_t else r.temp_bytes for r in ok]
        log2_axis(ax, "x")
        if current is not None:
            ax.axvline(current, color="red", lw=1.5, ls=":")
        if values and min(values) > 0 and max(values) / min(values) >= 20:
            ax.set_yscale("log", base=10 if ax is ax_t else 2)
            ax.yaxis.set_minor_formatter("")
            name += " (log scale)"
        else:
            ax.set_ylim(bottom=0, top=max(values, default=0) * 1.15 or 1)
            if ax is ax_m:
                bytes_axis(ax.yaxis)
        ax.set(xlabel="batch size (items, log scale)", ylabel=name)
        ax.yaxis.set_major_formatter(ticks)
    ax_t.legend(fontsize=10, title="bars: min..max of samples", title_fontsize=9)


def plot_comparison(c: Any, *, current: int | None = None):
    """Run time (wall clock) and planned temp memory (XLA) per strategy."""
    fig, (ax_t, ax_m) = new_figure(2, width=5.6, height=3.9)
    ok = [r for r in c.results if r.measurement is not None]
    if len(c.batch_sizes) == 1:
        _bars(ax_t, ax_m, ok, c.batch_sizes[0])
    else:
        _lines(ax_t, ax_m, c, ok, current)
    ax_t.set_title(f"wall clock, median ({machine_label()})", fontsize=10)
    ax_m.set_title("compiled memory analysis")
    ax_t.grid(True, alpha=0.3)
    ax_m.grid(True, alpha=0.3)
    fig.suptitle(f"batching strategies for {c.name}", fontsize=13)
    return fig
