"""One call from a workload name to a replay: what the explorer and notebook 08 use."""

from __future__ import annotations

from dataclasses import dataclass

from batchlab._util.checks import check_positive_float
from batchlab.allocator.events import Events
from batchlab.allocator.plots import plot_replay
from batchlab.allocator.replayer import Replay, capacity_scan, make_allocator, replay
from batchlab.allocator.workloads import workload


@dataclass(frozen=True, repr=False)
class Simulation:
    """A workload replayed on a device ``headroom`` times its live peak, and the device it needs."""

    events: Events
    replay: Replay
    capacity_needed: int  # the smallest device of a scan of 1.00x..2.00x the live peak

    @property
    def overhead(self) -> float:
        """``capacity_needed / peak live bytes``: 1.0 means fragmentation cost nothing."""
        return self.capacity_needed / max(self.events.peak_rounded_bytes(), 1)

    def plot(self):
        return plot_replay(self.replay)


def simulate(
    name: str,
    n_items: int = 48,
    *,
    batch_size: int = 8,
    policy: str = "bfc",
    preallocate: bool = True,
    headroom: float = 1.1,
) -> Simulation:
    """Builds workload ``name``, replays it on ``headroom`` x its live peak, and scans for the device it needs."""
    check_positive_float(headroom, "headroom")
    if headroom < 1:
        raise ValueError(
            f"`headroom` must be at least 1 (the device must hold the live peak), got {headroom}."
        )
    events = workload(name, n_items, batch_size=batch_size)
    capacity = int(events.peak_rounded_bytes() * headroom) // 256 * 256 + 256
    replayed = replay(events, make_allocator(policy, capacity, preallocate=preallocate))
    scan = capacity_scan(events, policy, preallocate=preallocate)
    if scan.smallest is None:
        raise ValueError(
            f"`events` {events.name!r} does not fit even on 2x its live peak with {policy}; "
            "use capacity_scan with larger headrooms."
        )
    return Simulation(events, replayed, scan.smallest)
