"""The child side of the advisor's observed peaks: ``python -m batchlab.advisor.observe_child PATH``.

Reads a cloudpickled list of ``(label, run, args)`` from stdin, where ``run(*args)`` runs
one candidate's whole batch (``args`` hold host numpy arrays). For each candidate, in
this fresh process: one warm-up call (it compiles), then everything freed
(``gc.collect``, glibc's ``malloc_trim(0)``), then the observed call. On CPU (Linux) the
kernel's resident high-water mark is reset first (``/proc/self/clear_refs``: 5), so the
figure is ``VmHWM`` after the call minus the resident set before its inputs were put on
the device: inputs, outputs and temporaries of that call. On a GPU the figure is the
device's ``peak_bytes_in_use`` minus ``bytes_in_use`` before the call (the parent sends one
candidate per process there: a device peak cannot be reset). Writes JSON to ``PATH``.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import sys
from typing import Any


def rss_bytes(field: str = "VmRSS") -> int | None:
    """A ``/proc/self/status`` memory field in bytes (Linux), else None."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def reset_peak() -> bool:
    """Resets the resident high-water mark (Linux >= 4.0); False where it cannot."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def trim() -> None:
    """Frees what Python and glibc keep, so the next call's pages are faulted in anew."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def to_device(args: Any) -> Any:
    import jax
    import jax.numpy as jnp
    import numpy as np

    return jax.tree_util.tree_map(
        lambda a: jnp.array(a, copy=True) if isinstance(a, np.ndarray) else a, args
    )


def observe_one(run: Any, args: Any) -> dict:
    import jax

    device = jax.devices()[0]
    jax.block_until_ready(run(*to_device(args)))  # warm-up: compiles every program it needs
    trim()
    stats = device.memory_stats()
    if stats is not None:
        before = int(stats.get("bytes_in_use", 0))
        jax.block_until_ready(run(*to_device(args)))
        peak = int(device.memory_stats().get("peak_bytes_in_use", 0))
        return {
            "bytes": max(peak - before, 0),
            "source": "device memory_stats: peak_bytes_in_use - bytes_in_use before",
        }
    before = rss_bytes()
    if before is None or not reset_peak():
        return {"bytes": None, "source": "no resettable host peak here (needs Linux /proc)"}
    before = rss_bytes()
    out = jax.block_until_ready(run(*to_device(args)))
    peak = rss_bytes("VmHWM")
    del out
    return {
        "bytes": max(int(peak) - int(before), 0),
        "source": "host peak RSS (VmHWM, reset before the call) - RSS before, fresh process",
    }


def main() -> None:
    import cloudpickle

    path = sys.argv[1]
    try:
        jobs = cloudpickle.loads(sys.stdin.buffer.read())
    except Exception as e:  # e.g. a module fn needs is not importable here
        result = {"error": f"could not rebuild the candidates here ({type(e).__name__}: {e})"}
    else:
        result = {}
        for label, run, args in jobs:
            try:
                result[label] = observe_one(run, args)
            except Exception as e:  # one candidate's failure (e.g. out of memory) is its figure
                result[label] = {
                    "bytes": None,
                    "source": f"failed: {type(e).__name__}: {str(e)[:200]}",
                }
            trim()
    with open(path, "w", encoding="utf-8") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
