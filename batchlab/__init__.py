"""batchlab: measure what batching does in JAX, instead of repeating claims about it.

The public face: the names below, one block per notebook, in teaching order; each room (a
folder: ``batchlab.measuring``, ``runs``, ...) holds the rest of its concept (README, "Layout").
"""

from __future__ import annotations

__version__ = "0.1.0"

from batchlab import advisor as advisor
from batchlab import allocator as allocator
from batchlab import batching as batching
from batchlab import claims as claims
from batchlab import loading as loading
from batchlab import measuring as measuring
from batchlab import ragged as ragged
from batchlab import runs as runs
from batchlab import scaling as scaling
from batchlab import timeline as timeline
from batchlab import plots as plots  # every drawing a notebook calls (matplotlib only)

# every notebook: the backend's facts, sizes per machine profile, human units
from batchlab._util.backend import backend_facts
from batchlab._util.config import sizes
from batchlab._util.format import format_bytes, format_count, format_seconds, html_table, text_table

# 00 tour: where every number comes from
from batchlab.measuring import (
    buffer_assignment,
    count_compiles,
    device_memory,
    environment,
    explain_compiles,
    measure,
    memory_estimate,
)

# 01-02 axes and broadcasting
from batchlab.batching import (
    BatchAxisError,
    BroadcastError,
    SilentBroadcastWarning,
    check_broadcast,
    explain_axes,
)

# 03 strategies (the one dispatcher) and what ran when
from batchlab.batching import batch, compare
from batchlab.timeline import trace

# 04 padding, masking, packing
from batchlab.ragged import (
    Ragged,
    load_stdlib_functions,
    masked_max,
    masked_mean,
    masked_softmax,
    masked_sum,
    pack,
    pad,
    unpad,
)

# 05 bucketing and recompilation
from batchlab.ragged import bucket_batches, bucketize, optimal_boundaries, padding_report

# 06-07 memory budgets, errors and resumable runs
from batchlab.runs import CheckpointError, default_budget, max_batch_size, run_batches

# 08-09 fragmentation (the simulation is batchlab.allocator) and in-place updates
from batchlab.measuring import compiled_update, donate, eager_update

# 10 loading (the rest is batchlab.loading)
from batchlab.loading import prefetch

# 11 scaling out
from batchlab.scaling import launch, measure_scaling, shard_batch

# 12 the user's own function: strategy, chunk and batch size, measured here, explained
from batchlab.advisor import advise  # its result: batchlab.advisor.Advice

__all__ = [
    "backend_facts",
    "format_bytes",
    "format_count",
    "format_seconds",
    "html_table",
    "sizes",
    "text_table",
    "claims",
    "buffer_assignment",
    "count_compiles",
    "device_memory",
    "environment",
    "explain_compiles",
    "measure",
    "memory_estimate",
    "BatchAxisError",
    "BroadcastError",
    "SilentBroadcastWarning",
    "check_broadcast",
    "explain_axes",
    "batch",
    "compare",
    "trace",
    "Ragged",
    "load_stdlib_functions",
    "masked_max",
    "masked_mean",
    "masked_softmax",
    "masked_sum",
    "pack",
    "pad",
    "unpad",
    "bucket_batches",
    "bucketize",
    "optimal_boundaries",
    "padding_report",
    "CheckpointError",
    "default_budget",
    "max_batch_size",
    "run_batches",
    "allocator",
    "compiled_update",
    "donate",
    "eager_update",
    "loading",
    "prefetch",
    "launch",
    "measure_scaling",
    "shard_batch",
    "advise",
]
