"""Ways to batch a per-item function (01-03): one dispatcher, its axes, shapes and comparison."""

from batchlab.batching.axes import AxesExplanation, BatchAxisError, explain_axes
from batchlab.batching.broadcasting import (
    BroadcastError,
    SilentBroadcastWarning,
    aligned,
    check_broadcast,
    plot_outer_trap,
)
from batchlab.batching.comparison import Comparison, compare
from batchlab.batching.host_chunks import HostPlan
from batchlab.batching.strategies import ADVISED, DISPATCHED, PLANNED, STRATEGIES, batch

__all__ = [
    "ADVISED",
    "DISPATCHED",
    "PLANNED",
    "STRATEGIES",
    "AxesExplanation",
    "BatchAxisError",
    "BroadcastError",
    "Comparison",
    "HostPlan",
    "SilentBroadcastWarning",
    "aligned",
    "batch",
    "check_broadcast",
    "compare",
    "explain_axes",
    "plot_outer_trap",
]
