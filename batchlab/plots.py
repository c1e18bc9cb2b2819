"""Matplotlib figures for the notebooks: readable on a classroom projector.

Plots draw results; they compute nothing. Every function takes an
optional ``axes`` to draw into and returns the figure.
"""

from __future__ import annotations

import io
from typing import Any

import matplotlib

matplotlib.rcParams.update({"font.size": 12, "axes.titlesize": 13, "axes.labelsize": 12})


def _new_figure(ncols: int = 1, width: float = 5.5, height: float = 3.8):
    from matplotlib.figure import Figure

    # matplotlib.figure.Figure (not pyplot): no global state, safe in widgets
    fig = Figure(figsize=(width * ncols, height), layout="constrained")
    axes = fig.subplots(1, ncols)
    return fig, axes


def plot_sweep(sweep: Any, *, axes=None, current: Any = None):
    """Two panels: run time per item, and planned peak memory, against the parameter."""
    from matplotlib.ticker import FuncFormatter

    from ._format import format_bytes, format_seconds

    if axes is None:
        fig, axes = _new_figure(2)
    else:
        fig = axes[0].figure
    ax_t, ax_m = axes
    for ax in axes:
        ax.clear()
    values = sweep.values
    per_item = [m / v if v else m for m, v in zip(sweep.medians, values)]
    ax_t.plot(values, per_item, "o-", color="tab:blue")
    ax_t.set_ylabel("run time per item")
    ax_t.set_title("wall clock (median)")
    ax_m.plot(values, sweep.peak_bytes, "s-", color="tab:orange")
    ax_m.set_ylabel("planned peak memory")
    ax_m.set_title("compiled memory analysis")
    ax_t.yaxis.set_major_formatter(FuncFormatter(lambda y, _: format_seconds(y)))
    ax_m.yaxis.set_major_formatter(FuncFormatter(lambda y, _: format_bytes(y)))
    for ax in axes:
        ax.set_xlabel(sweep.parameter)
        if values and min(values) > 0 and max(values) / max(min(values), 1) >= 16:
            ax.set_xscale("log", base=2)
        if values and max(sweep.peak_bytes + [1]) > 0 and ax is ax_m and max(sweep.peak_bytes) / max(min(sweep.peak_bytes), 1) >= 16:
            ax.set_yscale("log", base=2)
        ax.grid(True, alpha=0.3)
    if current is not None and current in values:
        i = values.index(current)
        ax_t.plot([values[i]], [per_item[i]], "o", ms=14, mfc="none", mec="red", mew=2)
        ax_m.plot([values[i]], [sweep.peak_bytes[i]], "s", ms=14, mfc="none", mec="red", mew=2)
    return fig


def figure_to_png(fig, dpi: int = 90) -> bytes:
    """Renders a figure to PNG bytes (for ``ipywidgets.Image`` and saved artefacts)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()
