"""Items of different lengths (04-05): pad, pack, mask, bucket, and what each costs."""

from batchlab.ragged.boundaries import optimal_boundaries, padding_report
from batchlab.ragged.bucketing import bucket_batches, bucketize
from batchlab.ragged.datasets import load_stdlib_functions
from batchlab.ragged.masking import (
    masked_max,
    masked_mean,
    masked_softmax,
    masked_sum,
    mean_pool,
    mean_pool_reference,
)
from batchlab.ragged.packing import pack, packed_mean_pool
from batchlab.ragged.padding import Ragged, pad, unpad

__all__ = [
    "Ragged",
    "bucket_batches",
    "bucketize",
    "load_stdlib_functions",
    "masked_max",
    "masked_mean",
    "masked_softmax",
    "masked_sum",
    "mean_pool",
    "mean_pool_reference",
    "optimal_boundaries",
    "pack",
    "packed_mean_pool",
    "pad",
    "padding_report",
    "unpad",
]
