"""Drawing a :class:`batchlab.compare.Comparison`: bars for one batch size, lines for a sweep."""

from __future__ import annotations

from typing import Any

import numpy as np

from batchlab._util.format import format_bytes, format_seconds
from batchlab._util.plotting import log2_axis, new_figure, short_bytes, short_seconds

COLORS = {
    "loop": "tab:red",
    "vmap": "tab:blue",
    "map": "tab:green",
    "chunked": "tab:orange",
    "host": "tab:cyan",
    "unrolled": "tab:brown",
    "manual": "tab:purple",
}


def _panels(axes: Any):
    if axes is None:
        return new_figure(2, width=5.6, height=3.9)
    return axes[0].figure, axes


def _binary_ticks(ax: Any, which: str, top: float) -> None:
    """Linear byte ticks at multiples of a power of two (0, 2 MiB, 4 MiB, ...)."""
    from matplotlib.ticker import MultipleLocator

    step = 2 ** max(0, int(np.floor(np.log2(max(top, 1) / 3))))
    getattr(ax, f"{which}axis").set_major_locator(MultipleLocator(step))


def _spread(rs: list) -> np.ndarray:
    """min..max of each result's timing samples, as error-bar offsets from its median."""
    med = np.array([r.run_seconds for r in rs])
    lo = np.array([min(r.measurement.times) for r in rs])
    hi = np.array([max(r.measurement.times) for r in rs])
    return np.vstack([med - lo, hi - med])


def _caption() -> str:
    import os

    import jax

    return f"{jax.default_backend()} backend, {os.cpu_count()} cores, jax {jax.__version__}"


def plot_comparison(c: Any, *, axes: Any = None, current: int | None = None):
    """Run time (wall clock) and planned temp memory (XLA) per strategy."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

    fig, (ax_t, ax_m) = _panels(axes)
    for ax in (ax_t, ax_m):
        ax.clear()
    ok = [r for r in c.results if r.measurement is not None]
    if len(c.batch_sizes) == 1:
        labels = [r.label for r in ok]
        colors = [COLORS.get(r.strategy, "0.5") for r in ok]
        for ax, values, fmt in (
            (ax_t, [r.run_seconds for r in ok], format_seconds),
            (ax_m, [r.temp_bytes for r in ok], format_bytes),
        ):
            bars = ax.barh(labels, values, color=colors)
            if ax is ax_t:
                ax.errorbar(
                    values,
                    range(len(ok)),
                    xerr=_spread(ok),
                    fmt="none",
                    ecolor="black",
                    capsize=4,
                    label="min..max of the timing samples",
                )
                ax.legend(fontsize=9, loc="lower right")
            ax.invert_yaxis()
            ends = [max(r.measurement.times) for r in ok] if ax is ax_t else values
            for bar, v, end in zip(bars, values, ends, strict=False):
                ax.text(
                    max(end, v),
                    bar.get_y() + bar.get_height() / 2,
                    " " + fmt(v),
                    va="center",
                    fontsize=10,
                )
            ax.margins(x=0.35)
            ax.xaxis.set_major_locator(MaxNLocator(3))
        _binary_ticks(ax_m, "x", max(r.temp_bytes for r in ok) * 1.35)
        ax_m.set_yticklabels([])
        ax_t.set_xlabel(f"run time per batch of {c.batch_sizes[0]} items")
        ax_m.set_xlabel("planned temp memory")
        ax_t.xaxis.set_major_formatter(FuncFormatter(short_seconds))
        ax_m.xaxis.set_major_formatter(FuncFormatter(short_bytes))
    else:
        for s in c.strategies:
            rs = [r for r in ok if r.strategy == s]
            if not rs:
                continue
            xs = [r.items for r in rs]
            color = COLORS.get(s, "0.5")
            # dashed, hollow lines for hand-batched code: where it coincides with vmap, both show
            style = dict(ls="--", mfc="none", ms=11, lw=2.2) if s == "manual" else dict(ms=6)
            ax_t.errorbar(
                xs,
                [r.run_seconds for r in rs],
                yerr=_spread(rs),
                marker="o",
                color=color,
                label=s,
                capsize=3,
                **style,
            )
            ax_m.plot(xs, [r.temp_bytes for r in rs], marker="s", color=color, label=s, **style)
        for ax in (ax_t, ax_m):
            log2_axis(ax, "x")
            ax.set_xlabel("batch size (items, log scale)")
            if current is not None:
                ax.axvline(current, color="red", lw=1.5, ls=":")
        for ax, values, base in (
            (ax_t, [r.run_seconds for r in ok], 10),
            (ax_m, [r.temp_bytes for r in ok], 2),
        ):
            if values and min(values) > 0 and max(values) / min(values) >= 20:
                ax.set_yscale("log", base=base)
                ax.yaxis.set_minor_formatter(NullFormatter())
                ax.set_ylabel(
                    f"{'run time per batch' if ax is ax_t else 'planned temp memory'} (log scale)"
                )
            else:
                ax.set_ylim(bottom=0, top=(max(values) * 1.15) if values and max(values) > 0 else 1)
                ax.yaxis.set_major_locator(MaxNLocator(5))
                if base == 2:
                    _binary_ticks(ax, "y", max(values) * 1.15)
        for ax, name in ((ax_t, "run time per batch"), (ax_m, "planned temp memory")):
            if not ax.get_ylabel():
                ax.set_ylabel(name)
        ax_t.yaxis.set_major_formatter(FuncFormatter(short_seconds))
        ax_m.yaxis.set_major_formatter(FuncFormatter(short_bytes))
        ax_t.legend(fontsize=10, title="bars: min..max of samples", title_fontsize=9)
    ax_t.set_title(f"wall clock, median ({_caption()})", fontsize=10)
    ax_m.set_title("compiled memory analysis")
    for ax in (ax_t, ax_m):
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"batching strategies for {c.name}", fontsize=13)
    return fig
