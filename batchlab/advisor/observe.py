"""Observed peaks: each candidate run for real in a fresh process, its peak memory read.

XLA's plan is a lower bound of what a call needs; the advisor also *observes*
it. On CPU (Linux) one fresh process runs every candidate in turn, resetting
the kernel's resident high-water mark before each (``/proc/self/clear_refs``),
so each figure is that call's own growth: host peak RSS minus RSS before.
On a GPU a device peak cannot be reset, so each candidate gets a process of
its own and the figure is ``peak_bytes_in_use - bytes_in_use`` before. Where
neither is possible the figure is absent (``None``), with the reason.
The child is :mod:`batchlab.runs.observed`, the one ``max_batch_size(margin="calibrated")``
uses (:func:`batchlab.runs.calibration.run_jobs`).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from batchlab.advisor.candidates import Candidate
from batchlab.measuring.live import device_memory
from batchlab.runs.calibration import run_jobs


def _host(tree: Any) -> Any:
    return jax.tree_util.tree_map(lambda a: np.asarray(a) if isinstance(a, jax.Array) else a, tree)


def observe(candidates: list[Candidate], timeout: float) -> dict[str, tuple[int | None, str]]:
    """``{label: (observed bytes or None, source)}`` for every candidate, each run in a fresh process."""
    jobs = [(c.label, "observe", c.run, _host(c.args), 0) for c in candidates]
    if not jobs:
        return {}
    if device_memory() is None:  # CPU: one process, the peak reset before each candidate
        reply = run_jobs(jobs, timeout)
    else:  # a device peak cannot be reset: one process per candidate
        reply = {}
        for job in jobs:
            reply.update(run_jobs([job], timeout / len(jobs)))
    return {label: (r.get("bytes"), str(r.get("source"))) for label, r in reply.items()}


__all__ = ["observe"]
