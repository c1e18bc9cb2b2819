"""Beyond one device (11): one SPMD program over a mesh, and several processes on one machine."""

from batchlab.scaling.distributed import Launch, launch
from batchlab.scaling.sharding import ShardedBatch, replicate, shard_batch
from batchlab.scaling.speedup import Scaling, measure_scaling

__all__ = [
    "Launch",
    "Scaling",
    "ShardedBatch",
    "launch",
    "measure_scaling",
    "replicate",
    "shard_batch",
]
