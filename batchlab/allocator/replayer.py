"""Allocation events (what a program asks of its allocator, in order), replayed through a
simulated allocator, and what the replay records."""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

from batchlab._util.checks import check_choice
from batchlab._util.format import Rows, format_bytes
from batchlab.allocator.bfc import BFCAllocator, PlatformAllocator, round_up


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
        """Allocation events in the trace."""
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


STATS = ("in_use", "bytes_in_use", "pool_bytes", "largest_free", "fragmentation")  # per event
HEADROOMS = tuple(1 + i / 100 for i in range(101))  # capacity_scan's default: 1.00x .. 2.00x
POLICIES = {"bfc": BFCAllocator, "platform": PlatformAllocator}


def make_allocator(policy: str, capacity: int, *, preallocate: bool = True) -> BFCAllocator:
    """A fresh allocator by name: ``"bfc"`` (XLA's) or ``"platform"`` (a contrast)."""
    policy = check_choice(policy, "policy", sorted(POLICIES))
    return POLICIES[policy](capacity, preallocate=preallocate)


class Failure(NamedTuple):
    """A request the allocator could not place."""

    time: int
    id: Hashable
    size: int
    free_total: int
    largest_free: int


class Block(NamedTuple):
    """Where one allocation lived: ``[offset, offset + size)`` from ``start`` to ``end``."""

    id: Hashable
    owner: str
    offset: int
    size: int
    start: int
    end: int


@dataclass(frozen=True, repr=False)
class Replay:
    """What one allocator did with one event list, sampled after every event (see :data:`STATS`)."""

    events_name: str
    policy: str
    preallocate: bool
    capacity: int
    times: tuple[int, ...]
    in_use: tuple[int, ...]  # bytes asked for
    bytes_in_use: tuple[int, ...]  # bytes of the pieces handed out (XLA's bytes_in_use)
    pool_bytes: tuple[int, ...]  # bytes reserved from the device (XLA's pool_bytes)
    largest_free: tuple[int, ...]  # the largest request that could be served
    fragmentation: tuple[float, ...]  # XLA's GetFragmentation (free pool bytes only)
    blocks: tuple[Block, ...]
    regions: tuple[tuple[int, int, int], ...]  # (offset, size, time reserved)
    failures: tuple[Failure, ...]
    allocations: int
    frees: int
    device_calls: int
    differences: tuple[tuple[str, str, str], ...] = ()  # (parameter, here, XLA) where not XLA's

    @property
    def peak_in_use(self) -> int:
        """The most bytes in use at any step."""
        return max(self.in_use, default=0)

    @property
    def max_fragmentation(self) -> float:
        """The worst fragmentation at any step (0 when the trace is empty)."""
        return max(self.fragmentation, default=0.0)

    @property
    def failures_despite_free(self) -> int:
        """Failed requests for which enough bytes were free in total, just not in one piece."""
        return sum(f.free_total >= f.size for f in self.failures)


def differences_text(differences) -> str:
    """One line for the page: every parameter that is not XLA's, or 'nothing'."""
    text = "; ".join(f"{name}: {here} (XLA: {xla})" for name, here, xla in differences)
    return text or "nothing (XLA's constants and order)"


@dataclass(frozen=True)
class CapacityScan(Rows):
    """Which device sizes an event list fits on, by replaying it on every one (no bisection)."""

    events_name: str
    policy: str
    preallocate: bool
    peak_live_bytes: int  # live peak with requests rounded to 256 B (the floor)
    capacities: tuple[int, ...]
    fits: tuple[bool, ...]
    differences: tuple[tuple[str, str, str], ...] = ()
    source: str = "the kit's allocator simulation (batchlab.allocator), one replay per capacity"

    @property
    def smallest(self) -> int | None:
        """The smallest capacity scanned that fits (None: none did)."""
        return min(itertools.compress(self.capacities, self.fits), default=None)

    @property
    def overhead(self) -> float | None:
        """``smallest / peak live bytes`` (1.0: the allocator wasted nothing at the peak)."""
        return None if self.smallest is None else self.smallest / max(self.peak_live_bytes, 1)

    @property
    def failing_above_smallest(self) -> tuple[int, ...]:
        """Capacities larger than :attr:`smallest` that fail: non-empty means 'not monotone'."""
        s = self.smallest
        pairs = zip(self.capacities, self.fits, strict=True)
        return tuple(c for c, ok in pairs if s is not None and c > s and not ok)

    @property
    def monotone(self) -> bool:
        """Whether every capacity above :attr:`smallest` fits too."""
        return not self.failing_above_smallest

    def intervals(self) -> list[tuple[int, int, bool]]:
        """Runs of consecutive scanned capacities with the same outcome: (first, last, fits)."""
        runs = itertools.groupby(zip(self.capacities, self.fits, strict=True), lambda p: p[1])
        return [(run[0][0], run[-1][0], ok) for ok, run in ((ok, list(g)) for ok, g in runs)]

    _header = ("capacity", "x live peak", "outcome")

    def _rows(self):
        peak = max(self.peak_live_bytes, 1)
        return [
            (
                f"{format_bytes(lo)} .. {format_bytes(hi)}",
                f"{lo / peak:.2f}x .. {hi / peak:.2f}x",
                "fits" if ok else "fails",
            )
            for lo, hi, ok in self.intervals()
        ]

    def _title(self) -> str:
        smallest = "none" if self.smallest is None else format_bytes(self.smallest)
        at = f" = {self.overhead:.2f}x the live peak" if self.smallest else ""
        return (
            f"{self.events_name} on {self.policy} (preallocate={self.preallocate}): "
            f"{len(self.capacities)} capacities, smallest fitting {smallest}{at}, monotone: "
            f"{self.monotone}; differs from XLA: {differences_text(self.differences)}; "
            f"{self.source}"
        )


def capacity_scan(
    events: Events,
    policy: str = "bfc",
    *,
    preallocate: bool = True,
    headrooms=HEADROOMS,
    capacities=None,
) -> CapacityScan:
    """Replays ``events`` on every capacity (no bisection: fitting need not be monotone);
    ``headrooms``: multiples of the live peak, or ``capacities`` in bytes.

    Example:
      >>> from batchlab.allocator import workloads
      >>> events = workloads.workload("batched", 16, batch_size=4)
      >>> scan = capacity_scan(events, headrooms=(1.0, 1.5))
      >>> scan.fits, scan.overhead  # unsplit chunks cost room at exactly the live peak
      ((False, True), 1.5)
    """
    check_events(events)
    peak = max(events.peak_rounded_bytes(), 1)
    if capacities is None:
        headrooms = [float(h) for h in headrooms]
        if not headrooms or min(headrooms) < 1:
            raise ValueError(
                f"`headrooms` must be multiples of the live peak, each at least 1, got {headrooms}."
            )
        capacities = [round_up(int(peak * h)) for h in headrooms]
    capacities = tuple(sorted({int(c) for c in capacities}))
    if not capacities:
        raise ValueError("`capacities` is empty; give at least one capacity in bytes.")
    allocators = [make_allocator(policy, c, preallocate=preallocate) for c in capacities]
    fits = tuple(not replay(events, a).failures for a in allocators)
    differences = tuple(allocators[-1].differences_from_xla())
    return CapacityScan(events.name, policy, preallocate, peak, capacities, fits, differences)


def check_events(events) -> None:
    if not isinstance(events, Events):
        raise TypeError(
            f"`events` must be a batchlab.allocator.Events, got {type(events).__name__}."
        )


def replay(events: Events, allocator: BFCAllocator) -> Replay:
    """Feeds every event of ``events`` to a fresh ``allocator`` and records what happened."""
    check_events(events)
    if not isinstance(allocator, BFCAllocator):
        raise TypeError(
            f"`allocator` must be a batchlab.allocator allocator (BFCAllocator, ...), "
            f"got {type(allocator).__name__}; make one with make_allocator(policy, capacity)."
        )
    if allocator.live or allocator.device_calls > (1 if allocator.preallocate else 0):
        raise ValueError(
            f"`allocator` already holds {len(allocator.live)} allocation(s); pass a fresh one."
        )
    rows: dict[str, list] = {k: [] for k in ("times", *STATS)}
    placed: dict[Hashable, list] = {}  # id -> [id, owner, offset, size, start] while live
    blocks, failures, regions = [], [], []
    for e in events.events:
        if e.kind == "alloc":
            chunk = allocator.allocate(e.id, e.size, e.owner)
            if chunk is None:
                free, largest = allocator.free_total, allocator.largest_free
                failures.append(Failure(e.time, e.id, round_up(e.size), free, largest))
            else:
                placed[e.id] = [e.id, e.owner, chunk.offset, chunk.size, e.time]
        elif e.id in placed:  # the free of a failed request is skipped
            allocator.free(e.id)
            blocks.append(Block(*placed.pop(e.id), e.time))
        regions += [(offset, size, e.time) for offset, size in allocator.regions[len(regions) :]]
        rows["times"].append(e.time)
        for key in STATS:
            rows[key].append(getattr(allocator, key))
    end = events.events[-1].time + 1 if events.events else 0
    blocks += [Block(*b, end) for b in placed.values()]
    return Replay(
        events.name,
        allocator.policy,
        allocator.preallocate,
        allocator.capacity,
        **{k: tuple(v) for k, v in rows.items()},
        blocks=tuple(blocks),
        regions=tuple(regions),
        failures=tuple(failures),
        allocations=len(blocks),
        frees=len(blocks) - len(placed),
        device_calls=allocator.device_calls,
        differences=tuple(allocator.differences_from_xla()),
    )
