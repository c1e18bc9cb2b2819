"""A readable simulation of the allocator policies that matter for JAX on GPUs (notebook 08)."""

from batchlab.allocator import workloads, xla_workloads
from batchlab.allocator.bfc import BFCAllocator, bin_num_for_size
from batchlab.allocator.plots import plot_capacity_scan, plot_replay
from batchlab.allocator.replayer import Events, capacity_scan, differences_text, replay
from batchlab.allocator.workloads import WORKLOADS, simulate
from batchlab.allocator.xla_workloads import events_from_buffers

__all__ = [
    "WORKLOADS",
    "BFCAllocator",
    "Events",
    "bin_num_for_size",
    "capacity_scan",
    "differences_text",
    "events_from_buffers",
    "plot_capacity_scan",
    "plot_replay",
    "replay",
    "simulate",
    "workloads",
    "xla_workloads",
]
