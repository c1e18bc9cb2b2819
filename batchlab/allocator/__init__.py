"""A readable simulation of the allocator policies that matter for JAX on GPUs.

Example:
  >>> from batchlab import allocator
  >>> tl = allocator.replay(allocator.workloads.batched(16, batch_size=4), allocator.BFCAllocator(1 << 30))
  >>> tl.allocations, len(tl.failures)
  (12, 0)
"""

from batchlab.allocator import workloads, xla_workloads
from batchlab.allocator.base import Allocator, FirstFitAllocator, PlatformAllocator
from batchlab.allocator.bfc import BFCAllocator, bin_num_for_size
from batchlab.allocator.events import Event, Events, EventsBuilder
from batchlab.allocator.plots import plot_capacity_scan, plot_memory_map, plot_replay
from batchlab.allocator.replayer import (
    CapacityScan,
    Replay,
    capacity_needed,
    capacity_scan,
    differences_text,
    make_allocator,
    replay,
)
from batchlab.allocator.simulation import Simulation, simulate
from batchlab.allocator.workloads import WORKLOADS, workload
from batchlab.allocator.xla_workloads import events_from_buffers

__all__ = [
    "WORKLOADS",
    "Allocator",
    "BFCAllocator",
    "CapacityScan",
    "Event",
    "Events",
    "EventsBuilder",
    "FirstFitAllocator",
    "PlatformAllocator",
    "Replay",
    "Simulation",
    "bin_num_for_size",
    "capacity_needed",
    "capacity_scan",
    "differences_text",
    "events_from_buffers",
    "make_allocator",
    "plot_capacity_scan",
    "plot_memory_map",
    "plot_replay",
    "replay",
    "simulate",
    "workload",
    "workloads",
    "xla_workloads",
]
