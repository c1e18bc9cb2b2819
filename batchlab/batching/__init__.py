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
from batchlab.batching.strategies import PLANNED, STRATEGIES, batch

__all__ = [
    "PLANNED",
    "STRATEGIES",
    "AxesExplanation",
    "BatchAxisError",
    "BroadcastError",
    "Comparison",
    "SilentBroadcastWarning",
    "aligned",
    "batch",
    "check_broadcast",
    "compare",
    "explain_axes",
    "plot_outer_trap",
]
