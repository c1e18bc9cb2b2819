"""``measure(..., isolated=True)``: one measurement in a fresh Python process.

The device's ``peak_bytes_in_use`` (and the host's peak RSS) can only grow
within a process, so an exact peak for one function needs a process of its
own. The function and its inputs travel by cloudpickle on stdin; the
:class:`~batchlab.measure.Measurement` comes back pickled on stdout. The
child inherits the parent's environment, so allocator settings
(``XLA_PYTHON_CLIENT_*``) apply to it too.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from typing import Any


def measure_in_subprocess(fn, args: tuple, kwargs: dict, options: dict[str, Any]):
    """Runs :func:`batchlab.measure` in a child process and returns its result."""
    import cloudpickle
    import jax
    import numpy as np

    # Send host copies: a device buffer cannot cross processes.
    host_args = jax.tree_util.tree_map(
        lambda a: np.asarray(a) if isinstance(a, jax.Array) else a, (args, kwargs)
    )
    payload = cloudpickle.dumps((fn, host_args, options))
    proc = subprocess.run(
        [sys.executable, "-m", "batchlab._isolated_child"],
        input=payload,
        capture_output=True,
        env=os.environ.copy(),
        timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            "The isolated measurement failed in its subprocess:\n"
            + proc.stderr.decode(errors="replace")[-3000:]
        )
    return pickle.loads(proc.stdout)
