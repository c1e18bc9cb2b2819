"""What ran when (03, 07, 10): JAX's profiler trace, captured, parsed into lanes and drawn.

``with trace() as t:`` (or ``timeline(fn, *args)``) runs code under
``jax.profiler.trace(..., create_perfetto_trace=True)`` and parses the
Perfetto JSON into a :class:`Timeline`: Python dispatch, runtime waits, XLA
ops on the worker threads, ``TraceAnnotation`` spans; ``plot_timelines``
draws several on one figure.
"""

from batchlab.timeline.capture import timeline, trace
from batchlab.timeline.model import Timeline
from batchlab.timeline.plot import plot_timelines

__all__ = ["Timeline", "plot_timelines", "timeline", "trace"]
