"""batchlab: measure what batching does in JAX, instead of repeating claims about it.

The public API is what this module exports. Notebooks and tests import from
``batchlab``, not from inner modules (except the notebook-facing
``batchlab.widgets``, ``batchlab.plots``, ``batchlab.exercises``,
``batchlab.workshop``, ``batchlab.loading`` and the ``batchlab.allocator``
simulation). Grouped by concept, in teaching order.
"""

from __future__ import annotations

__version__ = "0.1.0"

# measuring: where every number comes from (00_tour)
from .compiles import CompileCount as CompileCount
from .compiles import count_compiles as count_compiles
from .jit_cache import CompileReasons as CompileReasons  # 00: jit's cache key, in JAX's words
from .jit_cache import explain_compiles as explain_compiles
from .per_item import PerItemCost as PerItemCost  # 00: fixed per-call cost vs vectorized work
from .per_item import per_item_cost as per_item_cost
from .config import sizes as sizes
from .environment import Environment as Environment
from .environment import environment as environment
from .live import DeviceMemory as DeviceMemory
from .live import LiveMemory as LiveMemory
from .live import device_memory as device_memory
from .live import device_memory_unavailable_reason as device_memory_unavailable_reason
from .live import live_memory as live_memory
from .measure import Measurement as Measurement
from .measure import measure as measure
from .memory import MemoryEstimate as MemoryEstimate
from .memory import memory_estimate as memory_estimate
from .sweep import Sweep as Sweep
from .sweep import sweep as sweep
from ._format import format_bytes as format_bytes
from ._format import format_count as format_count
from ._format import format_seconds as format_seconds
from ._format import html_table as html_table
from ._format import text_table as text_table

# strategies, axes and broadcasting (01-03)
from .axes import AxesExplanation as AxesExplanation
from .axes import BatchAxisError as BatchAxisError
from .axes import explain_axes as explain_axes
from .broadcasting import BroadcastError as BroadcastError
from .broadcasting import SilentBroadcastWarning as SilentBroadcastWarning
from .broadcasting import check_broadcast as check_broadcast
from .compare import Comparison as Comparison
from .compare import compare as compare
from .host_chunks import HostPlan as HostPlan
from .strategies import batch as batch

# ragged data: padding, masking, bucketing (04-05)
from .bucketing import Bucket as Bucket
from .bucketing import Buckets as Buckets
from .padding_report import PaddingReport as PaddingReport
from .bucketing import bucketize as bucketize
from .bucketing import optimal_boundaries as optimal_boundaries
from .padding_report import padding_report as padding_report
from .bucketing import power_of_two_boundaries as power_of_two_boundaries
from .bucketing import quantile_boundaries as quantile_boundaries
from .datasets import TokenDataset as TokenDataset
from .datasets import load_stdlib_functions as load_stdlib_functions
from .datasets import lognormal_lengths as lognormal_lengths
from .datasets import random_sequences as random_sequences
from .datasets import zipf_lengths as zipf_lengths
from .masking import masked_logsumexp as masked_logsumexp
from .masking import masked_max as masked_max
from .masking import masked_mean as masked_mean
from .masking import masked_softmax as masked_softmax
from .masking import masked_sum as masked_sum
from .masking import mean_pool as mean_pool
from .masking import mean_pool_reference as mean_pool_reference
from .padding import Padded as Padded
from .padding import Ragged as Ragged
from .padding import pad as pad
from .padding import unpad as unpad
from .bucketing import bucket_batches as bucket_batches
from .packing import Packed as Packed
from .packing import pack as pack
from .packing import packed_max as packed_max
from .packing import packed_mean as packed_mean
from .packing import packed_mean_pool as packed_mean_pool
from .packing import packed_softmax as packed_softmax
from .packing import packed_sum as packed_sum
from .packing import unpack as unpack

# memory limits and faults (06-07)
from .budget import BatchSizeResult as BatchSizeResult
from .budget import Budget as Budget
from .budget import default_budget as default_budget
from .budget import max_batch_size as max_batch_size
from .checkpoint import CheckpointError as CheckpointError
from .run_result import BatchFnError as BatchFnError
from .run_result import BatchItemError as BatchItemError
from .run_result import BatchMemoryError as BatchMemoryError
from .runs import RunResult as RunResult
from .runs import run_batches as run_batches

# fragmentation and in-place updates (08-09); the simulation is batchlab.allocator
from .inplace import CompiledUpdate as CompiledUpdate
from .inplace import Donation as Donation
from .inplace import EagerUpdate as EagerUpdate
from .inplace import compiled_update as compiled_update
from .inplace import donate as donate
from .inplace import eager_update as eager_update
from .xla_buffers import BufferAssignment as BufferAssignment
from .xla_buffers import buffer_assignment as buffer_assignment

# loading and scaling (10-11)
from . import loading as loading
from . import loading_speed as loading_speed
from .prefetch import prefetch as prefetch
from .prefetch_compare import PrefetchComparison as PrefetchComparison
from .prefetch_compare import compare_prefetch as compare_prefetch

# what ran when: JAX's profiler trace, parsed and drawn (03, 07, 10)
from .timeline import Timeline as Timeline
from .timeline import timeline as timeline
from .timeline import trace as trace
from .timeline_plot import plot_timelines as plot_timelines
from .sharding import ShardedBatch as ShardedBatch
from .sharding import measure_scaling as measure_scaling
from .sharding import shard_batch as shard_batch
from .distributed import Launch as Launch
from .distributed import launch as launch
