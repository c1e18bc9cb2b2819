"""Getting data to the device (10): per-item, bulk and memory-mapped loading, and prefetch."""

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
from batchlab.loading.prefetching import (
    PrefetchComparison,
    compare_prefetch,
    prefetch,
    prefetch_threads,
)
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
