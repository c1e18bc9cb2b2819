"""The result of :func:`batchlab.measure`: times per call, compile time apart, memory beside."""

from __future__ import annotations

import html
import statistics
from dataclasses import dataclass, field

from batchlab._util.format import format_bytes, format_seconds, html_table
from batchlab.measuring.live import DeviceMemory, LiveMemory
from batchlab.measuring.memory import MemoryEstimate

PEAK_NOTE = (
    "device peak_bytes_in_use is process-wide and cannot be reset: it is the highest "
    "figure since the process started; use measure(..., isolated=True) for an exact peak"
)


@dataclass(frozen=True)
class Measurement:
    """What :func:`measure` found for one function and one set of inputs."""

    name: str
    trace_lower_seconds: float
    compile_seconds: float
    first_call_seconds: float
    times: tuple[float, ...]
    number: int
    memory: MemoryEstimate
    live: LiveMemory
    compiles: int
    device_before: DeviceMemory | None = None
    device_after: DeviceMemory | None = None
    isolated: bool = False
    host_peak_rss_bytes: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    source: str = "wall clock around jax.block_until_ready (time.perf_counter)"

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def min(self) -> float:
        return min(self.times)

    @property
    def max(self) -> float:
        return max(self.times)

    @property
    def runs(self) -> int:
        """Number of timing samples."""
        return len(self.times)

    @property
    def calls(self) -> int:
        """Number of timed calls (samples x calls per sample)."""
        return len(self.times) * self.number

    @property
    def spread(self) -> float:
        """(max - min) / median of the samples: how noisy the timing was."""
        return (self.max - self.min) / self.median if self.median > 0 else 0.0

    @property
    def cached(self) -> bool:
        """True when no XLA compilation happened: JAX reused a compiled executable."""
        return self.compiles == 0

    @property
    def _cache_note(self) -> str:
        return " (cached: 0 compilations)" if self.cached else ""

    @property
    def device_peak_bytes(self) -> int | None:
        """Process-wide device peak after the runs (see ``notes``)."""
        return None if self.device_after is None else self.device_after.peak_bytes_in_use

    def _rows(self) -> list[tuple[str, str, str]]:
        rows = [
            ("trace + lower", format_seconds(self.trace_lower_seconds), "wall clock"),
            ("compile", format_seconds(self.compile_seconds) + self._cache_note, "wall clock"),
            (
                "run (median)",
                format_seconds(self.median),
                f"wall clock, {self.runs} samples x {self.number} calls",
            ),
            (
                "run (min .. max)",
                f"{format_seconds(self.min)} .. {format_seconds(self.max)}",
                "wall clock",
            ),
            ("planned peak", format_bytes(self.memory.planned_bytes), "compiled memory analysis"),
            ("planned temp", format_bytes(self.memory.temp_bytes), "compiled memory analysis"),
            ("live JAX arrays", format_bytes(self.live.live_array_bytes), "jax.live_arrays()"),
            ("host RSS", format_bytes(self.live.host_rss_bytes), "host process (psutil)"),
        ]
        if self.device_after is not None:
            rows.append(
                (
                    "device in use",
                    format_bytes(self.device_after.bytes_in_use),
                    "device memory stats",
                )
            )
            rows.append(
                (
                    "device peak",
                    format_bytes(self.device_peak_bytes),
                    "device memory stats (process-wide)",
                )
            )
        if self.host_peak_rss_bytes is not None:
            rows.append(
                (
                    "host peak RSS",
                    format_bytes(self.host_peak_rss_bytes),
                    "fresh subprocess (ru_maxrss)",
                )
            )
        return rows

    def __repr__(self) -> str:
        return (
            f"Measurement({self.name}: run {format_seconds(self.median)} median "
            f"[{format_seconds(self.min)} .. {format_seconds(self.max)}, {self.runs} samples x {self.number}], "
            f"compile {format_seconds(self.compile_seconds)}{self._cache_note}, planned peak {format_bytes(self.memory.planned_bytes)})"
        )

    def _repr_html_(self) -> str:
        caption = f"Measurement of {self.name} on {self.memory.backend}"
        table = html_table(self._rows(), header=("figure", "value", "source"), caption=caption)
        notes = "".join(
            f"<div style='font-size:smaller'>note: {html.escape(n)}</div>" for n in self.notes
        )
        return table + notes
