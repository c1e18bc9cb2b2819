"""What ran when (03, 07, 10): JAX's profiler trace, captured, parsed into lanes and drawn."""

from batchlab.timeline.capture import timeline, trace
from batchlab.timeline.model import Timeline
from batchlab.timeline.plot import plot_timelines

__all__ = ["Timeline", "plot_timelines", "timeline", "trace"]
