"""A memory gauge: live device memory on a GPU/TPU, planned figures on a CPU (and it says so).

With allocator statistics the gauge polls :func:`batchlab.device_memory` every ``interval``
seconds. The CPU backend keeps none (``memory_stats()`` is ``None``): there it shows the
planned peak of the current setting (XLA's compiled memory analysis) and the bytes of live
JAX arrays, labelled as such; a figure a backend cannot give is absent, never faked.
:meth:`MemoryGauge.read` returns the :class:`GaugeReading` the widget shows.
"""

from __future__ import annotations

import html
import threading
from dataclasses import dataclass
from typing import Any

from batchlab._util.format import Rows, format_bytes
from batchlab.measuring.live import device_memory, live_memory
from batchlab.measuring.memory import MemoryEstimate


@dataclass(frozen=True)
class GaugeReading(Rows):
    """One reading of the gauge; ``None`` marks a figure this backend cannot give."""

    device: str
    in_use_bytes: int | None
    peak_bytes: int | None
    limit_bytes: int | None
    planned_peak_bytes: int | None
    live_array_bytes: int
    note: str

    @property
    def live(self) -> bool:
        """True when the device's allocator reported live figures (GPU/TPU)."""
        return self.in_use_bytes is not None

    def _rows(self) -> list[tuple[str, str, str]]:
        rows = []
        if self.live:
            stats = "device memory stats"
            rows += [
                ("device in use", format_bytes(self.in_use_bytes), stats),
                ("device peak", format_bytes(self.peak_bytes), f"{stats} (process-wide)"),
                ("device limit", format_bytes(self.limit_bytes), stats),
            ]
        if self.planned_peak_bytes is not None:
            rows.append(
                ("planned peak", format_bytes(self.planned_peak_bytes), "compiled memory analysis")
            )
        rows.append(("live JAX arrays", format_bytes(self.live_array_bytes), "jax.live_arrays()"))
        return rows

    _header = ("figure", "value", "source")

    def _title(self) -> str:
        return f"{self.device}: {self.note}"


class MemoryGauge:
    """A live device-memory gauge (GPU/TPU), or the planned figures with a note (CPU).

    Args:
      interval: seconds between polls of the device's allocator statistics.
      device: a ``jax.Device`` or an index into ``jax.devices()`` (default: the first).
      explorer: an explorer to follow: after each update the gauge plans from its
        ``result.memory`` (a :class:`batchlab.measuring.MemoryEstimate`) and refreshes.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from batchlab import memory_estimate
      >>> gauge = MemoryGauge()
      >>> gauge.plan(memory_estimate(lambda x: x * 2, jnp.ones(256)))
      >>> r = gauge.read()
      >>> r.planned_peak_bytes >= 1024, r.live == (jax.default_backend() != "cpu")
      (True, True)
    """

    def __init__(self, *, interval: float = 1.0, device: Any = None, explorer: Any = None) -> None:
        if not interval > 0:
            raise ValueError(f"`interval` must be a positive number of seconds, got {interval!r}.")
        self.interval = float(interval)
        self.device = device
        self.estimate: MemoryEstimate | None = None
        self.reading: GaugeReading | None = None
        self._ui = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if explorer is not None:
            self.follow(explorer)

    def plan(self, estimate: MemoryEstimate | None) -> None:
        """Shows ``estimate``'s planned peak beside the live figures (``None`` clears it)."""
        if estimate is not None and not isinstance(estimate, MemoryEstimate):
            raise TypeError(
                f"`estimate` must be a batchlab.measuring.MemoryEstimate (from memory_estimate or "
                f"measure(...).memory), got {type(estimate).__name__}."
            )
        self.estimate = estimate
        self.read()

    def follow(self, explorer: Any) -> None:
        """Refreshes after every update of ``explorer``, planning from ``result.memory`` when it has one."""
        if not hasattr(explorer, "on_update"):
            raise TypeError(
                f"`explorer` must be a batchlab.widgets.Explorer, got {type(explorer).__name__}."
            )

        def refresh(ex: Any) -> None:
            memory = getattr(ex.result, "memory", None)
            self.plan(memory if isinstance(memory, MemoryEstimate) else None)

        explorer.on_update(refresh)
        if explorer.result is not None:
            refresh(explorer)

    def read(self) -> GaugeReading:
        """Reads the figures now, shows them in the widget (if built) and returns them."""
        stats = device_memory(self.device)
        planned = None if self.estimate is None else self.estimate.planned_bytes
        live = live_memory().live_array_bytes
        if stats is not None:
            figures = (stats.bytes_in_use, stats.peak_bytes_in_use, stats.bytes_limit)
            note = f"live, polled every {self.interval:g} s"
            reading = GaugeReading(stats.device, *figures, planned, live, note)
        else:
            import jax

            dev = jax.devices()[0] if self.device is None else self.device
            name = f"{dev.platform}:{dev.id}" if hasattr(dev, "platform") else str(dev)
            note = (
                f"no live device figures: memory_stats() is None on {name.split(':')[0]}; "
                "showing planned figures"
            )
            reading = GaugeReading(name, None, None, None, planned, live, note)
        self.reading = reading
        if self._ui is not None:
            self._ui.value = _gauge_html(reading)
        return reading

    # ------------------------------------------------------------- polling
    @property
    def polling(self) -> bool:
        """True while a background thread polls the device."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> bool:
        """Starts polling (only where the device reports live figures); returns whether it polls."""
        if self.polling or device_memory(self.device) is None:
            return self.polling
        self._stop.clear()

        def loop() -> None:
            while not self._stop.wait(self.interval):
                try:
                    self.read()
                except Exception:  # the kernel is shutting down, or the device went away
                    return

        self._thread = threading.Thread(target=loop, name="batchlab-memory-gauge", daemon=True)
        self._thread.start()
        return True

    def stop(self) -> None:
        """Stops polling."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * self.interval + 1)
        self._thread = None

    @property
    def widget(self):
        """The ipywidgets front end (built on first use; starts polling on a GPU/TPU)."""
        if self._ui is None:
            import ipywidgets as w

            self._ui = w.HTML(layout=w.Layout(min_height="3em"))
            self._ui.add_class("batchlab-gauge")
            self.read()
            self.start()
        return self._ui

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


def _bar(label: str, value: int | None, full: int, color: str, source: str) -> str:
    if value is None:
        return ""
    width = 0 if full <= 0 else max(0.5, min(100.0, 100.0 * value / full))
    return (
        f"<div style='display:flex;align-items:center;gap:8px;margin:2px 0'>"
        f"<span style='width:150px'>{html.escape(label)}</span>"
        f"<span style='display:inline-block;width:260px;height:14px;background:#eee;border-radius:3px'>"
        f"<span style='display:block;width:{width:.1f}%;height:100%;background:{color};border-radius:3px'></span>"
        f"</span><b>{format_bytes(value)}</b><span style='color:#666;font-size:smaller'>{html.escape(source)}</span>"
        f"</div>"
    )


def _gauge_html(r: GaugeReading) -> str:
    if r.live:
        full = r.limit_bytes or max(
            v or 0 for v in (r.in_use_bytes, r.peak_bytes, r.planned_peak_bytes)
        )
        bars = (
            _bar("device in use", r.in_use_bytes, full, "#1f77b4", "device memory stats")
            + _bar("device peak", r.peak_bytes, full, "#9467bd", "process-wide peak")
            + _bar(
                "planned peak", r.planned_peak_bytes, full, "#ff7f0e", "compiled memory analysis"
            )
            + f"<div style='color:#666;font-size:smaller'>bars relative to the limit "
            f"{format_bytes(r.limit_bytes)}</div>"
        )
        head = f"&#9679; <b>live</b> device memory on {html.escape(r.device)}"
    else:
        full = max(r.planned_peak_bytes or 0, r.live_array_bytes, 1)
        bars = _bar(
            "planned peak", r.planned_peak_bytes, full, "#ff7f0e", "compiled memory analysis"
        ) + _bar("live JAX arrays", r.live_array_bytes, full, "#2ca02c", "jax.live_arrays()")
        head = f"&#9675; <b>planned</b> figures on {html.escape(r.device)}"
    return (
        f"<div class='batchlab-gauge-body' data-live='{str(r.live).lower()}'>{head} "
        f"<span style='color:#666;font-size:smaller'>({html.escape(r.note)})</span>{bars}</div>"
    )
