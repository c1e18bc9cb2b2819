"""The child side of observed peaks and limited runs (:func:`batchlab._util.child.run_child`).

:func:`run_here` runs jobs ``(label, kind, run, args, budget)``; a leaf of ``args`` is a host
array (``jax.device_put``: one buffer) or a ``ShapeDtypeStruct`` (made here as zeros). Each
job warms up (compiles), frees everything (``gc``, ``malloc_trim``), then ``"observe"``: the
peak of one call (CPU: ``VmHWM`` reset by ``/proc/self/clear_refs`` minus RSS before; GPU:
``peak_bytes_in_use`` minus ``bytes_in_use``), or ``"limit"``: one call under ``RLIMIT_AS``
= ``VmSize`` now + ``budget``. Replies are plain values (JSON: nothing is unpickled).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
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
    """Host arrays put on the device (one buffer each), specs made there as zeros."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    def one(a):
        if isinstance(a, jax.ShapeDtypeStruct):
            return jnp.zeros(a.shape, a.dtype)
        return jax.device_put(a) if isinstance(a, np.ndarray) else a

    return jax.tree_util.tree_map(one, args)


def warm_up(run: Any, args: Any) -> None:
    import jax

    jax.block_until_ready(run(*to_device(args)))  # compiles every program it needs
    trim()


def observe_one(run: Any, args: Any) -> dict:
    """The peak of one call after a warm-up: host RSS growth on CPU, the device peak on a GPU."""
    import jax

    device = jax.devices()[0]
    warm_up(run, args)
    stats = device.memory_stats()
    if stats is not None:
        before = int(stats.get("bytes_in_use", 0))
        jax.block_until_ready(run(*to_device(args)))
        peak = int(device.memory_stats().get("peak_bytes_in_use", 0))
        return {
            "bytes": max(peak - before, 0),
            "source": "device memory_stats: peak_bytes_in_use - bytes_in_use before",
        }
    if rss_bytes() is None or not reset_peak():
        return {"bytes": None, "source": "no resettable host peak here (needs Linux /proc)"}
    before = rss_bytes()
    out = jax.block_until_ready(run(*to_device(args)))
    peak = rss_bytes("VmHWM")
    del out
    return {
        "bytes": max(int(peak) - int(before), 0),
        "source": "host peak RSS (VmHWM, reset before the call) - RSS before, fresh process",
    }


def limit_one(run: Any, args: Any, budget: int) -> dict:
    """One call under ``RLIMIT_AS`` = the warmed-up baseline (``VmSize``) + ``budget``."""
    import resource

    import jax

    warm_up(run, args)
    base = rss_bytes("VmSize")
    if base is None:
        return {"ran": None, "source": "no address-space figure here (needs Linux /proc)"}
    resource.setrlimit(resource.RLIMIT_AS, (base + int(budget), resource.RLIM_INFINITY))
    try:
        jax.block_until_ready(run(*to_device(args)))
        outcome = {"ran": True, "error": None}
    except Exception as e:  # the limit bit: its message is the figure
        outcome = {"ran": False, "error": f"{type(e).__name__}: {str(e)[:300]}"}
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    return {
        **outcome,
        "baseline_bytes": base,
        "source": "RLIMIT_AS = VmSize after a warm-up call (compiled, freed, trimmed) + budget",
    }


def run_here(jobs: list) -> dict:
    """``{label: reply}`` for every job, one after the other in this process."""
    result = {}
    for label, kind, run, args, budget in jobs:
        try:
            result[label] = (
                limit_one(run, args, budget) if kind == "limit" else observe_one(run, args)
            )
        except Exception as e:  # one job's failure (e.g. out of memory) is its figure
            result[label] = {
                "bytes": None,
                "ran": None,
                "source": f"failed: {type(e).__name__}: {str(e)[:200]}",
            }
        trim()
    return result
