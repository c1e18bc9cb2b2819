"""Getting data to the device (10): per-item, bulk and memory-mapped loading, and prefetch."""

from batchlab.loading.files import Dataset, batch_indices, iter_batches, load_npy, make_dataset
from batchlab.loading.prefetching import prefetch, prefetch_threads
from batchlab.loading.speed import measure_ceiling

__all__ = [
    "Dataset",
    "batch_indices",
    "iter_batches",
    "load_npy",
    "make_dataset",
    "measure_ceiling",
    "prefetch",
    "prefetch_threads",
]
