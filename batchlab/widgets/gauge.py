"""A memory gauge: live device memory on a GPU/TPU, planned figures on a CPU (and it says so).

The CPU backend keeps no allocator statistics (``memory_stats()`` is ``None``): there the
gauge shows the current setting's planned peak and the bytes of live JAX arrays, labelled as
such; a figure a backend cannot give is absent, never faked.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import jax

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

    _header = ("figure", "value", "source")

    @property
    def live(self) -> bool:
        """True when the device's allocator reported live figures (GPU/TPU)."""
        return self.in_use_bytes is not None

    def _rows(self) -> list[tuple[str, str, str]]:
        stats = "device memory stats"
        figures = [
            ("device in use", self.in_use_bytes, stats),
            ("device peak", self.peak_bytes, f"{stats} (process-wide)"),
            ("device limit", self.limit_bytes, stats),
            ("planned peak", self.planned_peak_bytes, "compiled memory analysis"),
            ("live JAX arrays", self.live_array_bytes, "jax.live_arrays()"),
        ]
        return [(k, format_bytes(v), s) for k, v, s in figures if v is not None]

    def _title(self) -> str:
        return f"{self.device}: {self.note}"


class MemoryGauge:
    """A live device-memory gauge (GPU/TPU), or the planned figures with a note (CPU).

    Args:
      interval: seconds between polls of :func:`batchlab.device_memory`.
      device: a ``jax.Device`` or an index into ``jax.devices()`` (default: the first).
      explorer: an explorer to follow: its ``result.memory`` is planned after each update.

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
        self.interval, self.device = float(interval), device
        self.estimate: MemoryEstimate | None = None
        self.reading: GaugeReading | None = None
        self._ui = self._thread = None
        self._stop = threading.Event()
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
        """Refreshes after every update of ``explorer``, planning from its ``result.memory``."""
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
            self.reading = GaugeReading(stats.device, *figures, planned, live, note)
        else:
            dev = jax.devices()[0] if self.device is None else self.device
            name = f"{dev.platform}:{dev.id}" if hasattr(dev, "platform") else str(dev)
            note = (
                f"no live device figures: memory_stats() is None on {name.split(':')[0]}; "
                "showing planned figures"
            )
            self.reading = GaugeReading(name, None, None, None, planned, live, note)
        if self._ui is not None:
            self._ui.value = _gauge_html(self.reading)
        return self.reading

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


def _gauge_html(r: GaugeReading) -> str:
    kind = "&#9679; <b>live</b> device memory" if r.live else "&#9675; <b>planned</b> figures"
    live = str(r.live).lower()
    return f"<div class='batchlab-gauge-body' data-live='{live}'>{kind}{r._repr_html_()}</div>"
