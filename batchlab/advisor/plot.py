"""The candidates side by side: time per item against peak memory (log axes, spread drawn)."""

from __future__ import annotations

import math
import os
from typing import Any

import jax
from matplotlib.ticker import FuncFormatter, LogLocator

from batchlab._util.format import format_bytes
from batchlab._util.plotting import new_figure, short_bytes, short_seconds


def machine_line() -> str:
    return f"{jax.default_backend()} backend, {os.cpu_count()} cores, jax {jax.__version__}"


def plot_candidates(advice: Any, *, axes=None, highlight: str | None = None):
    """One mark per measured candidate: x = peak memory, y = time per item (fastest .. slowest).

    Filled marks: the observed peak (fresh process); open marks: XLA's planned
    peak, joined to the observed one. The recommendation is ringed; the
    candidate labelled ``highlight`` (an explorer's selected chunk size) is
    boxed. The budget is drawn as a dashed line when it lies near the peaks.
    """
    if axes is None:
        fig, ax = new_figure(width=10, height=5.2)
    else:
        ax, fig = axes, axes.figure
    drawn = [c for c in advice.candidates if c.per_item is not None]
    colors = [c for c in (f"C{i}" for i in range(10)) if c != "C3"]  # C3 (red): the budget
    for i, c in enumerate(drawn):
        t = c.per_item
        color = colors[i % len(colors)]
        x = c.peak_bytes
        ax.errorbar(
            [x],
            [t.fastest],
            yerr=[[0], [t.slowest - t.fastest]],
            fmt="o",
            color=color,
            capsize=4,
            label=f"{c.label}: {c.peak_source} peak",
        )
        if c.observed_bytes is not None:
            ax.plot([c.planned_bytes], [t.fastest], "o", mfc="none", color=color)
            ax.plot([c.planned_bytes, x], [t.fastest, t.fastest], ":", color=color, lw=1)
        if c.label == advice.recommended:
            ax.plot([x], [t.fastest], "o", ms=16, mfc="none", mec="black", lw=1.5)
        if c.label == highlight:
            ax.plot([x], [t.fastest], "s", ms=20, mfc="none", mec="tab:purple", mew=1.5)
    ax.plot([], [], "o", mfc="none", color="gray", label="planned peak (XLA)")
    ax.plot([], [], "o", ms=12, mfc="none", mec="black", label="recommended")
    if highlight is not None and any(c.label == highlight for c in drawn):
        ax.plot(
            [],
            [],
            "s",
            ms=12,
            mfc="none",
            mec="tab:purple",
            mew=1.5,
            label=f"selected: {highlight}",
        )
    peaks = [c.peak_bytes for c in drawn] or [1]
    budget_drawn = advice.budget.bytes <= 16 * max(peaks)
    if budget_drawn:  # a budget far beyond every peak would squash them
        ax.axvline(
            advice.budget.bytes,
            color="tab:red",
            ls="--",
            lw=1,
            label=f"budget {format_bytes(advice.budget.bytes)}",
        )
    ax.set_xscale("log", base=2)
    shown = [b for b in peaks + [c.planned_bytes for c in drawn] if b > 0] or [1]
    if budget_drawn:
        shown.append(advice.budget.bytes)
    # whole powers of two at both ends: at least two binary-unit ticks, nothing at the frame
    ax.set_xlim(
        2 ** math.floor(math.log2(min(shown) / 1.2)), 2 ** math.ceil(math.log2(max(shown) * 1.2))
    )
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(short_bytes))
    ax.yaxis.set_major_formatter(FuncFormatter(short_seconds))
    times = [t for c in drawn for t in (c.per_item.fastest, c.per_item.slowest) if t > 0]
    if times and max(times) < 8 * min(times):  # within a decade: label the minor ticks too
        ax.yaxis.set_minor_formatter(FuncFormatter(short_seconds))
    else:  # more than a decade: label 2x and 5x only, or the labels would overlap
        ax.yaxis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))
        ax.yaxis.set_minor_formatter(FuncFormatter(short_seconds))
    ax.set_xlabel("peak memory of one call, bytes (log scale)")
    ax.set_ylabel("time per item (log scale)")
    ax.set_title(
        f"advise({advice.name}) at {advice.items} items\n"
        f"wall clock (bar: fastest .. slowest sample), memory: XLA plan / fresh process\n"
        f"{machine_line()}",
        fontsize=11,
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1), fontsize=10, frameon=False)
    return fig


__all__ = ["plot_candidates"]
