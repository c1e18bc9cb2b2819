"""Beyond one device (11): one SPMD program over a mesh, and several processes on one machine.

``shard_batch`` splits a batch over a mesh's ``"batch"`` axis (padding an
uneven one, with a mask); ``replicate`` puts shared weights on every device;
``measure_scaling`` times a program over growing device counts; ``launch``
runs a function in N local processes joined by ``jax.distributed``
(``batchlab.scaling.distributed``).
"""

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
