"""The candidates side by side: time per item against peak memory (log axes, spread drawn)."""

from __future__ import annotations

import os
from typing import Any

import jax
from matplotlib.ticker import FuncFormatter

from batchlab._util.plotting import new_figure, short_bytes, short_seconds


def machine_line() -> str:
    return f"{jax.default_backend()} backend, {os.cpu_count()} cores, jax {jax.__version__}"


def plot_candidates(advice: Any, *, axes=None):
    """One mark per measured candidate: x = peak memory, y = time per item (fastest .. slowest).

    Filled marks: the observed peak (fresh process); open marks: XLA's planned
    peak, joined to the observed one. The recommendation is ringed.
    """
    if axes is None:
        fig, ax = new_figure(width=7.5, height=4.4)
    else:
        ax, fig = axes, axes.figure
    drawn = [c for c in advice.candidates if c.per_item is not None]
    colors = [f"C{i}" for i in range(10)]
    for i, c in enumerate(drawn):
        t = c.per_item
        color = colors[i % 10]
        x = c.peak_bytes
        ax.errorbar(
            [x],
            [t.fastest],
            yerr=[[0], [t.slowest - t.fastest]],
            fmt="o",
            color=color,
            capsize=4,
            label=f"{c.label} ({c.peak_source})",
        )
        if c.observed_bytes is not None:
            ax.plot([c.planned_bytes], [t.fastest], "o", mfc="none", color=color)
            ax.plot([c.planned_bytes, x], [t.fastest, t.fastest], ":", color=color, lw=1)
        if c.label == advice.recommended:
            ax.plot([x], [t.fastest], "o", ms=16, mfc="none", mec="black", lw=1.5)
    ax.plot([], [], "o", mfc="none", color="gray", label="planned peak (XLA)")
    ax.plot([], [], "o", ms=12, mfc="none", mec="black", label="recommended")
    peaks = [c.peak_bytes for c in drawn] or [1]
    if advice.budget.bytes <= 16 * max(peaks):  # a budget far beyond every peak would squash them
        ax.axvline(advice.budget.bytes, color="tab:red", ls="--", lw=1, label="budget")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(short_bytes))
    ax.yaxis.set_major_formatter(FuncFormatter(short_seconds))
    ax.yaxis.set_minor_formatter(FuncFormatter(short_seconds))
    ax.set_xlabel("peak memory of one call (log scale)")
    ax.set_ylabel("time per item (log scale)")
    ax.set_title(
        f"advise({advice.name}) at {advice.items} items\n"
        f"wall clock (bar: fastest .. slowest sample), memory: XLA plan / fresh process\n"
        f"{machine_line()}",
        fontsize=10,
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1), fontsize=9, frameon=False)
    return fig


__all__ = ["plot_candidates"]
