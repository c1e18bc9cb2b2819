"""Measure one function over a range of sizes, keeping every finished point."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from batchlab._util.checks import check_callable
from batchlab._util.format import Rows, format_bytes, format_seconds
from batchlab._util.plotting import log2_axis, new_figure, short_bytes, short_seconds
from batchlab.measuring.measurement import Measurement
from batchlab.measuring.timing import measure

RING = dict(ms=16, mfc="none", mec="red", mew=2.5)  # the current setting, ringed


@dataclass
class SweepPoint:
    value: Any
    measurement: Measurement | None
    error: str | None = None


@dataclass
class Sweep(Rows):
    """Measurements of one function at several values of one parameter."""

    name: str
    parameter: str
    points: list[SweepPoint] = field(default_factory=list)
    _header = ("value", "run (median)", "per item", "planned peak", "compile")

    @property
    def ok(self) -> list[SweepPoint]:
        return [p for p in self.points if p.measurement is not None]

    @property
    def values(self) -> list[Any]:
        return [p.value for p in self.ok]

    @property
    def medians(self) -> list[float]:
        return [p.measurement.median for p in self.ok]

    @property
    def peak_bytes(self) -> list[int]:
        return [p.measurement.memory.planned_bytes for p in self.ok]

    @property
    def failures(self) -> list[SweepPoint]:
        return [p for p in self.points if p.measurement is None]

    def _rows(self) -> list[tuple]:
        rows = []
        for p in self.points:
            m = p.measurement
            if m is None:
                rows.append((p.value, "failed", "", "", p.error or ""))
                continue
            per_item = m.median / p.value if isinstance(p.value, int) and p.value > 0 else None
            peak = format_bytes(m.memory.planned_bytes)
            times = (format_seconds(t) for t in (m.median, per_item))
            rows.append((p.value, *times, peak, format_seconds(m.compile_seconds)))
        return rows

    def _title(self) -> str:
        return f"{self.name} over {self.parameter}"

    def _tables(self) -> list:
        caption = f"{self.name}: runtime (wall clock) and planned peak (compiled memory analysis)"
        return [(caption, self._rows(), (self.parameter, *self._header[1:]))]

    def plot(self, *, ax=None, current: Any = None):
        """Runtime per item and planned peak memory against the parameter."""
        return plot_sweep(self, axes=ax, current=current)


def sweep(
    fn: Callable,
    make_args: Callable[[Any], Sequence[Any]],
    values: Iterable[Any],
    *,
    parameter: str = "batch_size",
    progress: bool = False,
    **measure_options: Any,
) -> Sweep:
    """Measures ``fn(*make_args(v))`` for each ``v`` in ``values``.

    A failing first point is a usage error and raises; a later failure (e.g. out of memory)
    is kept as a point with its message, and Ctrl-C keeps the finished points.

    Args:
      fn: the function to measure.
      make_args: builds the positional arguments for one value.
      values: the values to sweep, e.g. batch sizes.
      parameter: the name of what is swept, for tables and plots.
      progress: show a tqdm progress bar.
      **measure_options: passed to :func:`batchlab.measure` (e.g. ``max_time``).

    Example:
      >>> import jax.numpy as jnp
      >>> s = sweep(lambda x: x.sum(), lambda n: (jnp.ones(n),), [8, 16], repeat=3)
      >>> s.values, [p // 4 for p in s.peak_bytes][0] >= 8
      ([8, 16], True)
    """
    check_callable(fn)
    check_callable(make_args, "make_args")
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(
            f"`values` must be a list of values to sweep (e.g. values=[1, 2, 4, 8]), got "
            f"{type(values).__name__} {values!r:.40}; for one value pass [{values!r:.20}]."
        )
    values = list(values)
    if not values:
        raise ValueError("`values` is empty: give at least one value to sweep, e.g. [1, 2, 4].")
    if not isinstance(parameter, str):
        raise TypeError(f"`parameter` must be a string (a name for tables), got {parameter!r}.")
    result = Sweep(name=getattr(fn, "__name__", "fn"), parameter=parameter)
    if progress:
        from tqdm.auto import tqdm

        values = tqdm(values, desc=f"sweeping {parameter}")
    for v in values:
        try:
            args = make_args(v)
            args = args if isinstance(args, (tuple, list)) else (args,)
            result.points.append(SweepPoint(v, measure(fn, *args, **measure_options)))
        except KeyboardInterrupt:
            break  # keep what is finished
        except (TypeError, ValueError) as e:
            if not result.points:
                raise  # the first point failing is a usage error, not a data point
            result.points.append(SweepPoint(v, None, f"{type(e).__name__}: {e}"))
        except Exception as e:  # e.g. XlaRuntimeError RESOURCE_EXHAUSTED
            first_line = str(e).splitlines()[0]
            result.points.append(SweepPoint(v, None, f"{type(e).__name__}: {first_line}"))
    return result


def plot_sweep(sweep: Any, *, axes=None, current: Any = None):
    """Two panels: run time per item (wall clock), planned peak (compiled memory analysis)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    fig, axes = new_figure(2, layout="tight") if axes is None else (axes[0].figure, axes)
    ax_t, ax_m = axes
    for ax in axes:
        ax.clear()
    values, peaks = sweep.values, sweep.peak_bytes
    per_item = [m / v if v else m for m, v in zip(sweep.medians, values, strict=True)]
    ax_t.plot(values, per_item, "o-", color="tab:blue", lw=2)
    ax_t.set(ylabel="run time per item", title="run time per item (wall clock, median)")
    ax_m.plot(values, peaks, "s-", color="tab:orange", lw=2)
    ax_m.set(ylabel="planned peak memory", title="planned peak (compiled memory analysis)")
    if per_item and min(per_item) > 0 and max(per_item) / min(per_item) >= 10:
        ax_t.set_yscale("log")
    if peaks and min(peaks) > 0 and max(peaks) / min(peaks) >= 16:
        ax_m.set_yscale("log", base=2)
    ax_t.yaxis.set_major_formatter(FuncFormatter(short_seconds))
    ax_t.yaxis.set_minor_formatter(NullFormatter())
    ax_m.yaxis.set_major_formatter(FuncFormatter(short_bytes))
    for ax, ys, marker in ((ax_t, per_item, "o"), (ax_m, peaks, "s")):
        ax.set_xlabel(sweep.parameter.replace("_", " "))
        if values and min(values) > 0 and max(values) / min(values) >= 16:
            log2_axis(ax, "x")
        ax.grid(True, alpha=0.3)
        ax.minorticks_off()  # log-axis minor ticks: clutter, and most of a redraw's time
        if current in values:
            ax.plot([current], [ys[values.index(current)]], marker, **RING)
    return fig
