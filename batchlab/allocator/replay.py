"""Replaying a trace through a simulated allocator, and what it records.

:func:`replay` feeds a :class:`~batchlab.allocator.trace.Trace` to one
allocator and records a :class:`Timeline`: after every event the bytes in
use, reserved, the largest free block, external fragmentation
(``1 - largest free block / total free``), and every failed allocation --
in particular those that failed *although enough memory was free in
total*, the signature of fragmentation. :func:`capacity_needed` finds the
smallest device on which a trace never fails.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import NamedTuple

from .._format import format_bytes, html_table, text_table
from .base import Allocator
from .bfc import BFCAllocator
from .firstfit import FirstFitAllocator
from .trace import Trace

POLICIES = {"bfc": BFCAllocator, "first-fit": FirstFitAllocator}


def make_allocator(policy: str, capacity: int, *, preallocate: bool = True, **options) -> Allocator:
    """A fresh allocator by name: ``"bfc"`` or ``"first-fit"``."""
    if policy not in POLICIES:
        raise ValueError(f"`policy` must be one of {sorted(POLICIES)}, got {policy!r}.")
    return POLICIES[policy](capacity, preallocate=preallocate, **options)


class Failure(NamedTuple):
    """A request the allocator could not place."""

    time: int
    id: Hashable
    size: int
    free_total: int
    largest_free: int

    @property
    def despite_free(self) -> bool:
        """True when enough bytes were free in total, just not in one piece."""
        return self.free_total >= self.size


class Block(NamedTuple):
    """Where one allocation lived: ``[offset, offset + size)`` from ``start`` to ``end``."""

    id: Hashable
    owner: str
    offset: int
    size: int
    start: int
    end: int


@dataclass(frozen=True)
class Timeline:
    """What one allocator did with one trace, sampled after every event."""

    trace_name: str
    policy: str
    preallocate: bool
    capacity: int
    times: tuple[int, ...]
    in_use: tuple[int, ...]
    held: tuple[int, ...]
    reserved: tuple[int, ...]
    free_total: tuple[int, ...]
    largest_free: tuple[int, ...]
    fragmentation: tuple[float, ...]
    blocks: tuple[Block, ...]
    regions: tuple[tuple[int, int, int], ...]  # (offset, size, time reserved)
    failures: tuple[Failure, ...]
    allocations: int
    frees: int
    device_calls: int
    source: str = field(default="the kit's allocator simulation (batchlab.allocator)")

    @property
    def peak_in_use(self) -> int:
        return max(self.in_use, default=0)

    @property
    def peak_reserved(self) -> int:
        return max(self.reserved, default=0)

    @property
    def max_fragmentation(self) -> float:
        return max(self.fragmentation, default=0.0)

    @property
    def failures_despite_free(self) -> int:
        """Failed requests for which enough memory was free in total."""
        return sum(f.despite_free for f in self.failures)

    def _rows(self) -> list[tuple[str, str]]:
        return [
            ("allocations / frees", f"{self.allocations} / {self.frees}"),
            ("device calls", str(self.device_calls)),
            ("peak in use", format_bytes(self.peak_in_use)),
            ("peak held (in use + rounding)", format_bytes(max(self.held, default=0))),
            ("peak reserved", format_bytes(self.peak_reserved)),
            ("max fragmentation", f"{self.max_fragmentation:.1%}"),
            (
                "failed allocations",
                f"{len(self.failures)} ({self.failures_despite_free} despite enough free in total)",
            ),
        ]

    def __repr__(self) -> str:
        title = (
            f"Timeline({self.trace_name} on {self.policy}, preallocate={self.preallocate}, "
            f"capacity {format_bytes(self.capacity)}; source: {self.source})"
        )
        return title + "\n" + text_table(self._rows())

    def _repr_html_(self) -> str:
        return html_table(
            self._rows(),
            header=("figure", "value"),
            caption=f"{self.trace_name} on {self.policy} (preallocate={self.preallocate}): {self.source}",
        )


def capacity_needed(
    trace: Trace, policy: str = "bfc", *, preallocate: bool = True, **options
) -> int:
    """The smallest simulated device (to 1/256 of the live peak) on which ``trace`` never fails.

    Found by bisection between the trace's live peak (no allocator can do
    with less) and 4x that; ``capacity_needed / trace.peak_live_bytes`` is
    the memory the policy's fragmentation costs (1.0: none).

    Example:
      >>> from batchlab.allocator import workloads
      >>> t = workloads.batched(16, batch_size=4)
      >>> capacity_needed(t) == t.peak_live_bytes  # one fixed shape: perfect reuse
      True
    """
    peak = max(trace.peak_live_bytes, 1)
    step = max(256, peak // 256)

    def fits(capacity: int) -> bool:
        return not replay(
            trace, make_allocator(policy, capacity, preallocate=preallocate, **options)
        ).failures

    hi = max(4 * peak, 4096)
    if not fits(hi):
        raise ValueError(
            f"`trace` {trace.name!r} does not fit even on {hi} bytes (4x its live peak) with {policy}; "
            "check the allocator options (alignment)."
        )
    lo = peak - 1
    while hi - lo > step:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return peak if fits(peak) else hi


def replay(trace: Trace, allocator: Allocator) -> Timeline:
    """Feeds every event of ``trace`` to ``allocator`` and records what happened.

    A failed allocation is recorded and its later ``free`` skipped, as a
    program that caught the out-of-memory error would.

    Args:
      trace: the events.
      allocator: a fresh allocator (no live allocations).

    Returns:
      A :class:`Timeline`.

    Raises:
      TypeError: ``trace`` or ``allocator`` has the wrong type.
      ValueError: the allocator already holds allocations.

    Example:
      >>> t = Trace.from_events([(0, "alloc", "a", 1000), (1, "alloc", "b", 3000), (2, "free", "a")])
      >>> tl = replay(t, BFCAllocator(4096))
      >>> tl.in_use, tl.largest_free
      ((1000, 4000, 3000), (3072, 0, 1024))
    """
    if not isinstance(trace, Trace):
        raise TypeError(f"`trace` must be a batchlab.allocator.Trace, got {type(trace).__name__}.")
    if not isinstance(allocator, Allocator):
        raise TypeError(
            f"`allocator` must be a batchlab.allocator allocator (BFCAllocator, ...), "
            f"got {type(allocator).__name__}; make one with make_allocator(policy, capacity)."
        )
    if allocator.live:
        raise ValueError(
            f"`allocator` already holds {len(allocator.live)} allocation(s); pass a fresh one."
        )
    rows: dict[str, list] = {
        k: []
        for k in (
            "times",
            "in_use",
            "held",
            "reserved",
            "free_total",
            "largest_free",
            "fragmentation",
        )
    }
    open_blocks: dict[Hashable, list] = {}
    blocks, failures, regions_seen, region_rows = [], [], 0, []
    allocations = frees = 0
    failed: set = set()
    for e in trace.events:
        if e.kind == "alloc":
            chunk = allocator.allocate(e.id, e.size, e.owner)
            if chunk is None:
                rounded = allocator.round_up(e.size)
                failures.append(
                    Failure(e.time, e.id, rounded, allocator.free_total, allocator.largest_free)
                )
                failed.add(e.id)
            else:
                allocations += 1
                open_blocks[e.id] = [e.id, e.owner, chunk.offset, chunk.size, e.time]
        elif e.id in failed:
            failed.discard(e.id)
        else:
            allocator.free(e.id)
            frees += 1
            blocks.append(Block(*open_blocks.pop(e.id), e.time))
        for offset, size in allocator.regions[regions_seen:]:
            region_rows.append((offset, size, e.time))
        regions_seen = len(allocator.regions)
        for key, value in (
            ("times", e.time),
            ("in_use", allocator.in_use),
            ("held", allocator.held),
            ("reserved", allocator.reserved),
            ("free_total", allocator.free_total),
            ("largest_free", allocator.largest_free),
            ("fragmentation", allocator.fragmentation),
        ):
            rows[key].append(value)
    end = trace.events[-1].time + 1 if trace.events else 0
    blocks += [Block(*b, end) for b in open_blocks.values()]
    return Timeline(
        trace.name,
        allocator.policy,
        allocator.preallocate,
        allocator.capacity,
        **{k: tuple(v) for k, v in rows.items()},
        blocks=tuple(blocks),
        regions=tuple(region_rows),
        failures=tuple(failures),
        allocations=allocations,
        frees=frees,
        device_calls=allocator.device_calls,
    )
