"""The kit's drawings, for notebooks: every plot a notebook calls, and the axis helpers.

Plots draw results; they compute nothing. Each lives in the room of what it
draws and is collected here so a notebook has one place to find them.
"""

from batchlab._util.plotting import new_figure, short_seconds
from batchlab.batching.broadcasting import plot_outer_trap
from batchlab.ragged.report import plot_tradeoff
from batchlab.runs.budget_plot import plot_budget_curves
from batchlab.timeline.plot import plot_timelines

__all__ = [
    "new_figure",
    "plot_budget_curves",
    "plot_outer_trap",
    "plot_timelines",
    "plot_tradeoff",
    "short_seconds",
]
