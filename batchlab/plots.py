"""Every plot a notebook calls (each lives in the room of what it draws), and the axis helpers."""

from batchlab._util.plotting import new_figure, short_seconds
from batchlab.batching.broadcasting import plot_outer_trap
from batchlab.ragged.boundaries import plot_tradeoff
from batchlab.runs.budget import plot_budget_curves
from batchlab.timeline.plot import plot_timelines

__all__ = [
    "new_figure",
    "plot_budget_curves",
    "plot_outer_trap",
    "plot_timelines",
    "plot_tradeoff",
    "short_seconds",
]
