"""A readable simulation of the allocator policies that matter for JAX on GPUs.

``from batchlab import allocator``; then build a trace, pick a policy and
replay::

    trace = allocator.xla_traces.per_item_trace(48)   # from XLA's buffer assignment
    timeline = allocator.replay(trace.trace, allocator.BFCAllocator(16 << 30))
    allocator.plot_memory_map(timeline)

Everything here is the kit's simulation: it places bytes in a pretend
address space and runs nothing. Real figures come from XLA's buffer
assignment (:func:`batchlab.buffer_assignment`) and, on a GPU, from
``jax.Device.memory_stats()`` (``benchmarks/gpu_fragmentation.py``).

Example:
  >>> from batchlab import allocator
  >>> tl = allocator.replay(allocator.workloads.batched(16, batch_size=4), allocator.BFCAllocator(1 << 30))
  >>> tl.allocations, len(tl.failures)
  (12, 0)
"""

from __future__ import annotations

from batchlab.allocator import workloads, xla_traces
from batchlab.allocator.base import Allocator, Chunk
from batchlab.allocator.bfc import BFCAllocator, bin_num_for_size
from batchlab.allocator.firstfit import FirstFitAllocator
from batchlab.allocator.platform import PlatformAllocator
from batchlab.allocator.plots import plot_capacity_scan, plot_memory_map, plot_replay, plot_timeline
from batchlab.allocator.replayer import (
    Block,
    CapacityScan,
    Failure,
    Timeline,
    capacity_needed,
    capacity_scan,
    differences_text,
    make_allocator,
    replay,
)
from batchlab.allocator.simulation import Simulation, simulate
from batchlab.allocator.trace import Event, Trace, TraceBuilder
from batchlab.allocator.workloads import WORKLOADS, workload
from batchlab.allocator.xla_traces import trace_from_buffers

__all__ = [
    "WORKLOADS",
    "Allocator",
    "BFCAllocator",
    "Block",
    "CapacityScan",
    "Chunk",
    "Event",
    "Failure",
    "FirstFitAllocator",
    "PlatformAllocator",
    "Simulation",
    "Timeline",
    "Trace",
    "TraceBuilder",
    "bin_num_for_size",
    "capacity_needed",
    "capacity_scan",
    "differences_text",
    "make_allocator",
    "plot_capacity_scan",
    "plot_memory_map",
    "plot_replay",
    "plot_timeline",
    "replay",
    "simulate",
    "trace_from_buffers",
    "workload",
    "workloads",
    "xla_traces",
]
