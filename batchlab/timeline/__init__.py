"""What ran when (03, 07, 10): JAX's profiler trace, captured, parsed into lanes and drawn."""

from batchlab.timeline.capture import timeline, trace

__all__ = ["timeline", "trace"]
