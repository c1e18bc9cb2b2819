"""Getting data to the device (10): per-item, bulk and memory-mapped loading, and prefetch.

``make_dataset`` writes a dataset of ``.npy`` files; ``load_npy`` and
``iter_batches`` read it per item, in bulk or memory-mapped; ``measure_loading``
and ``measure_ceiling`` time that against the machine's own copy speed;
``prefetch`` overlaps loading with compute in a thread, and
``compare_prefetch`` measures what it adds over a loop that does not sync.
"""

from batchlab.loading.files import (
    METHODS,
    ORDERS,
    TRANSFERS,
    Dataset,
    batch_indices,
    iter_batches,
    load_npy,
    make_dataset,
)
from batchlab.loading.prefetch_compare import PrefetchComparison, compare_prefetch
from batchlab.loading.prefetching import prefetch, prefetch_threads
from batchlab.loading.speed import (
    Ceiling,
    last_level_cache_bytes,
    measure_ceiling,
    measure_loading,
)

__all__ = [
    "METHODS",
    "ORDERS",
    "TRANSFERS",
    "Ceiling",
    "Dataset",
    "PrefetchComparison",
    "batch_indices",
    "compare_prefetch",
    "iter_batches",
    "last_level_cache_bytes",
    "load_npy",
    "make_dataset",
    "measure_ceiling",
    "measure_loading",
    "prefetch",
    "prefetch_threads",
]
