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
import resource
import subprocess
import sys
from dataclasses import replace
from typing import Any


def measure_in_subprocess(fn, args: tuple, kwargs: dict, options: dict[str, Any]):
    """Runs :func:`batchlab.measure` in a child process and returns its result."""
    import cloudpickle
    import numpy as np
    import jax

    # Send host copies: a device buffer cannot cross processes.
    host_args = jax.tree_util.tree_map(lambda a: np.asarray(a) if isinstance(a, jax.Array) else a, (args, kwargs))
    payload = cloudpickle.dumps((fn, host_args, options))
    proc = subprocess.run(
        [sys.executable, "-m", "batchlab._isolated"],
        input=payload,
        capture_output=True,
        env=os.environ.copy(),
        timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            "The isolated measurement failed in its subprocess:\n" + proc.stderr.decode(errors="replace")[-3000:]
        )
    return pickle.loads(proc.stdout)


def _child() -> None:
    import cloudpickle

    fn, (args, kwargs), options = cloudpickle.loads(sys.stdin.buffer.read())
    import jax
    import numpy as np

    from batchlab.measure import measure

    # Put the inputs on the device first, as they were in the parent, so the
    # timing excludes host-to-device copies and device_before counts them.
    args, kwargs = jax.tree_util.tree_map(
        lambda a: jax.device_put(a) if isinstance(a, np.ndarray) else a, (args, kwargs)
    )

    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = measure(fn, *args, **options, **kwargs)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    scale = 1 if sys.platform == "darwin" else 1024
    result = replace(
        result,
        isolated=True,
        host_peak_rss_bytes=int(peak_kib * scale),
        notes=(*result.notes, f"measured in a fresh process; host peak RSS before the call was "
                              f"{base_rss * scale / 2**20:.0f} MiB (jax and inputs loaded)"),
    )
    sys.stdout.buffer.write(pickle.dumps(result))
    sys.stdout.flush()


if __name__ == "__main__":
    _child()
