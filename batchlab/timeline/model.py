"""What ran when: JAX's own profiler trace of a cell, parsed and drawn inside the notebook."""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass
from pathlib import Path

import jax

from batchlab._util.format import Rows, format_seconds
from batchlab.timeline.intervals import intersect_length, merge, subtract, union_length
from batchlab.timeline.parse import Lane, MemoryCurve, Span, memory_curve, parse_events, read_events
from batchlab.timeline.plot import plot_timeline

NO_MEMORY_CPU = (
    "no allocator events: XLA:CPU records none (its buffers come from malloc); on a GPU the "
    "BFC allocator's MemoryAllocation events give the curve (unrun on GPU in this kit's CI)"
)


@dataclass(frozen=True)
class Timeline(Rows):
    """A parsed profiler trace: lanes, spans and what they add up to. Times in seconds."""

    lanes: tuple[Lane, ...]
    spans: tuple[Span, ...]
    wall: float
    host_busy: float
    host_work: float  # host busy minus dispatching and ops run inline: loading, your code
    device_busy: float
    overlap: float
    idle: float
    largest_device_gap: float
    dispatches: int
    transfers: int
    compile_seconds: float
    items: int | None
    events: int
    trace_path: str
    backend: str
    cores: int
    jax_version: str
    memory: MemoryCurve | None = None
    memory_note: str = ""
    capture_seconds: float = 0.0
    parse_seconds: float = 0.0
    label: str = ""
    source: str = "jax.profiler.trace(create_perfetto_trace=True), Perfetto JSON parsed by batchlab"

    @property
    def dispatches_per_item(self) -> float | None:
        return self.dispatches / self.items if self.items else None

    @property
    def overlap_share(self) -> float:
        """overlap / the most that could (the smaller of host work and device busy); 0 to 1."""
        most = min(self.host_work, self.device_busy)
        return self.overlap / most if most > 0 else 0.0

    def lane(self, kind: str) -> list[Lane]:
        """The lanes of one kind ("python", "loader", "runtime", "device", "compiler")."""
        return [lane for lane in self.lanes if lane.kind == kind]

    def find(self, name: str) -> list[Span]:
        """Spans whose name starts with ``name`` (e.g. ``"load batch"``)."""
        return [s for s in self.spans if s.name.startswith(name)]

    def plot(self, *, ax=None, max_depth: int = 3, title: str | None = None):
        """One row per lane, time in ms; see :func:`batchlab.timeline.plot.plot_timeline`."""
        return plot_timeline(self, ax=ax, max_depth=max_depth, title=title)

    def _rows(self) -> list[tuple[str, str]]:
        per_item = self.dispatches_per_item
        curve = f"{len(self.memory.times)} allocator events" if self.memory else self.memory_note
        return [
            ("traced wall time", format_seconds(self.wall)),
            ("host busy (Python threads, not waiting)", format_seconds(self.host_busy)),
            ("device busy (XLA ops)", format_seconds(self.device_busy)),
            ("host work (not dispatching, not waiting)", format_seconds(self.host_work)),
            ("overlap (host work while the device computes)", format_seconds(self.overlap)),
            ("overlap share (of the most that could overlap)", f"{self.overlap_share:.0%}"),
            ("idle (nothing traced)", format_seconds(self.idle)),
            ("largest device gap", format_seconds(self.largest_device_gap)),
            ("dispatches (PjitFunction calls)", str(self.dispatches)),
            ("dispatches per item", "-" if per_item is None else f"{per_item:.3g}"),
            ("host-to-device transfers", str(self.transfers)),
            ("compile (on the Python thread)", format_seconds(self.compile_seconds)),
            ("lanes", ", ".join(lane.name for lane in self.lanes)),
            ("memory curve", curve),
        ]

    def __repr__(self) -> str:
        return (
            f"Timeline({self.label + ': ' if self.label else ''}{len(self.lanes)} lanes, "
            f"{len(self.spans)} spans in {format_seconds(self.wall)}; host busy "
            f"{format_seconds(self.host_busy)}, device busy {format_seconds(self.device_busy)}, "
            f"overlap {format_seconds(self.overlap)}, {self.dispatches} dispatches)"
        )

    def _caption(self) -> str:
        return f"{self.label + ' - ' if self.label else ''}profiler trace ({self.backend})"


def _intervals(spans, keep) -> list[tuple[float, float]]:
    return [(s.start, s.end) for s in spans if keep(s)]


def build_timeline(
    path: str | Path, *, items: int | None = None, label: str = "", capture_seconds: float = 0.0
) -> Timeline:
    """Parses a ``perfetto_trace.json.gz`` into a :class:`Timeline`."""
    t0 = time.perf_counter()
    events = read_events(path)
    lanes, spans, wall = parse_events(events)
    host_lanes = {lane.index for lane in lanes if lane.kind in ("python", "loader")}
    device_lanes = {lane.index for lane in lanes if lane.kind == "device"}
    on_host = [s for s in spans if s.lane in host_lanes]
    host, work = [], []  # per lane: one thread's wait does not stop another thread's work
    for lane in host_lanes:
        mine = [s for s in on_host if s.lane == lane]
        busy = subtract(
            _intervals(mine, lambda s: s.depth == 0), _intervals(mine, lambda s: s.kind == "wait")
        )
        host += busy
        work += subtract(busy, _intervals(mine, lambda s: s.kind in ("dispatch", "compute")))
    # XLA ops on the device streams; without any (XLA:CPU), wherever they ran
    device = _intervals(
        spans, lambda s: s.kind == "compute" and (s.lane in device_lanes or not device_lanes)
    )
    gaps = [b[0] - a[1] for a, b in itertools.pairwise(merge(device))]

    def outermost(kind: str) -> int:
        return sum(
            s.kind == kind and (s.parent < 0 or spans[s.parent].kind != kind) for s in on_host
        )

    memory, backend = memory_curve(events), jax.default_backend()
    if memory is None:
        note = NO_MEMORY_CPU if backend == "cpu" else "the trace holds no allocator events"
    else:
        note = f"from {memory.source}"
    return Timeline(
        lanes=lanes,
        spans=spans,
        wall=wall,
        host_busy=union_length(host),
        host_work=union_length(work),
        device_busy=union_length(device),
        overlap=intersect_length(work, device),
        idle=max(0.0, wall - union_length(host + device)),
        largest_device_gap=max(gaps, default=0.0),
        dispatches=outermost("dispatch"),
        transfers=outermost("transfer"),
        compile_seconds=union_length(_intervals(on_host, lambda s: s.kind == "compile")),
        items=items,
        events=len(events),
        trace_path=str(path),
        backend=backend,
        cores=os.cpu_count() or 1,
        jax_version=jax.__version__,
        memory=memory,
        memory_note=note,
        capture_seconds=capture_seconds,
        parse_seconds=time.perf_counter() - t0,
        label=label,
    )
