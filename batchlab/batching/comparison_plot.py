"""Drawing a :class:`batchlab.batching.Comparison`: bars for one batch size, lines for a sweep."""

from __future__ import annotations

import os
from typing import Any

import jax
import numpy as np

from batchlab._util.format import format_bytes, format_seconds
from batchlab._util.plotting import bytes_axis, log2_axis, new_figure, short_bytes, short_seconds
from batchlab.batching.strategies import STRATEGIES

COLORS = {s: f"C{i}" for i, s in enumerate(STRATEGIES)}  # matplotlib's colour cycle


def _spread(rs: list) -> np.ndarray:
    """min..max of each result's timing samples, as error-bar offsets from its median."""
    times = [(r.run_seconds, min(r.measurement.times), max(r.measurement.times)) for r in rs]
    return np.array([[med - lo, hi - med] for med, lo, hi in times]).T


def _bars(ax_t: Any, ax_m: Any, ok: list, items: int) -> None:
    """One batch size: a bar per strategy, its value written at the end."""
    colors = [COLORS[r.strategy] for r in ok]
    times = [r.run_seconds for r in ok]
    for ax, values, fmt in (
        (ax_t, times, format_seconds),
        (ax_m, [r.temp_bytes for r in ok], format_bytes),
    ):
        bars = ax.barh([r.label for r in ok], values, color=colors)
        ends = [max(r.measurement.times) for r in ok] if ax is ax_t else values
        for bar, v, end in zip(bars, values, ends, strict=True):
            ax.text(end, bar.get_y() + bar.get_height() / 2, " " + fmt(v), va="center", fontsize=10)
        ax.invert_yaxis()
        ax.margins(x=0.35)
    label = "min..max of the timing samples"
    ax_t.errorbar(
        times, range(len(ok)), xerr=_spread(ok), fmt="none", ecolor="k", capsize=4, label=label
    )
    ax_t.legend(fontsize=9, loc="lower right")
    ax_m.set_yticklabels([])
    ax_t.set_xlabel(f"run time per batch of {items} items")
    ax_m.set_xlabel("planned temp memory")
    ax_t.xaxis.set_major_formatter(short_seconds)
    bytes_axis(ax_m.xaxis)


def _lines(ax_t: Any, ax_m: Any, c: Any, ok: list, current: int | None) -> None:
    """A sweep: each strategy against batch size, log axes where the figures span 20x."""
    for s in c.strategies:
        rs = [r for r in ok if r.strategy == s]
        if not rs:
            continue
        xs, color = [r.items for r in rs], COLORS[s]
        # dashed, hollow lines for hand-batched code: where it coincides with vmap, both show
        style = dict(ls="--", mfc="none", ms=11, lw=2.2) if s == "manual" else dict(ms=6)
        ys = [r.run_seconds for r in rs]
        ax_t.errorbar(
            xs, ys, yerr=_spread(rs), marker="o", color=color, label=s, capsize=3, **style
        )
        ax_m.plot(xs, [r.temp_bytes for r in rs], marker="s", color=color, label=s, **style)
    for ax, name in ((ax_t, "run time per batch"), (ax_m, "planned temp memory")):
        values = [r.run_seconds if ax is ax_t else r.temp_bytes for r in ok]
        log2_axis(ax, "x")
        ax.set_xlabel("batch size (items, log scale)")
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
        ax.set_ylabel(name)
    ax_t.yaxis.set_major_formatter(short_seconds)
    ax_m.yaxis.set_major_formatter(short_bytes)
    ax_t.legend(fontsize=10, title="bars: min..max of samples", title_fontsize=9)


def plot_comparison(c: Any, *, current: int | None = None):
    """Run time (wall clock) and planned temp memory (XLA) per strategy."""
    fig, (ax_t, ax_m) = new_figure(2, width=5.6, height=3.9)
    ok = [r for r in c.results if r.measurement is not None]
    if len(c.batch_sizes) == 1:
        _bars(ax_t, ax_m, ok, c.batch_sizes[0])
    else:
        _lines(ax_t, ax_m, c, ok, current)
    where = f"{jax.default_backend()} backend, {os.cpu_count()} cores, jax {jax.__version__}"
    ax_t.set_title(f"wall clock, median ({where})", fontsize=10)
    ax_m.set_title("compiled memory analysis")
    for ax in (ax_t, ax_m):
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"batching strategies for {c.name}", fontsize=13)
    return fig
