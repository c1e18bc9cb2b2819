"""Memory limits and faults (06-07): budgets, the largest batch that fits, runs that resume.

``max_batch_size`` searches XLA's compiled plans for the largest batch under a budget;
``run_batches`` runs a dataset in batches, shrinking a batch that runs out of memory,
bisecting to bad items and journalling finished items, so a killed or interrupted run
resumes at any batch size.
"""

from batchlab.runs.budget import Budget, default_budget, max_batch_size
from batchlab.runs.checkpoint import CheckpointError
from batchlab.runs.errors import is_out_of_memory
from batchlab.runs.planning import planned_bytes
from batchlab.runs.results import BatchFnError, RunInterrupted, RunResult
from batchlab.runs.runner import run_batches
from batchlab.runs.search import compilation_target

__all__ = [
    "BatchFnError",
    "Budget",
    "CheckpointError",
    "RunInterrupted",
    "RunResult",
    "compilation_target",
    "default_budget",
    "is_out_of_memory",
    "max_batch_size",
    "planned_bytes",
    "run_batches",
]
