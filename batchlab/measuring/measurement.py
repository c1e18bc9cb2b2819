"""The result of :func:`batchlab.measure`: times per call, compile time apart, memory beside."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from batchlab._util.format import Rows, format_bytes, format_seconds
from batchlab.measuring.live import DeviceMemory, LiveMemory
from batchlab.measuring.memory import MemoryEstimate

PEAK_NOTE = "device peak_bytes_in_use is process-wide: the highest since the process started"


@dataclass(frozen=True)
class Measurement(Rows):
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
    device_after: DeviceMemory | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    source: str = "wall clock around jax.block_until_ready (time.perf_counter)"
    _header = ("figure", "value", "source")

    median = property(lambda self: statistics.median(self.times))
    min = property(lambda self: min(self.times))
    max = property(lambda self: max(self.times))
    runs = property(lambda self: len(self.times))  # timing samples

    def _rows(self) -> list[tuple[str, str, str]]:
        cached = " (cached: 0 compilations)" if self.compiles == 0 else ""
        samples = f"wall clock, {self.runs} samples x {self.number} calls"
        span = f"{format_seconds(self.min)} .. {format_seconds(self.max)}"
        plan, device = "compiled memory analysis", "device memory stats"
        rows = [
            ("trace + lower", format_seconds(self.trace_lower_seconds), "wall clock"),
            ("compile", format_seconds(self.compile_seconds) + cached, "wall clock"),
            ("run (median)", format_seconds(self.median), samples),
            ("run (min .. max)", span, "wall clock"),
            ("planned peak", format_bytes(self.memory.planned_bytes), plan),
            ("planned temp", format_bytes(self.memory.temp_bytes), plan),
            ("live JAX arrays", format_bytes(self.live.live_array_bytes), "jax.live_arrays()"),
            ("host RSS", format_bytes(self.live.host_rss_bytes), "host process (psutil)"),
        ]
        if self.device_after is not None:
            rows.append(("device in use", format_bytes(self.device_after.bytes_in_use), device))
            peak = format_bytes(self.device_after.peak_bytes_in_use)
            rows.append(("device peak", peak, f"{device} (process-wide)"))
        return rows

    def __repr__(self) -> str:
        rows = {k: v for k, v, _ in self._rows()}
        return (
            f"Measurement({self.name}: run {rows['run (median)']} median "
            f"[{rows['run (min .. max)']}, {self.runs} samples x {self.number}], "
            f"compile {rows['compile']}, planned peak {rows['planned peak']})"
        )

    def _title(self) -> str:
        return f"Measurement of {self.name} on {self.memory.backend}"

    def _notes(self) -> tuple[str, ...]:
        return tuple(f"note: {n}" for n in self.notes)
