"""Matplotlib helpers for the notebooks' figures: readable on a classroom projector."""

from __future__ import annotations

import io
import math
from typing import Any

import matplotlib
from IPython import get_ipython
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, Locator, LogLocator, NullLocator

from batchlab._util.format import BYTE_UNITS, SECOND_UNITS

matplotlib.rcParams.update({"font.size": 12, "axes.titlesize": 13, "axes.labelsize": 12})


def new_figure(
    ncols: int = 1, width: float = 5.5, height: float = 3.8, *, layout: str = "constrained"
):
    """A pyplot-free figure (no global state, safe in widgets) with ``ncols`` panels."""
    fig = Figure(figsize=(width * ncols, height), layout=layout)
    return fig, fig.subplots(1, ncols)


def short_bytes(y: float, _pos: Any = None) -> str:
    """Axis-tick bytes with 3 significant digits ("977 KiB", "1.14 MiB")."""
    value, unit = float(y), 0
    while abs(value) >= 1024 and unit < len(BYTE_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{value:.3g} {BYTE_UNITS[unit]}"


def short_seconds(y: float, _pos: Any = None) -> str:
    """Axis-tick durations with 3 significant digits ("1.5 ms", "20 µs")."""
    unit, scale = next((u, s) for u, s in SECOND_UNITS if abs(y) >= s or u == "ns")
    return f"{y / scale:.3g} {unit}"


def log2_axis(ax, which: str = "x") -> None:
    """Log base-2 scale with plain integer tick labels (1, 4, 16, ...)."""
    getattr(ax, f"set_{which}scale")("log", base=2)
    getattr(ax, f"{which}axis").set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


_COLORS = {
    "tab:blue": ("input", "parameter", "input (one item)", "input (padded batch)", "input (batch)"),
    "tab:orange": ("activations", "temp", "temp (one block per call)"),
    "tab:green": ("result", "output", "result output"),
    "tab:purple": ("params", "weights"),
    "tab:red": ("grads", "new params / loss output"),
    "tab:gray": ("constant",),
    "tab:cyan": ("",),
}
OWNER_COLORS = {owner: color for color, owners in _COLORS.items() for owner in owners}
_EXTRA = ("tab:brown", "tab:pink", "tab:olive", "tab:cyan")


def owner_color(owner: str) -> str:
    """A fixed colour per owner name, so pictures of different runs compare."""
    return OWNER_COLORS.get(owner, _EXTRA[sum(map(ord, owner)) % len(_EXTRA)])


def seconds_log_axis(ax, values, per_second: float = 1.0) -> None:
    """A log y axis of durations (``values``, in seconds x ``per_second``: 1e3 for ms) labelled at
    3 to 8 ticks whatever their spread: 1-2-5 over a decade or more, finer steps within one, a
    2x window around a narrow range."""
    ax.set_yscale("log")
    span = max(values) / min(values) if len(values) else 10.0
    if span < 2:  # a narrower range labels one or two ticks: show 2x around its middle
        mid = (max(values) * min(values)) ** 0.5
        ax.set_ylim(mid / 1.45, mid * 1.45)
    subs = (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8) if span < 4 else (1, 1.5, 2, 3, 5, 7)
    ax.yaxis.set_major_locator(LogLocator(subs=subs if span < 12 else (1, 2, 5)))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: short_seconds(v / per_second)))


class _Pow2Locator(Locator):
    """Ticks at multiples of a power-of-two number of bytes (4-8 ticks per axis)."""

    def __call__(self):
        return self.tick_values(*sorted(self.axis.get_view_interval()))

    def tick_values(self, lo, hi):
        step = 2.0 ** math.floor(math.log2(max(hi - lo, 1.0) / 4))
        first = math.ceil(lo / step) * step
        return [first + i * step for i in range(max(int((hi - first) // step) + 1, 0))]


def bytes_axis(axis) -> None:
    """Binary byte labels at ticks that are multiples of a power of two bytes."""
    axis.set_major_locator(_Pow2Locator())
    axis.set_major_formatter(FuncFormatter(short_bytes))


def figure_to_png(fig, dpi: int = 90, *, tight: bool = True) -> bytes:
    """PNG bytes of a figure; ``tight`` crops to the content (a second layout pass)."""
    buf = io.BytesIO()
    extra = {"bbox_inches": "tight", "pad_inches": 0.1} if tight else {}
    fig.savefig(buf, format="png", dpi=dpi, **extra)
    return buf.getvalue()


if (_shell := get_ipython()) is not None:  # a bare Figure ending a notebook cell shows as a picture
    _shell.display_formatter.formatters["image/png"].for_type(
        Figure, lambda f: figure_to_png(f, dpi=100)
    )
