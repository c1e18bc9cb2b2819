"""The plan path's names the runs room imported from here; they live in :mod:`batchlab.measuring.plan`."""

from batchlab.measuring.plan import batch_args, batch_planner

__all__ = ["batch_args", "batch_planner"]
