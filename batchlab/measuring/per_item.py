"""What a bigger batch buys per item: fixed per-call cost shared, and vectorized work."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from batchlab._util.format import format_seconds, text_table
from batchlab._util.plotting import log2_axis, new_figure, short_bytes, short_seconds
from batchlab.claims.evidence import Samples
from batchlab.measuring.sampler import interleaved

SOURCE = "wall clock around jax.block_until_ready (batchlab.measure)"
RING = dict(ms=16, mfc="none", mec="red", mew=2.5)  # the current setting, ringed


def machine_label() -> str:
    """Backend, CPU cores and jax version, for the title of a timing plot."""
    return f"{jax.default_backend()}, {os.cpu_count()} CPU cores, jax {jax.__version__}"


@dataclass(frozen=True)
class PerItemCost:
    """A vmap batch-size sweep (seconds per call) beside a lax.map loop (seconds per item).

    A ratio is the median of the per-round ratios when ``samples`` come from one
    interleaved run (``paired``); else the ratio of the fastest samples, which a load burst
    during one side, measured apart, moves least.
    """

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

    @property
    def per_item(self) -> tuple[float, ...]:
        """Median vmap time per item at each batch size."""
        return tuple(t / b for t, b in zip(self.medians, self.batch_sizes, strict=True))

    def _ratio(self, num: str, den: str) -> float:
        """Per-item time of ``num`` over ``den``, each ``"small"``, ``"large"`` or ``"loop"``."""
        if len(self.batch_sizes) < 2:
            raise ValueError(
                f"only batch size(s) {list(self.batch_sizes)} measured: a speed-up needs at "
                "least two."
            )
        if "loop" in (num, den) and self.loop_median is None:
            raise ValueError(
                "no lax.map loop was measured: pass `loop=` and `loop_items=` to per_item_cost."
            )
        small, large = (f"batch {b}" for b in (self.batch_sizes[0], self.batch_sizes[-1]))
        key = {"small": small, "large": large, "loop": "loop"}
        if self.paired and key[num] in self.samples and key[den] in self.samples:
            a, b = self.samples[key[num]].values, self.samples[key[den]].values
            return float(np.median([x / y for x, y in zip(a, b, strict=True)]))
        b = self.batch_sizes
        fast = {"small": self.mins[0] / b[0], "large": self.mins[-1] / b[-1], "loop": self.loop_min}
        return fast[num] / fast[den]

    @property
    def speedup(self) -> float:
        """Per-item time at the smallest batch over the per-item time at the largest."""
        return self._ratio("small", "large")

    @property
    def fixed_cost_factor(self) -> float:
        """A call at the smallest batch against the same work per item in one lax.map call."""
        return self._ratio("small", "loop")

    @property
    def vectorized_factor(self) -> float:
        """lax.map per item against vmap per item at the largest batch."""
        return self._ratio("loop", "large")

    def _rows(self) -> list[tuple[str, ...]]:
        rows = [
            (f"vmap, batch {b}", format_seconds(t), format_seconds(t / b))
            for b, t in zip(self.batch_sizes, self.medians, strict=True)
        ]
        if self.loop_median is not None:
            loop = self.loop_median
            call = format_seconds(loop * self.loop_items)
            rows.append((f"lax.map over {self.loop_items} items", call, format_seconds(loop)))
        return rows

    def __repr__(self) -> str:
        how = "ratios: paired rounds" if self.paired else "ratios: fastest samples, measured apart"
        return f"PerItemCost(source: {self.source}; {how})\n" + text_table(
            self._rows(), ("call", "per call (median)", "per item")
        )

    def plot(self, *, current: int | None = None, memory: Any = None):
        """Left: vmap time per item (median, min..max bars) beside the lax.map loop per item.
        Right (with a :class:`Sweep` as ``memory``): planned temp and peak bytes."""
        from matplotlib.ticker import FuncFormatter, LogLocator

        ncols = 2 if memory is not None else 1
        fig, axes = new_figure(ncols, 5.6, 5.6, layout="tight")  # tight: faster explorer redraws
        axes = np.atleast_1d(axes)
        ax_t, b, per_item = axes[0], self.batch_sizes, np.array(self.per_item)
        spread = [per_item - np.array(self.mins) / b, np.array(self.maxs) / b - per_item]
        label = "measured per item (median, bars: min..max)"
        ax_t.errorbar(b, per_item, spread, fmt="o-", color="tab:blue", lw=2, capsize=4, label=label)
        if self.loop_median is not None:
            label = f"lax.map over {self.loop_items} items in one call (median)"
            ax_t.axhline(self.loop_median, ls="--", color="0.3", lw=2, label=label)
            ax_t.axhspan(
                self.loop_min, self.loop_max, color="0.5", alpha=0.2, label="lax.map min..max"
            )
        ax_t.set_yscale("log")
        ax_t.yaxis.set_major_formatter(FuncFormatter(short_seconds))
        ax_t.set(ylabel="time per item (log scale)", title="run time per item (wall clock)")
        ring = f"current: batch {current}"
        if current in b:
            ax_t.plot([current], [per_item[b.index(current)]], "o", **RING, label=ring)
        if memory is not None:
            ax_m = axes[1]
            points = sorted(memory.ok, key=lambda p: p.value)
            xs, plans = [p.value for p in points], [p.measurement.memory for p in points]
            peak = [m.planned_bytes for m in plans]
            label = "planned peak (argument + output + temp)"
            ax_m.plot(xs, peak, "s-", color="tab:orange", lw=2, label=label)
            temp = [max(m.temp_bytes, 1) for m in plans]
            ax_m.plot(xs, temp, "^-", color="tab:green", lw=2, label="planned temp")
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
    sweep: Any,
    loop: Any = None,
    loop_items: int | None = None,
    *,
    call_at: Callable[[int], Callable[[], Any]] | None = None,
    loop_call: Callable[[], Any] | None = None,
) -> PerItemCost:
    """Puts a vmap batch-size sweep beside a ``lax.map`` loop over ``loop_items`` items.

    Args:
      sweep: a :class:`batchlab.measuring.Sweep` over batch sizes (e.g. ``explorer.as_sweep()``).
      loop: the :class:`batchlab.measuring.Measurement` of one ``jax.lax.map`` call over
        ``loop_items`` items, or ``None``.
      call_at: ``b -> zero-argument callable`` of the batched function at batch size ``b``:
        the smallest and largest batch are then timed again, interleaved.
      loop_call: a zero-argument call of the loop, interleaved with them; without
        ``loop``, its samples give the loop's row.
    """
    if not hasattr(sweep, "ok") or not hasattr(sweep, "values"):
        raise TypeError(
            "`sweep` must be a batchlab.measuring.Sweep (e.g. explorer.as_sweep()), got "
            f"{type(sweep).__name__}."
        )
    if loop is not None and not all(hasattr(loop, k) for k in ("times", "median", "min")):
        raise TypeError(
            "`loop` must be a batchlab.measuring.Measurement (from bl.measure), got "
            f"{type(loop).__name__}."
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
        items = {f"batch {b}": b for b in sorted({int(points[0].value), int(points[-1].value)})}
        calls = {k: call_at(b) for k, b in items.items()}
        if loop_call is not None:
            calls["loop"], items["loop"] = loop_call, loop_items
        if len(calls) >= 2:
            timed = interleaved(calls)
            samples = {k: v.per(items[k], f"{k}, per item") for k, v in timed.items()}
    ms = [p.measurement for p in points]
    vmap = [tuple(int(p.value) for p in points)]
    vmap += [tuple(getattr(m, k) for m in ms) for k in ("median", "min", "max")]
    loop_row: tuple = ()  # (items, then median, min and max per item)
    if loop is not None:
        loop_row = (loop_items, *(getattr(loop, k) / loop_items for k in ("median", "min", "max")))
    elif samples is not None and "loop" in samples:
        per = samples["loop"].values
        loop_row = (loop_items, float(np.median(per)), min(per), max(per))
    return PerItemCost(*vmap, *loop_row, samples=samples)
