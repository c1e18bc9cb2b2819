"""What a bigger batch buys per item: fixed per-call cost shared, and vectorized work."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from batchlab._util.format import BYTE_UNITS, format_seconds, text_table
from batchlab._util.plotting import log2_axis, short_seconds
from batchlab.claims.evidence import Samples
from batchlab.measuring.sampler import interleaved

SOURCE = "wall clock around jax.block_until_ready (batchlab.measure)"


def machine_label() -> str:
    """Backend, CPU cores and jax version, for the title of a timing plot."""
    return f"{jax.default_backend()}, {os.cpu_count()} CPU cores, jax {jax.__version__}"


@dataclass(frozen=True)
class PerItemCost:
    """A vmap batch-size sweep (seconds per call) beside a lax.map loop (seconds per item)."""

    batch_sizes: tuple[int, ...]
    medians: tuple[float, ...]
    mins: tuple[float, ...]
    maxs: tuple[float, ...]
    loop_items: int | None = None  # None: no lax.map baseline measured
    loop_median: float | None = None  # per item
    loop_min: float | None = None
    loop_max: float | None = None
    source: str = SOURCE
    #: seconds per item, paired by round: ``"batch B"`` (smallest, largest) and ``"loop"``
    samples: dict[str, Samples] | None = field(default=None, compare=False, repr=False)

    @property
    def paired(self) -> bool:
        """True when the ratios are medians of per-round ratios of one interleaved run."""
        return self.samples is not None

    def _ratio(self, num: str, den: str) -> float:
        a, b = self.samples[num].values, self.samples[den].values
        return float(np.median([x / y for x, y in zip(a, b, strict=True)]))

    @property
    def per_item(self) -> tuple[float, ...]:
        """Median vmap time per item at each batch size."""
        return tuple(t / b for t, b in zip(self.medians, self.batch_sizes, strict=True))

    def _need(self, loop: bool = False) -> None:
        if len(self.batch_sizes) < 2:
            raise ValueError(
                f"only batch size(s) {list(self.batch_sizes)} measured: a speed-up needs at least two."
            )
        if loop and self.loop_median is None:
            raise ValueError(
                "no lax.map loop was measured: pass `loop=` and `loop_items=` to per_item_cost."
            )

    @property
    def fastest_per_item(self) -> tuple[float, ...]:
        """Fastest vmap sample per item at each batch size (what the ratios below use)."""
        return tuple(t / b for t, b in zip(self.mins, self.batch_sizes, strict=True))

    # Paired: the median of the per-round ratios. Unpaired (the sweep's points, measured apart):
    # the ratio of the fastest samples, which a load burst during one side moves least.
    @property
    def speedup(self) -> float:
        """Per-item time at the smallest batch over the per-item time at the largest."""
        self._need()
        small, large = (f"batch {b}" for b in (self.batch_sizes[0], self.batch_sizes[-1]))
        if self.paired:
            return self._ratio(small, large)
        return self.fastest_per_item[0] / self.fastest_per_item[-1]

    @property
    def fixed_cost_factor(self) -> float:
        """A call at the smallest batch against the same work per item in one lax.map call."""
        self._need(loop=True)
        if self.paired and "loop" in self.samples:
            return self._ratio(f"batch {self.batch_sizes[0]}", "loop")
        return self.fastest_per_item[0] / self.loop_min

    @property
    def vectorized_factor(self) -> float:
        """lax.map per item against vmap per item at the largest batch."""
        self._need(loop=True)
        if self.paired and "loop" in self.samples:
            return self._ratio("loop", f"batch {self.batch_sizes[-1]}")
        return self.loop_min / self.fastest_per_item[-1]

    def _rows(self) -> list[tuple[str, ...]]:
        rows = [
            (f"vmap, batch {b}", format_seconds(t), format_seconds(t / b))
            for b, t in zip(self.batch_sizes, self.medians, strict=True)
        ]
        if self.loop_median is not None:
            rows.append(
                (
                    f"lax.map over {self.loop_items} items",
                    format_seconds(self.loop_median * self.loop_items),
                    format_seconds(self.loop_median),
                )
            )
        return rows

    def __repr__(self) -> str:
        how = "ratios: paired rounds" if self.paired else "ratios: fastest samples, measured apart"
        return f"PerItemCost(source: {self.source}; {how})\n" + text_table(
            self._rows(), ("call", "per call (median)", "per item")
        )

    def plot(self, *, current: int | None = None, memory: Any = None, axes=None):
        """Per-item time with its spread beside the lax.map loop (and, given a sweep, planned memory)."""
        return plot_per_item(self, current=current, sweep=memory, axes=axes)


def _is_measurement(m: Any) -> bool:
    return hasattr(m, "times") and hasattr(m, "median") and hasattr(m, "min")


def per_item_cost(
    sweep: Any,
    loop: Any = None,
    loop_items: int | None = None,
    *,
    call_at: Callable[[int], Callable[[], Any]] | None = None,
    loop_call: Callable[[], Any] | None = None,
    rounds: int = 15,
    max_seconds: float = 5.0,
) -> PerItemCost:
    """Puts a vmap batch-size sweep beside a ``lax.map`` loop over ``loop_items`` items.

    Args:
      sweep: a :class:`batchlab.measuring.Sweep` over batch sizes (e.g. ``explorer.as_sweep()``).
      loop: the :class:`batchlab.measuring.Measurement` of one call that loops over
        ``loop_items`` items one at a time (``jax.lax.map`` of the item
        function); ``None`` for none (then only the sweep is drawn).
      loop_items: how many items that call processed.
      call_at: ``b -> zero-argument callable`` of the batched function at batch size ``b``.
      loop_call: a zero-argument call of the loop (with ``call_at`` and ``loop_items``);
        without ``loop``, its interleaved samples give the loop's row.
      rounds, max_seconds: passed to :func:`batchlab.measuring.interleaved`.

    Returns:
      A :class:`PerItemCost`.
    """
    if not hasattr(sweep, "ok") or not hasattr(sweep, "values"):
        raise TypeError(
            f"`sweep` must be a batchlab.measuring.Sweep (e.g. explorer.as_sweep()), got {type(sweep).__name__}."
        )
    if loop is not None and not _is_measurement(loop):
        raise TypeError(
            f"`loop` must be a batchlab.measuring.Measurement (from bl.measure), got {type(loop).__name__}."
        )
    if (loop is not None or loop_call is not None) and (
        isinstance(loop_items, bool) or not isinstance(loop_items, int) or loop_items < 1
    ):
        raise ValueError(
            f"`loop_items` must be a positive int (items in the loop call), got {loop_items!r}."
        )
    points = sorted(sweep.ok, key=lambda p: p.value)
    if not points:
        raise ValueError(
            "`sweep` has no measured batch size; measure at least one "
            "(e.g. explorer.update(batch_size=...))."
        )
    samples = None
    if call_at is not None:
        sizes = sorted({int(points[0].value), int(points[-1].value)})
        calls = {f"batch {b}": call_at(b) for b in sizes}
        if loop_call is not None:
            calls["loop"] = loop_call
        if len(calls) >= 2:
            timed = interleaved(calls, rounds=rounds, max_seconds=max_seconds)
            n = {**{f"batch {b}": b for b in sizes}, "loop": loop_items or 1}
            samples = {k: v.per(n[k], f"{k}, per item") for k, v in timed.items()}
    vmap = (
        tuple(int(p.value) for p in points),
        tuple(p.measurement.median for p in points),
        tuple(p.measurement.min for p in points),
        tuple(p.measurement.max for p in points),
    )
    if loop is None and samples is not None and "loop" in samples:
        per = samples["loop"].values
        return PerItemCost(
            *vmap, loop_items, float(np.median(per)), min(per), max(per), samples=samples
        )
    if loop is None:
        return PerItemCost(*vmap, samples=samples)
    n = loop_items
    return PerItemCost(*vmap, n, loop.median / n, loop.min / n, loop.max / n, samples=samples)


def _binary_ticks(ax, which: str = "y") -> None:
    """Log base-2 axis with ticks at powers of two, labelled in binary units (256 KiB, 1 MiB)."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    def label(v: float, _pos: Any = None) -> str:
        unit = 0
        while v >= 1024 and unit < len(BYTE_UNITS) - 1:
            v, unit = v / 1024, unit + 1
        return f"{v:g} {BYTE_UNITS[unit]}"

    axis = getattr(ax, f"{which}axis")
    getattr(ax, f"set_{which}scale")("log", base=2)
    axis.set_major_locator(LogLocator(base=2, numticks=8))
    axis.set_major_formatter(FuncFormatter(label))
    axis.set_minor_formatter(FuncFormatter(lambda *_: ""))


def plot_per_item(cost: PerItemCost, *, current: int | None = None, sweep: Any = None, axes=None):
    """Left: vmap time per item (median, min..max bars) beside the lax.map loop per item.
    Right (with ``sweep``): planned temp and peak bytes from the compiled memory analysis.
    """
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    ncols = 2 if sweep is not None else 1
    if axes is None:
        # tight layout: cheaper than constrained on every explorer redraw
        fig = Figure(figsize=(5.6 * ncols, 5.6), layout="tight")
        axes = fig.subplots(1, ncols, squeeze=False)[0]
    else:
        axes = list(axes) if isinstance(axes, (list, tuple)) else [axes]
        fig = axes[0].figure
    for ax in axes:
        ax.clear()
    ax_t = axes[0]
    b = cost.batch_sizes
    per_item = cost.per_item
    lo = [m / n for m, n in zip(cost.mins, b, strict=True)]
    hi = [m / n for m, n in zip(cost.maxs, b, strict=True)]
    ax_t.errorbar(
        b,
        per_item,
        yerr=[
            [p - q for p, q in zip(per_item, lo, strict=True)],
            [q - p for p, q in zip(per_item, hi, strict=True)],
        ],
        fmt="o-",
        color="tab:blue",
        lw=2,
        capsize=4,
        label="measured per item (median, bars: min..max)",
    )
    if cost.loop_median is not None:
        ax_t.axhline(
            cost.loop_median,
            ls="--",
            color="0.3",
            lw=2,
            label=f"lax.map over {cost.loop_items} items in one call (median)",
        )
        ax_t.axhspan(cost.loop_min, cost.loop_max, color="0.5", alpha=0.2, label="lax.map min..max")
    ax_t.set_yscale("log")
    ax_t.yaxis.set_major_formatter(FuncFormatter(short_seconds))
    ax_t.yaxis.set_minor_formatter(FuncFormatter(lambda *_: ""))
    ax_t.set_ylabel("time per item (log scale)")
    ax_t.set_title("run time per item (wall clock)")
    panels = [ax_t]
    if sweep is not None:
        ax_m = axes[1]
        points = sorted(sweep.ok, key=lambda p: p.value)
        xs = [p.value for p in points]
        ax_m.plot(
            xs,
            [p.measurement.memory.planned_bytes for p in points],
            "s-",
            color="tab:orange",
            lw=2,
            label="planned peak (argument + output + temp)",
        )
        ax_m.plot(
            xs,
            [max(p.measurement.memory.temp_bytes, 1) for p in points],
            "^-",
            color="tab:green",
            lw=2,
            label="planned temp",
        )
        _binary_ticks(ax_m, "y")
        ax_m.set_ylabel("bytes (log₂ scale)")
        ax_m.set_title("planned memory (compiled memory analysis)")
        panels.append(ax_m)
    for ax in panels:
        log2_axis(ax, "x")
        ax.set_xlabel("batch size (log₂ scale)")
        ax.grid(True, alpha=0.3)
        ax.margins(x=0.08, y=0.12)
    if current is not None and current in b:
        i = b.index(current)
        ax_t.plot(
            [b[i]],
            [per_item[i]],
            "o",
            ms=16,
            mfc="none",
            mec="red",
            mew=2.5,
            label=f"current: batch {current}",
        )
        if sweep is not None:
            peak = [p.measurement.memory.planned_bytes for p in points if p.value == current]
            if peak:
                panels[1].plot(
                    [current],
                    peak,
                    "s",
                    ms=16,
                    mfc="none",
                    mec="red",
                    mew=2.5,
                    label=f"current: batch {current}",
                )
    for ax in panels:
        ax.minorticks_off()  # log-axis minor ticks: clutter, and most of a redraw's time
        # below the panel: inside it the legend covered the small batches' points
        # (a fixed place, too: loc="best" searches for a free spot on every redraw)
        ax.legend(fontsize=9.5, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1)
    fig.suptitle(f"{machine_label()}; {cost.source}", fontsize=10.5)
    return fig
