"""Memory limits and faults (06-07): the largest batch a budget fits (``max_batch_size``) and
runs that survive out of memory, bad items and Ctrl-C, and resume at any size (``run_batches``)."""

from batchlab.measuring.plan import planned_bytes
from batchlab.runs.budget import Budget, default_budget, max_batch_size
from batchlab.runs.checkpoint import CheckpointError
from batchlab.runs.errors import is_out_of_memory
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
