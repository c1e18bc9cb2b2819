"""Observed peaks: each candidate run for real in a fresh process, its peak memory read.

XLA's plan is a lower bound of what a call needs; the advisor also *observes*
it. On CPU (Linux) one fresh process runs every candidate in turn, resetting
the kernel's resident high-water mark before each (``/proc/self/clear_refs``),
so each figure is that call's own growth: host peak RSS minus RSS before.
On a GPU a device peak cannot be reset, so each candidate gets a process of
its own and the figure is ``peak_bytes_in_use - bytes_in_use`` before. Where
neither is possible the figure is absent (``None``), with the reason.
See :mod:`batchlab.advisor.observe_child`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any

import cloudpickle
import jax
import numpy as np

from batchlab.advisor.candidates import Candidate
from batchlab.measuring.live import device_memory


def _host(tree: Any) -> Any:
    return jax.tree_util.tree_map(lambda a: np.asarray(a) if isinstance(a, jax.Array) else a, tree)


def _child(jobs: list, timeout: float) -> dict[str, dict]:
    payload = cloudpickle.dumps(jobs)
    fd, path = tempfile.mkstemp(prefix="batchlab-advise-", suffix=".json")
    os.close(fd)
    try:
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "batchlab.advisor.observe_child", path],
                input=payload,
                capture_output=True,
                # the parent's import path: a fn defined in the user's module pickles by reference
                env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
                timeout=max(timeout, 1.0),
            )
        except subprocess.TimeoutExpired:
            return {
                label: {"bytes": None, "source": "not observed: max_seconds ran out"}
                for label, _, _ in jobs
            }
        with open(path, encoding="utf-8") as f:
            text = f.read()
    finally:
        os.unlink(path)
    if not text:
        why = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        return {
            label: {"bytes": None, "source": f"the observing process died ({why[0][:160]})"}
            for label, _, _ in jobs
        }
    reply = json.loads(text)
    if "error" in reply:
        return {label: {"bytes": None, "source": reply["error"]} for label, _, _ in jobs}
    return reply


def observe(candidates: list[Candidate], timeout: float) -> dict[str, tuple[int | None, str]]:
    """``{label: (observed bytes or None, source)}`` for every candidate, each run in a fresh process."""
    jobs = [(c.label, c.run, _host(c.args)) for c in candidates]
    if not jobs:
        return {}
    if device_memory() is None:  # CPU: one process, the peak reset before each candidate
        reply = _child(jobs, timeout)
    else:  # a device peak cannot be reset: one process per candidate
        reply = {}
        for job in jobs:
            reply.update(_child([job], timeout / len(jobs)))
    return {label: (r.get("bytes"), str(r.get("source"))) for label, r in reply.items()}


__all__ = ["observe"]
