"""Replaying the real BFC allocator's own events (from a ``jax.profiler`` trace) through the model."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import NamedTuple

from batchlab._util.format import Rows, format_bytes
from batchlab.allocator.bfc import BFCAllocator
from batchlab.allocator.events import Event, Events
from batchlab.allocator.replayer import Replay, differences_text, replay
from batchlab.timeline.parse import read_events

_NAMES = {"MemoryAllocation": "alloc", "MemoryDeallocation": "free"}
_SIZES = ("requested_bytes", "allocation_bytes", "bytes_allocated")


class BfcEvent(NamedTuple):
    """One event of the real allocator, as recorded by the profiler."""

    ts: float
    kind: str  # "alloc" or "free"
    addr: int
    requested_bytes: int
    allocation_bytes: int
    bytes_allocated: int  # bytes in use after the event (XLA's stats_.bytes_in_use)
    fragmentation: float
    allocator_name: str


def parse_bfc_events(path: str | os.PathLike) -> list[BfcEvent]:
    """The BFC allocator's ``MemoryAllocation`` / ``MemoryDeallocation`` events, in time order.

    ``path``: a ``perfetto_trace.json.gz`` (or any Chrome-trace JSON). Only the allocator with
    the most events is kept (e.g. ``"GPU_0_bfc"``).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(
            "`path` must be the path of a Chrome/perfetto trace JSON (.json or .json.gz), got "
            f"{type(path).__name__}; write the trace to a file first."
        )
    found = []
    for e in read_events(path):
        base, _, encoded = str(e.get("name", "") if isinstance(e, dict) else "").partition("#")
        if base not in _NAMES:
            continue
        # the arguments are in ``args`` or encoded in the name: "MemoryAllocation#addr=1,...#"
        pairs = (part.partition("=") for part in encoded.rstrip("#").split(","))
        args = {**{k.strip(): v.strip() for k, eq, v in pairs if eq}, **(e.get("args") or {})}
        try:
            sizes = [int(args.get(k, 0)) for k in _SIZES]
            fragmentation = float(args.get("fragmentation", 0.0))
            where = [float(e.get("ts", 0.0)), _NAMES[base], int(args["addr"])]
            found.append(
                BfcEvent(*where, *sizes, fragmentation, str(args.get("allocator_name", "")))
            )
        except (KeyError, ValueError):
            continue  # an event without an address cannot be replayed
    names = [e.allocator_name for e in found]
    most = max(set(names), key=names.count, default=None)
    return sorted((e for e in found if e.allocator_name == most), key=lambda e: e.ts)


@dataclass(frozen=True)
class ReplayComparison(Rows):
    """Real allocator events next to the model's replay of the same requests."""

    allocator_name: str
    events: int
    skipped_frees: int  # frees of buffers allocated before the trace started
    real_peak: int
    simulated_peak: int
    real_final_in_use: int
    simulated_final_in_use: int
    max_in_use_difference: int
    real_max_fragmentation: float
    simulated_max_fragmentation: float
    placement_agreement: float  # share of allocations at the same relative address
    replay: Replay
    source: str = "jax.profiler trace (the BFC allocator's own events) vs the kit's BFC model"

    def _rows(self):
        def pair(real, model, fmt=format_bytes) -> str:
            return f"real {fmt(real)}, model {fmt(model)}"

        fragmentation = pair(
            self.real_max_fragmentation, self.simulated_max_fragmentation, "{:.1%}".format
        )
        return [
            (
                "events replayed",
                f"{self.events} ({self.skipped_frees} frees of earlier buffers skipped)",
            ),
            ("peak bytes in use", pair(self.real_peak, self.simulated_peak)),
            ("bytes in use at the end", pair(self.real_final_in_use, self.simulated_final_in_use)),
            ("largest difference in bytes in use", format_bytes(self.max_in_use_difference)),
            ("max fragmentation", fragmentation),
            ("same relative address", f"{self.placement_agreement:.1%} of allocations"),
            ("model differs from XLA", differences_text(self.replay.differences)),
        ]

    _header = ("figure", "real vs model")

    def _title(self) -> str:
        return f"{self.allocator_name}: {self.source}"


def compare_with_model(
    events: list[BfcEvent], *, capacity: int, preallocate: bool = True
) -> ReplayComparison:
    """Replays the real allocator's requests on the model and lines the two up.

    Args:
      events: from :func:`parse_bfc_events`.
      capacity: the real allocator's limit (``memory_stats()["bytes_limit"]``).
      preallocate: whether the real pool was preallocated (JAX's default).
    """
    if not events:
        raise ValueError(
            "`events` is empty: the trace holds no MemoryAllocation events; start "
            "jax.profiler.trace before the workload allocates, on a GPU backend."
        )
    base = min((e.addr for e in events if e.kind == "alloc"), default=0)
    trace, real_in_use, real_placed = [], [], set()
    live: dict[int, tuple] = {}  # address -> (address, time allocated): addresses are reused
    for t, e in enumerate(events):
        if e.kind == "alloc":
            live[e.addr] = (e.addr, t)
            trace.append(Event(t, "alloc", live[e.addr], e.requested_bytes, "real request"))
            real_placed.add((live[e.addr], e.addr - base))
        elif e.addr in live:
            trace.append(Event(t, "free", live.pop(e.addr)))
        else:  # allocated before the trace started
            continue
        real_in_use.append(e.bytes_allocated)
    name = "jax.profiler trace of the BFC allocator"
    tl = replay(
        Events(tuple(trace), "profiled workload", name),
        BFCAllocator(capacity, preallocate=preallocate),
    )
    return ReplayComparison(
        events[0].allocator_name,
        len(trace),
        len(events) - len(trace),
        max(real_in_use, default=0),
        tl.peak_bytes_in_use,
        real_in_use[-1] if real_in_use else 0,
        tl.bytes_in_use[-1] if tl.bytes_in_use else 0,
        max((abs(r - m) for r, m in zip(real_in_use, tl.bytes_in_use, strict=True)), default=0),
        max((e.fragmentation for e in events), default=0.0),
        tl.max_fragmentation,
        len({(b.id, b.offset) for b in tl.blocks} & real_placed) / max(len(real_placed), 1),
        tl,
    )
