"""The child side of ``measure(..., isolated=True)``, run by :func:`batchlab._util.child.run_child`."""

from __future__ import annotations

import dataclasses
import resource
import sys
from typing import Any

from batchlab.measuring.timing import measure


def measure_here(payload: Any) -> dict:
    import jax
    import numpy as np

    fn, jit_options, (args, kwargs), options = payload
    if jit_options is not None:  # a jitted fn travels as its function and jit's options
        fn = jax.jit(fn, **jit_options)
    # timing excludes host-to-device copies and device_before counts them.
    args, kwargs = jax.tree_util.tree_map(
        lambda a: jax.device_put(a) if isinstance(a, np.ndarray) else a, (args, kwargs)
    )
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = measure(fn, *args, **options, **kwargs)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    scale = 1 if sys.platform == "darwin" else 1024
    result = dataclasses.replace(
        result,
        isolated=True,
        host_peak_rss_bytes=int(peak_kib * scale),
        notes=(
            *result.notes,
            f"measured in a fresh process; host peak RSS before the call was "
            f"{base_rss * scale / 2**20:.0f} MiB (jax and inputs loaded)",
        ),
    )
    return dataclasses.asdict(result)
