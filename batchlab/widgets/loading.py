"""Explorers of loading (10: access pattern -> throughput) and scaling out (11: devices)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from matplotlib.ticker import FuncFormatter

from batchlab._util.backend import machine_label
from batchlab._util.checks import check_bool, check_callable, check_positive_ints
from batchlab._util.format import format_bytes, format_count, format_seconds
from batchlab._util.plotting import bytes_axis, log2_axis, new_figure
from batchlab.loading.files import METHODS, ORDERS, TRANSFERS, Dataset
from batchlab.loading.speed import Ceiling, Throughput, format_rate, measure_loading
from batchlab.scaling.speedup import ScalingPoint, measure_scaling
from batchlab.widgets.controls import choice, control
from batchlab.widgets.explorer import Explorer

_dropdown = functools.partial(choice, width="220px")


class LoadingExplorer(Explorer):
    """Access pattern -> throughput (``measure_loading``, ``step`` per batch) vs ``ceiling``."""

    def __init__(
        self,
        dataset: Dataset,
        batch_sizes: Sequence[int],
        *,
        step: Callable | None = None,
        repeat: int = 3,
        ceiling: Ceiling,
    ) -> None:
        batch_sizes = check_positive_ints(batch_sizes, "batch_sizes")
        if not isinstance(ceiling, Ceiling):
            raise TypeError(
                f"`ceiling` must be a Ceiling from measure_ceiling(...), got {ceiling!r}."
            )
        self.ceiling = ceiling  # one per run: text and plot quote the same number
        self.dataset, self.stepped = dataset, step is not None  # what the plot's title names

        def compute(prefetch: bool, **setting: Any) -> Throughput:
            kw = dict(step=step, prefetch=2 if prefetch else 0, repeat=repeat, max_time=0.3)
            return measure_loading(dataset, **setting, **kw)

        controls = {
            "batch_size": _dropdown(batch_sizes, "batch size"),
            "method": _dropdown(METHODS, "method"),
            "order": _dropdown(ORDERS, "order"),
            "transfer": _dropdown(TRANSFERS, "transfer per"),
            "prefetch": control("Checkbox", description="prefetch", indent=False),
            "sync": control("Checkbox", description="sync every step", indent=False),
        }
        start = (batch_sizes[0], "bulk", "contiguous", "batch", False, False)
        super().__init__(
            compute,
            dict(zip(controls, start, strict=True)),
            controls=controls,
            draw=_draw_throughput,
            describe=self._describe,
            title="Loading explorer",
        )
        self.update()

    @property
    def measured(self) -> dict[str, Throughput]:
        """Every setting measured so far, by label."""
        return {r.label: r for r in self.cache.values()}

    def _describe(self, r: Throughput) -> str:
        memcpy = self.ceiling.memcpy
        return (
            f"<b>{format_count(r.items_per_s)} items/s</b>, {format_rate(r.bytes_per_s)} = "
            f"<b>{r.bytes_per_s / memcpy.bytes_per_s:.1%}</b> of the reference {memcpy.label}: "
            f"{format_rate(memcpy.bytes_per_s)} (wall clock, same run; {_where(self)})"
        )


def _where(ex: LoadingExplorer, short: bool = False) -> str:
    """Where the dataset's bytes can come from, against the last-level cache."""
    cache, size = ex.ceiling.cache_bytes, f"a {format_bytes(ex.dataset.total_bytes)} dataset"
    if cache is None or ex.dataset.total_bytes > cache:
        where = f"beyond the {format_bytes(cache)} last-level cache" if cache else "cache unknown"
        return f"{size}, {where}"
    tail = "the lines are no ceiling for it" if short else "its rows may come from the cache"
    return f"{size}, inside the {format_bytes(cache)} last-level cache: {tail}"


def _draw_throughput(ex: LoadingExplorer):
    results, ceiling = ex.measured, ex.ceiling
    labels = list(results)
    fig, ax = new_figure(1, width=10, height=2.6 + 0.45 * len(labels))
    values = [r.bytes_per_s for r in results.values()]
    low = [r.slowest_bytes_per_s for r in results.values()]
    rows = range(len(labels))
    ax.barh(rows, values, color=["tab:red" if k == ex.result.label else "tab:blue" for k in labels])
    spread = [[v - lo for v, lo in zip(values, low, strict=True)], [0] * len(labels)]
    bars = dict(fmt="none", ecolor="black", capsize=4, label="spread: slowest to best pass")
    ax.errorbar(values, rows, xerr=spread, **bars)
    ax.set_yticks(rows, labels, fontsize=11)
    ax.invert_yaxis()
    for t, style in ((ceiling.memcpy, "--"), (ceiling.file_read, ":")):
        ax.axvline(t.bytes_per_s, color="black", ls=style, lw=2, label=f"reference: {t.label}")
    top = max([ceiling.memcpy.bytes_per_s, ceiling.file_read.bytes_per_s, *values])
    ax.set(xscale="log", xlim=(min([*low, top]) / 3, top * 3))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_rate(v).replace(".00 ", " ")))
    ax.set_xlabel("dataset bytes per second of a pass (log scale; wall clock; bar: best pass)")
    fig.legend(loc="outside lower center", fontsize=9, frameon=False)  # constrained: not clipped
    ax.grid(True, axis="x", alpha=0.3)
    what = "loading" + (" + a step per batch" if ex.stepped else ", no compute")
    title = f"{what}, beside two reference lines (red: current setting)\n{_where(ex, True)}"
    ax.set_title(f"{title}\n{machine_label()}", fontsize=11)
    return fig


class ScalingExplorer(Explorer):
    """Device count and batch size -> per-device planned memory and run time of ``fn``.

    ``fn(batch, *params)`` on ``make_batch(n)`` sharded over ``devices`` (``params`` replicated).
    ``timed=False``: no run time in plot and text (simulated devices share the host's cores).

    Example:
      >>> import jax.numpy as jnp
      >>> ex = ScalingExplorer(lambda b: b * 2, lambda n: jnp.ones((n, 4)), [3, 8], [1])
      >>> p = ex.update(batch_size=3)
      >>> p.rows_per_device, p.matches_single_device
      (3, True)
    """

    def __init__(
        self,
        fn: Callable,
        make_batch: Callable[[int], Any],
        batch_sizes: Sequence[int],
        device_counts: Sequence[int],
        *,
        params: tuple = (),
        devices: Sequence[Any] | None = None,
        timed: bool = True,
    ) -> None:
        check_callable(fn)
        check_callable(make_batch, "make_batch")
        self.timed = check_bool(timed, "timed")
        batch_sizes = check_positive_ints(batch_sizes, "batch_sizes")
        device_counts = check_positive_ints(device_counts, "device_counts")

        def compute(n_devices: int, batch_size: int) -> ScalingPoint:
            kw = dict(params=params, devices=devices, repeat=5)
            return measure_scaling(fn, make_batch(batch_size), [n_devices], **kw).points[0]

        super().__init__(
            compute,
            {"n_devices": device_counts[0], "batch_size": batch_sizes[0]},
            controls={
                "n_devices": _dropdown(device_counts, "devices"),
                "batch_size": _dropdown(batch_sizes, "batch size"),
            },
            draw=_draw_scaling,
            describe=functools.partial(_describe_scaling, timed=self.timed),
            title="Scaling explorer",
        )
        self.update()

    def points(self, batch_size: int) -> list[ScalingPoint]:
        """Device counts measured so far for one batch size, in order."""
        pts = [p for k, p in self.cache.items() if dict(k)["batch_size"] == repr(batch_size)]
        return sorted(pts, key=lambda p: p.n_devices)


def _draw_scaling(ex: ScalingExplorer):
    fig, axes = new_figure(2 if ex.timed else 1, width=5.0 if ex.timed else 6.0, height=3.6)
    ax_m, *ax_t = axes if ex.timed else [axes]
    pts = ex.points(ex.params["batch_size"])
    n = [p.n_devices for p in pts]
    ax_m.plot(n, [p.peak_bytes for p in pts], "s-", color="tab:orange")
    bytes_axis(ax_m.yaxis)
    ax_m.set_ylabel("planned peak per device")
    ax_m.set_title("compiled memory analysis", fontsize=11)
    for ax in ax_t:  # timed=False: no run-time panel
        ax.plot(n, [p.seconds * 1e3 for p in pts], "o-", color="tab:blue")
        ax.set_ylabel("run time per batch (ms)")
        ax.set_title(f"wall clock, median\n{machine_label()}", fontsize=10)
    for ax in (ax_m, *ax_t):
        log2_axis(ax)
        ax.set(xticks=n, xlabel="devices (log scale)", ylim=(0, None))
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"batch of {ex.params['batch_size']} sharded over the devices", fontsize=12)
    return fig


def _describe_scaling(p: ScalingPoint, *, timed: bool = True) -> str:
    run = f"run {format_seconds(p.seconds)} (wall clock); " if timed else ""
    return (
        f"{p.n_devices} device(s), {p.rows_per_device} rows each: planned peak "
        f"<b>{format_bytes(p.peak_bytes)}</b> per device (compiled memory analysis); {run}"
        f"equals one device: {p.matches_single_device}"
    )
