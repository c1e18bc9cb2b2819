"""Items of different lengths (04-05): pad, pack, mask, bucket, and what each costs."""

from batchlab.ragged.boundaries import (
    optimal_boundaries,
    power_of_two_boundaries,
    quantile_boundaries,
)
from batchlab.ragged.bucketing import Bucket, Buckets, bucket_batches, bucketize
from batchlab.ragged.datasets import (
    TokenDataset,
    load_stdlib_functions,
    lognormal_lengths,
    random_sequences,
    zipf_lengths,
)
from batchlab.ragged.masking import (
    masked_logsumexp,
    masked_max,
    masked_mean,
    masked_softmax,
    masked_sum,
    mean_pool,
    mean_pool_reference,
)
from batchlab.ragged.packing import (
    Packed,
    pack,
    packed_max,
    packed_mean,
    packed_mean_pool,
    packed_softmax,
    packed_sum,
    unpack,
)
from batchlab.ragged.padding import Padded, Ragged, pad, unpad
from batchlab.ragged.report import PaddingReport, padding_report, plot_tradeoff
from batchlab.ragged.timing import BucketPlan, BucketPoint

__all__ = [
    "Bucket",
    "BucketPlan",
    "BucketPoint",
    "Buckets",
    "Packed",
    "Padded",
    "PaddingReport",
    "Ragged",
    "TokenDataset",
    "bucket_batches",
    "bucketize",
    "load_stdlib_functions",
    "lognormal_lengths",
    "masked_logsumexp",
    "masked_max",
    "masked_mean",
    "masked_softmax",
    "masked_sum",
    "mean_pool",
    "mean_pool_reference",
    "optimal_boundaries",
    "pack",
    "packed_max",
    "packed_mean",
    "packed_mean_pool",
    "packed_softmax",
    "packed_sum",
    "pad",
    "padding_report",
    "plot_tradeoff",
    "power_of_two_boundaries",
    "quantile_boundaries",
    "random_sequences",
    "unpack",
    "unpad",
    "zipf_lengths",
]
