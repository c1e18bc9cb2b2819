"""Allocation events: what a program asks of its allocator, in order."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

from batchlab._util.format import format_bytes
from batchlab.allocator.bfc import round_up


class Event(NamedTuple):
    """One request to the allocator at ``time`` (``size`` only for ``alloc``)."""

    time: int
    kind: str  # "alloc" or "free"
    id: Hashable
    size: int = 0
    owner: str = ""


@dataclass(frozen=True)
class Events:
    """A checked sequence of events: time never goes back, every free matches an earlier alloc."""

    events: tuple[Event, ...]
    name: str = "events"
    source: str = "synthetic workload (batchlab.allocator.workloads)"

    def __post_init__(self) -> None:
        object.__setattr__(self, "events", tuple(self.events))
        live: set = set()
        for i, e in enumerate(self.events):
            alloc = e.kind == "alloc"
            bad_size = isinstance(e.size, bool) or not isinstance(e.size, int) or e.size < 0
            problems = [
                (e.kind not in ("alloc", "free"), "its kind must be 'alloc' or 'free'"),
                (i > 0 and e.time < self.events[i - 1].time, "it goes back in time; sort them"),
                (alloc and bad_size, "its size must be an int >= 0 bytes"),
                (alloc and e.id in live, "it allocates a live id twice; free it first"),
                (not alloc and e.id not in live, "it frees an id that is not allocated then"),
            ]
            problem = next((text for bad, text in problems if bad), "")
            if problem:
                raise ValueError(f"`events[{i}]`={e!r} is not valid: {problem}.")
            live ^= {e.id}  # an alloc adds the id, a free removes it

    @classmethod
    def from_events(cls, events: Iterable[Event | tuple], name: str = "events") -> Events:
        return cls(tuple(Event(*e) for e in events), name, "hand-written events")

    @property
    def n_allocs(self) -> int:
        return sum(e.kind == "alloc" for e in self.events)

    @property
    def peak_live_bytes(self) -> int:
        """The most bytes live at once (no allocator: just the sum of live sizes)."""
        return self._peak(int)

    def peak_rounded_bytes(self) -> int:
        """The live peak with every request rounded up to XLA's 256 bytes."""
        return self._peak(round_up)

    def _peak(self, rounded) -> int:
        sizes, live, peak = {}, 0, 0
        for e in self.events:
            if e.kind == "alloc":
                sizes[e.id] = rounded(e.size)
                live += sizes[e.id]
                peak = max(peak, live)
            else:
                live -= sizes.pop(e.id)
        return peak

    def __repr__(self) -> str:
        return (
            f"Events({self.name}: {len(self.events)} events, {self.n_allocs} allocations, "
            f"peak live {format_bytes(self.peak_live_bytes)}; source: {self.source})"
        )


class EventsBuilder:
    """Records events with one tick of time each; ``free`` takes any number of ids."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def alloc(self, id: Hashable, size: int, owner: str = "") -> None:
        self.events.append(Event(len(self.events), "alloc", id, int(size), owner))

    def free(self, *ids: Hashable) -> None:
        self.events += [Event(len(self.events) + i, "free", id) for i, id in enumerate(ids)]

    def build(self, name: str = "events", source: str = Events.source) -> Events:
        return Events(tuple(self.events), name, source)
