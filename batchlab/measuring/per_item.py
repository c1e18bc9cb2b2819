"""A batch-size sweep (the batch-size explorer's points) and what a bigger batch buys per item:
its speed-up and plot."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from batchlab._util.backend import machine_label
from batchlab._util.format import Rows, format_seconds
from batchlab._util.plotting import log2_axis, new_figure, seconds_log_axis, short_bytes
from batchlab.measuring.plan import PEAK_FROM_XLA
from batchlab.measuring.sampler import interleaved
from batchlab.measuring.samples import Samples
from batchlab.measuring.timing import Measurement

SOURCE = "wall clock around jax.block_until_ready (batchlab.measure)"
RING = dict(ms=16, mfc="none", mec="red", mew=2.5)  # the current setting, ringed


@dataclass
class SweepPoint:
    value: Any
    measurement: Measurement


@dataclass
class Sweep:
    """Measurements of one function at several batch sizes."""

    name: str
    points: list[SweepPoint] = field(default_factory=list)

    @property
    def values(self) -> list:
        """The swept values, in order."""
        return [p.value for p in self.points]

    @property
    def peak_bytes(self) -> list[int]:
        """The planned bytes at each swept value."""
        return [p.measurement.memory.planned_bytes for p in self.points]


@dataclass(frozen=True)
class PerItemCost(Rows):
    """A vmap batch-size sweep: seconds per call and per item at each batch size."""

    batch_sizes: tuple[int, ...]
    medians: tuple[float, ...]
    mins: tuple[float, ...]
    maxs: tuple[float, ...]
    source: str = SOURCE
    #: seconds per item of the smallest and largest batch (``"batch B"``), paired by round
    samples: dict[str, Samples] | None = field(default=None, compare=False, repr=False)
    _header = ("call", "per call (median)", "per item")

    @property
    def paired(self) -> bool:
        """Whether the speed-up is the median of per-round ratios of one interleaved run."""
        return self.samples is not None

    @property
    def per_item(self) -> tuple[float, ...]:
        """Median vmap time per item at each batch size."""
        return tuple(t / b for t, b in zip(self.medians, self.batch_sizes, strict=True))

    @property
    def speedup(self) -> float:
        """Per-item time, smallest over largest batch: median per-round ratio, else fastest's."""
        b = self.batch_sizes
        if len(b) < 2:
            raise ValueError(f"only batch size(s) {list(b)} measured: a speed-up needs two.")
        if self.paired:
            small, large = (self.samples[f"batch {n}"].values for n in (b[0], b[-1]))
            return float(np.median([x / y for x, y in zip(small, large, strict=True)]))
        return (self.mins[0] / b[0]) / (self.mins[-1] / b[-1])

    def _rows(self) -> list[tuple[str, ...]]:
        return [
            (f"vmap, batch {b}", format_seconds(t), format_seconds(t / b))
            for b, t in zip(self.batch_sizes, self.medians, strict=True)
        ]

    def _title(self) -> str:
        how = "ratios: paired rounds" if self.paired else "ratios: fastest samples, measured apart"
        return f"source: {self.source}; {how}"

    def plot(self, *, current: int | None = None, memory: Any = None):
        """Left: vmap time per item (median, min..max bars). Right (with a :class:`Sweep` as
        ``memory``): planned temp and peak bytes."""
        from matplotlib.ticker import FuncFormatter, LogLocator

        ncols = 2 if memory is not None else 1
        fig, axes = new_figure(ncols, 5.6, 5.6, layout="tight")  # tight: faster explorer redraws
        axes = np.atleast_1d(axes)
        ax_t, b, per_item = axes[0], self.batch_sizes, np.array(self.per_item)
        spread = [per_item - np.array(self.mins) / b, np.array(self.maxs) / b - per_item]
        label = "measured per item (median, bars: min..max)"
        ax_t.errorbar(b, per_item, spread, fmt="o-", color="tab:blue", lw=2, capsize=4, label=label)
        seconds_log_axis(ax_t, [*(np.array(self.mins) / b), *(np.array(self.maxs) / b)])
        ax_t.set(ylabel="time per item (log scale)", title="run time per item (wall clock)")
        ring = f"current: batch {current}"
        if current in b:
            ax_t.plot([current], [per_item[b.index(current)]], "o", **RING, label=ring)
        if memory is not None:
            ax_m = axes[1]
            points = sorted(memory.points, key=lambda p: p.value)
            xs, plans = [p.value for p in points], [p.measurement.memory for p in points]
            peak = [m.planned_bytes for m in plans]
            xla = plans[-1].planned_from == PEAK_FROM_XLA
            label = f"planned peak ({'XLA' if xla else 'argument + output + temp - alias'})"
            ax_m.plot(xs, peak, "s-", color="tab:orange", lw=2, label=label)
            temp = [max(m.temp_bytes, 1) for m in plans]
            zero = " (0 B drawn at 1 B)" if 1 in temp else ""
            ax_m.plot(xs, temp, "^-", color="tab:green", lw=2, label="planned temp" + zero)
            ax_m.set_yscale("log", base=2)  # ticks at powers of two, in binary units
            ax_m.yaxis.set_major_locator(LogLocator(base=2, numticks=8))
            ax_m.yaxis.set_major_formatter(FuncFormatter(short_bytes))
            ax_m.set(ylabel="bytes (log₂ scale)", title="planned memory (compiled memory analysis)")
            if current in xs:
                ax_m.plot([current], [peak[xs.index(current)]], "s", **RING, label=ring)
        for ax in axes:
            log2_axis(ax, "x")
            ax.set_xlabel("batch size (log₂ scale)")
            ax.grid(True, alpha=0.3)
            ax.margins(x=0.08, y=0.12)
            ax.minorticks_off()  # log-axis minor ticks: clutter, and most of a redraw's time
            # below the panel: inside it covered the small batches' points; loc="best" is slow
            ax.legend(fontsize=9.5, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1)
        fig.suptitle(f"{machine_label()}; {self.source}", fontsize=10.5)
        return fig


def per_item_cost(
    sweep: Any, *, call_at: Callable[[int], Callable[[], Any]] | None = None
) -> PerItemCost:
    """Per-item time of a vmap batch-size sweep (e.g. ``explorer.as_sweep()``); with ``call_at``
    (``b -> zero-argument call`` at batch ``b``) the end sizes are re-timed interleaved, paired."""
    if not hasattr(sweep, "points"):
        raise TypeError(
            "`sweep` must be a batchlab.measuring.Sweep (e.g. explorer.as_sweep()), got "
            f"{type(sweep).__name__}."
        )
    points = sorted(sweep.points, key=lambda p: p.value)
    if not points:
        raise ValueError(
            "`sweep` has no measured batch size; measure at least one "
            "(e.g. explorer.update(batch_size=...))."
        )
    sizes = tuple(int(p.value) for p in points)
    samples = None
    if call_at is not None and sizes[0] != sizes[-1]:
        timed = interleaved({f"batch {b}": call_at(b) for b in (sizes[0], sizes[-1])})
        samples = {k: v.per(int(k.split()[1]), f"{k}, per item") for k, v in timed.items()}
    ms = [p.measurement for p in points]
    stats = [tuple(getattr(m, k) for m in ms) for k in ("median", "min", "max")]
    return PerItemCost(sizes, *stats, samples=samples)
