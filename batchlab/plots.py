"""Matplotlib figures for the notebooks: readable on a classroom projector.

Plots draw results; they compute nothing. Every function takes an
optional ``axes`` to draw into and returns the figure.
"""

from __future__ import annotations

import io
from typing import Any

import matplotlib

matplotlib.rcParams.update({"font.size": 12, "axes.titlesize": 13, "axes.labelsize": 12})


def _new_figure(
    ncols: int = 1, width: float = 5.5, height: float = 3.8, *, layout: str = "constrained"
):
    """A pyplot-free figure with ``ncols`` panels side by side.

    ``layout="tight"`` lays out faster than ``"constrained"`` (about 160 ms
    against 190+ ms per redraw here) and suits simple panels that explorers
    redraw on every slider release.
    """
    from matplotlib.figure import Figure

    # matplotlib.figure.Figure (not pyplot): no global state, safe in widgets
    fig = Figure(figsize=(width * ncols, height), layout=layout)
    axes = fig.subplots(1, ncols)
    return fig, axes


def short_bytes(y: float, _pos: Any = None) -> str:
    """Axis-tick bytes with 3 significant digits ("977 KiB", "1.14 MiB")."""
    from ._format import _BYTE_UNITS

    value, unit = float(y), 0
    while abs(value) >= 1024 and unit < len(_BYTE_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{value:.3g} {_BYTE_UNITS[unit]}"


def short_seconds(y: float, _pos: Any = None) -> str:
    """Axis-tick durations with 3 significant digits ("1.5 ms", "20 µs")."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(y) >= scale or unit == "ns":
            return f"{y / scale:.3g} {unit}"
    return str(y)


def log2_axis(ax, which: str = "x") -> None:
    """Log base-2 scale with plain integer tick labels (1, 4, 16, ...)."""
    from matplotlib.ticker import FuncFormatter

    getattr(ax, f"set_{which}scale")("log", base=2)
    getattr(ax, f"{which}axis").set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def plot_sweep(sweep: Any, *, axes=None, current: Any = None):
    """Two panels: run time per item (wall clock) and planned peak memory
    (compiled memory analysis), against the swept parameter."""
    from matplotlib.ticker import FuncFormatter

    if axes is None:
        fig, axes = _new_figure(2, layout="tight")
    else:
        fig = axes[0].figure
    ax_t, ax_m = axes
    for ax in axes:
        ax.clear()
    values = sweep.values
    per_item = [m / v if v else m for m, v in zip(sweep.medians, values, strict=True)]
    peaks = sweep.peak_bytes
    ax_t.plot(values, per_item, "o-", color="tab:blue", lw=2)
    ax_t.set_ylabel("run time per item")
    ax_t.set_title("run time per item (wall clock, median)")
    ax_m.plot(values, peaks, "s-", color="tab:orange", lw=2)
    ax_m.set_ylabel("planned peak memory")
    ax_m.set_title("planned peak (compiled memory analysis)")
    if per_item and min(per_item) > 0 and max(per_item) / min(per_item) >= 10:
        ax_t.set_yscale("log")
    if peaks and min(peaks) > 0 and max(peaks) / min(peaks) >= 16:
        ax_m.set_yscale("log", base=2)
    ax_t.yaxis.set_major_formatter(FuncFormatter(short_seconds))
    ax_t.yaxis.set_minor_formatter(FuncFormatter(lambda *_: ""))
    ax_m.yaxis.set_major_formatter(FuncFormatter(short_bytes))
    for ax in axes:
        ax.set_xlabel(sweep.parameter.replace("_", " "))
        if values and min(values) > 0 and max(values) / min(values) >= 16:
            log2_axis(ax, "x")
        ax.grid(True, alpha=0.3)
        ax.minorticks_off()  # log-axis minor ticks: clutter, and most of a redraw's time
    if current is not None and current in values:
        i = values.index(current)
        ax_t.plot([values[i]], [per_item[i]], "o", ms=16, mfc="none", mec="red", mew=2.5)
        ax_m.plot([values[i]], [peaks[i]], "s", ms=16, mfc="none", mec="red", mew=2.5)
    return fig


def _register_png_formatter() -> None:
    """Lets a bare ``Figure`` at the end of a notebook cell show as a picture.

    Our figures are ``matplotlib.figure.Figure`` objects (no pyplot state),
    which IPython only renders once the inline backend has been activated;
    registering the formatter here makes it independent of that.
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    from matplotlib.figure import Figure

    formatter = shell.display_formatter.formatters["image/png"]
    formatter.for_type(Figure, lambda fig: figure_to_png(fig, dpi=100))


def figure_to_png(fig, dpi: int = 90, *, tight: bool = True) -> bytes:
    """Renders a figure to PNG bytes (for ``ipywidgets.Image`` and saved artefacts).

    ``tight=True`` crops to the drawn content, so long tick labels, titles and
    outside legends are never cut; it costs a second layout pass, so explorers
    redrawing on every slider release pass ``tight=False`` (their figures use
    constrained layout, which keeps labels inside).
    """
    buf = io.BytesIO()
    extra = {"bbox_inches": "tight", "pad_inches": 0.1} if tight else {}
    fig.savefig(buf, format="png", dpi=dpi, **extra)
    return buf.getvalue()


_register_png_formatter()
