"""Where every number comes from (00_tour, 08, 09): time, planned memory, live memory, compiles."""

from batchlab.measuring.buffers import BufferAssignment, buffer_assignment
from batchlab.measuring.compiles import count_compiles, explain_compiles
from batchlab.measuring.inplace import compiled_update, donate, eager_update
from batchlab.measuring.live import (
    device_memory,
    device_memory_unavailable_reason,
    environment,
    live_memory,
)
from batchlab.measuring.per_item import Sweep, per_item_cost
from batchlab.measuring.plan import MemoryEstimate, memory_estimate
from batchlab.measuring.sampler import interleaved
from batchlab.measuring.samples import Samples
from batchlab.measuring.timing import Measurement, measure

__all__ = [
    "BufferAssignment",
    "Measurement",
    "MemoryEstimate",
    "Samples",
    "Sweep",
    "buffer_assignment",
    "compiled_update",
    "count_compiles",
    "device_memory",
    "device_memory_unavailable_reason",
    "donate",
    "eager_update",
    "environment",
    "explain_compiles",
    "interleaved",
    "live_memory",
    "measure",
    "memory_estimate",
    "per_item_cost",
]
