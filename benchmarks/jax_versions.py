"""Notebook 03's timing verdicts, measured on the JAX this runs with: run it in each CI venv.

The verdicts that the JAX version can flip (the gap 03 teaches comes from XLA:CPU, which
every JAX release rebuilds), on 03's own functions and sizes (CPU profile), each a ratio of
two fastest-of-many timings taken interleaved in one run (other processes only add time):

  V1. outer product, 512 items, chunks of 64: lax.map (the dot in a loop body) / host loop,
      03's claim ">= 2x";  V2. host loop / vmap, 03's claim "< 3x";
  V3. vmap(jnp.convolve) / hand-batched shifted slices, 03's claim ">= 5x".

Run:  .venv/bin/python benchmarks/jax_versions.py                                # jax 0.10.2
      artifacts/venv-py3.12-jax-new/bin/python benchmarks/jax_versions.py        # newest jax
Each writes benchmarks/results/jax_versions-<jax version>.txt.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import Report

import batchlab as bl

ROUNDS = 15


def fastest(fns: dict, args: dict) -> dict[str, float]:
    """Fastest of ROUNDS calls each, the sides interleaved call by call."""
    for name, f in fns.items():
        jax.block_until_ready(f(*args[name]))
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(ROUNDS):
        for name, f in fns.items():
            t0 = time.perf_counter()
            jax.block_until_ready(f(*args[name]))
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def main() -> int:
    s = bl.sizes("strategies")
    n, chunk = max(s.batch_sizes), max(s.batch_sizes) // 8
    keys = jax.random.split(jax.random.key(0), 7)
    report = Report(f"jax_versions-{jax.__version__}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    report.line(
        f"{os.cpu_count()} cores, load average (1 min) {load:.2f}; "
        f"fastest of {ROUNDS} interleaved calls each"
    )

    vecs = jax.random.normal(keys[6], (n, s.outer_dim))

    def outer(x):
        return jnp.tanh(jnp.outer(x, x)) @ x

    ways = {
        "vmap": bl.batch(outer),
        "lax.map": bl.batch(outer, strategy="map"),
        "host": bl.batch(outer, strategy="host", chunk_size=chunk),
    }
    t = fastest(ways, dict.fromkeys(ways, (vecs,)))
    v1, v2 = t["lax.map"] / t["host"], t["host"] / t["vmap"]
    report.line(
        f"V1. outer product, {n} items, chunks of {chunk}: lax.map / host = {v1:.2f}x "
        f"(03 claims >= 2x: {'holds' if v1 >= 2 else 'does not hold'})"
    )
    report.line(
        f"V2. host / vmap = {v2:.2f}x (03 claims < 3x: {'holds' if v2 < 3 else 'does not hold'}); "
        + ", ".join(f"{k} {bl.format_seconds(v)}" for k, v in t.items())
    )

    signals = jax.random.normal(keys[5], (n, s.signal))
    kernel = jnp.hanning(s.kernel)

    def conv(signal, kernel):
        return jnp.convolve(signal, kernel, mode="valid")

    def conv_hand(signals, kernel):
        length = signals.shape[1] - kernel.shape[0] + 1
        k = kernel[::-1]
        return sum(k[j] * signals[:, j : j + length] for j in range(kernel.shape[0]))

    convs = {"vmap(jnp.convolve)": bl.batch(conv, in_axes=(0, None)), "hand": jax.jit(conv_hand)}
    t = fastest(convs, dict.fromkeys(convs, (signals, kernel)))
    v3 = t["vmap(jnp.convolve)"] / t["hand"]
    report.line(
        f"V3. vmap(jnp.convolve) / hand-batched = {v3:.1f}x "
        f"(03 claims >= 5x: {'holds' if v3 >= 5 else 'does not hold'})"
    )
    report.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
