"""The child side of ``measure(..., isolated=True)``: ``python -m batchlab.measuring.isolated_child PATH``.

Reads a cloudpickled (fn, jit options, (args, kwargs), options) from stdin
(a jitted fn arrives as its function and jit's options and is wrapped again), measures it
in this fresh process and writes the Measurement as JSON to ``PATH`` (a file
the parent opened only for the result), with the process's peak resident
memory attached. stdout stays free for ``fn``'s own prints.
"""

from __future__ import annotations

import json
import resource
import sys
from dataclasses import replace

from batchlab.measuring.isolated import to_json
from batchlab.measuring.timing import measure


def _send_error(result_path: str, kind: str, message: str) -> None:
    with open(result_path, "w", encoding="utf-8") as f:
        json.dump({"error": {"type": kind, "message": message}}, f)


def main() -> None:
    import cloudpickle

    result_path = sys.argv[1]
    import jax
    import numpy as np

    try:
        fn, jit_options, (args, kwargs), options = cloudpickle.loads(sys.stdin.buffer.read())
    except Exception as e:  # e.g. a module fn needs is not importable here
        _send_error(
            result_path,
            "TypeError",
            f"`fn` or its arguments could not be rebuilt in the fresh process "
            f"({type(e).__name__}: {e}); define fn in an importable module or in the notebook "
            f"itself, or measure with isolated=False.",
        )
        return
    if jit_options is not None:  # a jitted fn travels as its function and jit's options
        fn = jax.jit(fn, **jit_options)

    # timing excludes host-to-device copies and device_before counts them.
    args, kwargs = jax.tree_util.tree_map(
        lambda a: jax.device_put(a) if isinstance(a, np.ndarray) else a, (args, kwargs)
    )

    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        result = measure(fn, *args, **options, **kwargs)
    except Exception as e:  # sent back as text, re-raised in the parent
        _send_error(result_path, type(e).__name__, str(e))
        return
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    scale = 1 if sys.platform == "darwin" else 1024
    result = replace(
        result,
        isolated=True,
        host_peak_rss_bytes=int(peak_kib * scale),
        notes=(
            *result.notes,
            f"measured in a fresh process; host peak RSS before the call was "
            f"{base_rss * scale / 2**20:.0f} MiB (jax and inputs loaded)",
        ),
    )
    sys.stdout.flush()
    with open(result_path, "w", encoding="utf-8") as f:
        f.write(to_json(result))


if __name__ == "__main__":
    main()
