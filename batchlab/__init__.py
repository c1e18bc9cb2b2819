"""batchlab: measure what batching does in JAX, instead of repeating claims about it.

The public API is what this module exports. Notebooks and tests import from
``batchlab``, not from inner modules (except the notebook-facing
``batchlab.widgets``, ``batchlab.plots``, ``batchlab.exercises`` and the
``batchlab.allocator`` simulation).
"""

from __future__ import annotations

__version__ = "0.1.0"

# measuring (issue 2)
from .compiles import CompileCount as CompileCount
from .compiles import count_compiles as count_compiles
from .config import sizes as sizes
from .environment import Environment as Environment
from .environment import environment as environment
from .measure import Measurement as Measurement
from .measure import measure as measure
from .memory import DeviceMemory as DeviceMemory
from .memory import LiveMemory as LiveMemory
from .memory import MemoryEstimate as MemoryEstimate
from .memory import device_memory as device_memory
from .memory import device_memory_unavailable_reason as device_memory_unavailable_reason
from .memory import live_memory as live_memory
from .memory import memory_estimate as memory_estimate
from .sweep import Sweep as Sweep
from .sweep import sweep as sweep

# strategies, axes and broadcasting (issue 3)

# ragged data (issue 4)

# memory limits and faults (issue 5)

# loading and scaling (issue 7)
from . import loading as loading
from .prefetch import prefetch as prefetch
from .sharding import ShardedBatch as ShardedBatch
from .sharding import measure_scaling as measure_scaling
from .sharding import shard_batch as shard_batch
