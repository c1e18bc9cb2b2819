"""Real allocator figures on a GPU: the notebook-08 workloads under three allocator settings.

Each (setting, workload) runs in a fresh Python process, because JAX reads
``XLA_PYTHON_CLIENT_PREALLOCATE`` and ``XLA_PYTHON_CLIENT_ALLOCATOR`` once,
at start-up, and ``peak_bytes_in_use`` cannot be reset inside a process.
Figures come from ``jax.Device.memory_stats()`` (the device allocator); on
the CPU backend there are none, so the script says so and exits 0.

Run: ``python benchmarks/gpu_fragmentation.py`` (about 2 minutes on one GPU).
Writes ``benchmarks/results/gpu_fragmentation.txt``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

SETTINGS = {
    "bfc, preallocated (default)": {},
    "bfc, grow on demand": {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"},
    "platform": {"XLA_PYTHON_CLIENT_ALLOCATOR": "platform"},
}
WORKLOADS = ("per-item", "batched", "training", "training-donated")
KEYS = (
    "bytes_in_use",
    "peak_bytes_in_use",
    "largest_free_block_bytes",
    "pool_bytes",
    "bytes_reserved",
    "num_allocs",
)


def child(workload: str) -> None:
    """Runs one workload as real JAX programs and prints the device's memory_stats() as JSON."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    features, max_len, n_items = 1024, 256, 24
    lengths = np.random.default_rng(0).integers(1, max_len + 1, size=n_items)
    w = jnp.ones((features, features), jnp.float32) * 0.001

    @jax.jit
    def process(x, w):  # activations twice the input, a small result kept
        h = jnp.tanh(x @ w)
        return jnp.concatenate([h, x], axis=-1).sum(axis=-2)

    results = []
    if workload == "per-item":  # every item its own shape
        for n in lengths:
            results.append(process(jnp.ones((1, int(n), features)), w))
    elif workload == "batched":  # one fixed shape
        for _ in range(0, n_items, 8):
            results.append(process(jnp.ones((8, max_len, features)), w))
    else:
        donate = workload.endswith("donated")
        step = jax.jit(
            lambda p, x: p - 0.01 * (x.T @ jnp.tanh(x @ p)), donate_argnums=(0,) if donate else ()
        )
        params = jnp.ones((features * 4, features), jnp.float32) * 0.001
        for _ in range(n_items):
            params = step(params, jnp.ones((512, features * 4), jnp.float32))
        results.append(params)
    jax.block_until_ready(results)
    stats = jax.devices()[0].memory_stats() or {}
    print(json.dumps({k: int(stats[k]) for k in KEYS if k in stats}))


def fmt(n) -> str:
    return "n/a" if n is None else f"{n / 2**20:9.1f} MiB"


def main() -> int:
    import jax

    if jax.default_backend() == "cpu":
        print(
            "gpu_fragmentation: needs a GPU (jax.Device.memory_stats() is None on the CPU backend); "
            "nothing measured. Run it on a GPU machine."
        )
        return 0
    rows, t0 = [], time.perf_counter()
    for setting, env in SETTINGS.items():
        for workload in WORKLOADS:
            proc = subprocess.run(
                [sys.executable, __file__, "--child", workload],
                env={**os.environ, **env},
                capture_output=True,
                text=True,
                timeout=120,
            )
            try:
                stats = json.loads(proc.stdout.strip().splitlines()[-1])
            except (IndexError, json.JSONDecodeError):
                stats = {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1][:80]}
            rows.append((setting, workload, stats))
    lines = [
        f"device memory_stats() after each workload, one fresh process each ({jax.devices()[0].device_kind})",
        f"{'setting':30s} {'workload':17s} " + " ".join(f"{k[:14]:>14s}" for k in KEYS) + "  frag",
    ]
    for setting, workload, s in rows:
        if "error" in s:
            lines.append(f"{setting:30s} {workload:17s} failed: {s['error']}")
            continue
        free = (s.get("pool_bytes") or s.get("bytes_limit", 0)) - s.get("bytes_in_use", 0)
        lfb = s.get("largest_free_block_bytes")
        frag = f"{1 - min(lfb, free) / free:.1%}" if lfb is not None and free > 0 else "n/a"
        lines.append(
            f"{setting:30s} {workload:17s} "
            + " ".join(
                f"{s[k]:>14d}" if k == "num_allocs" and k in s else f"{fmt(s.get(k)):>14s}"
                for k in KEYS
            )
            + f"  {frag}"
        )
    lines.append(f"(took {time.perf_counter() - t0:.0f} s)")
    print("\n".join(lines))
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    with open(
        os.path.join(os.path.dirname(__file__), "results", "gpu_fragmentation.txt"), "w"
    ) as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
    else:
        sys.exit(main())
