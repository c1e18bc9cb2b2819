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

from . import workloads as workloads
from . import xla_traces as xla_traces
from .base import Allocator as Allocator
from .base import Chunk as Chunk
from .bfc import BFCAllocator as BFCAllocator
from .bfc import bin_num_for_size as bin_num_for_size
from .firstfit import FirstFitAllocator as FirstFitAllocator
from .platform import PlatformAllocator as PlatformAllocator
from .plots import plot_capacity_scan as plot_capacity_scan
from .plots import plot_memory_map as plot_memory_map
from .plots import plot_replay as plot_replay
from .plots import plot_timeline as plot_timeline
from .replay import Block as Block
from .replay import CapacityScan as CapacityScan
from .replay import Failure as Failure
from .replay import Timeline as Timeline
from .replay import capacity_needed as capacity_needed
from .replay import capacity_scan as capacity_scan
from .replay import differences_text as differences_text
from .replay import make_allocator as make_allocator
from .replay import replay as replay
from .simulate import Simulation as Simulation
from .simulate import simulate as simulate
from .trace import Event as Event
from .trace import Trace as Trace
from .trace import TraceBuilder as TraceBuilder
from .workloads import WORKLOADS as WORKLOADS
from .workloads import workload as workload
