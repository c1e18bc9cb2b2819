"""What ran when: JAX's own profiler trace of a cell, parsed and drawn inside the notebook."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from batchlab._util.format import format_seconds
from batchlab.timeline.intervals import intersect_length, subtract, union_length
from batchlab.timeline.parse import Lane, Span, parse_events, read_events
from batchlab.timeline.plot import plot_timelines


@dataclass(frozen=True)
class Timeline:
    """A parsed profiler trace: lanes, spans and what they add up to. Times in seconds."""

    lanes: tuple[Lane, ...]
    spans: tuple[Span, ...]
    wall: float
    host_busy: float
    host_work: float  # host busy minus dispatching and ops run inline: loading, your code
    device_busy: float
    overlap: float
    idle: float
    dispatches: int
    transfers: int
    items: int | None
    trace_path: str
    label: str

    @property
    def dispatches_per_item(self) -> float | None:
        """Dispatches per item (None where the items were not counted)."""
        return self.dispatches / self.items if self.items else None

    @property
    def overlap_share(self) -> float:
        """overlap / the most that could (the smaller of host work and device busy); 0 to 1."""
        most = min(self.host_work, self.device_busy)
        return self.overlap / most if most > 0 else 0.0

    def lane(self, kind: str) -> list[Lane]:
        """The lanes of one kind ("python", "loader", "runtime", "device", "compiler")."""
        return [lane for lane in self.lanes if lane.kind == kind]

    def device_busy_between(self, start: float, end: float) -> float:
        """Seconds XLA's ops ran between ``start`` and ``end`` (e.g. an annotated round's span),
        counted as :attr:`device_busy` counts the whole trace."""
        ops = device_ops(self.lanes, self.spans)
        return union_length(
            (max(s.start, start), min(s.end, end)) for s in ops if s.end > start and s.start < end
        )

    def find(self, name: str) -> list[Span]:
        """Spans whose name starts with ``name`` (e.g. ``"load batch"``)."""
        return [s for s in self.spans if s.name.startswith(name)]

    def plot(self):
        """One row per lane, time in ms."""
        return plot_timelines([self])

    def __repr__(self) -> str:
        return (
            f"Timeline({self.label + ': ' if self.label else ''}{len(self.lanes)} lanes, "
            f"{len(self.spans)} spans in {format_seconds(self.wall)}; host busy "
            f"{format_seconds(self.host_busy)}, device busy {format_seconds(self.device_busy)}, "
            f"overlap {format_seconds(self.overlap)}, {self.dispatches} dispatches)"
        )


def device_ops(lanes, spans) -> list[Span]:
    """XLA ops on the device streams; without any (XLA:CPU), wherever they ran."""
    device = {lane.index for lane in lanes if lane.kind == "device"}
    return [s for s in spans if s.kind == "compute" and (s.lane in device or not device)]


def build_timeline(path: str | Path, *, items: int | None = None, label: str = "") -> Timeline:
    """Parses a ``perfetto_trace.json.gz`` into a :class:`Timeline`."""
    lanes, spans, wall = parse_events(read_events(path))
    host_lanes = {lane.index for lane in lanes if lane.kind in ("python", "loader")}
    on_host = [s for s in spans if s.lane in host_lanes]
    host, work = [], []  # per lane: one thread's wait does not stop another thread's work
    for lane in host_lanes:
        mine = [s for s in on_host if s.lane == lane]
        outer = [(s.start, s.end) for s in mine if s.depth == 0]
        busy = subtract(outer, [(s.start, s.end) for s in mine if s.kind == "wait"])
        host += busy
        inline = [(s.start, s.end) for s in mine if s.kind in ("dispatch", "compute")]
        work += subtract(busy, inline)
    device = [(s.start, s.end) for s in device_ops(lanes, spans)]

    def outermost(kind: str) -> int:
        return sum(
            s.kind == kind and (s.parent < 0 or spans[s.parent].kind != kind) for s in on_host
        )

    return Timeline(
        lanes=lanes,
        spans=spans,
        wall=wall,
        host_busy=union_length(host),
        host_work=union_length(work),
        device_busy=union_length(device),
        overlap=intersect_length(work, device),
        idle=max(0.0, wall - union_length(host + device)),
        dispatches=outermost("dispatch"),
        transfers=outermost("transfer"),
        items=items,
        trace_path=str(path),
        label=label,
    )
