"""Beyond one device (11): one SPMD program over a mesh, and several processes on one machine."""

from batchlab.scaling.distributed import launch, loopback_unavailable
from batchlab.scaling.sharding import replicate, shard_batch
from batchlab.scaling.speedup import measure_scaling

__all__ = ["launch", "loopback_unavailable", "measure_scaling", "replicate", "shard_batch"]
