"""A readable simulation of the allocator policies that matter for JAX on GPUs.

Example:
  >>> from batchlab import allocator
  >>> tl = allocator.replay(allocator.workloads.batched(16, batch_size=4), allocator.BFCAllocator(1 << 30))
  >>> tl.allocations, len(tl.failures)
  (12, 0)
"""

from __future__ import annotations

from batchlab.allocator import workloads as workloads
from batchlab.allocator import xla_workloads as xla_workloads
from batchlab.allocator.base import Allocator as Allocator
from batchlab.allocator.base import Piece as Piece
from batchlab.allocator.bfc import BFCAllocator as BFCAllocator
from batchlab.allocator.bfc import bin_num_for_size as bin_num_for_size
from batchlab.allocator.events import Event as Event
from batchlab.allocator.events import Events as Events
from batchlab.allocator.events import EventsBuilder as EventsBuilder
from batchlab.allocator.firstfit import FirstFitAllocator as FirstFitAllocator
from batchlab.allocator.platform import PlatformAllocator as PlatformAllocator
from batchlab.allocator.plots import plot_capacity_scan as plot_capacity_scan
from batchlab.allocator.plots import plot_memory_map as plot_memory_map
from batchlab.allocator.plots import plot_replay as plot_replay
from batchlab.allocator.plots import plot_timeline as plot_timeline
from batchlab.allocator.replayer import Block as Block
from batchlab.allocator.replayer import CapacityScan as CapacityScan
from batchlab.allocator.replayer import Failure as Failure
from batchlab.allocator.replayer import Timeline as Timeline
from batchlab.allocator.replayer import capacity_needed as capacity_needed
from batchlab.allocator.replayer import capacity_scan as capacity_scan
from batchlab.allocator.replayer import differences_text as differences_text
from batchlab.allocator.replayer import make_allocator as make_allocator
from batchlab.allocator.replayer import replay as replay
from batchlab.allocator.simulation import Simulation as Simulation
from batchlab.allocator.simulation import simulate as simulate
from batchlab.allocator.workloads import WORKLOADS as WORKLOADS
from batchlab.allocator.workloads import workload as workload
from batchlab.allocator.xla_workloads import events_from_buffers as events_from_buffers
