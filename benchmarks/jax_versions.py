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
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import Report

import batchlab as bl

ROUNDS = 15


def timed(fns: dict, args: dict) -> dict:
    """``{name: Samples}``: the sides interleaved round by round (bl.measuring.interleaved)."""
    return bl.measuring.interleaved(
        {name: (lambda f=f, a=args[name]: f(*a)) for name, f in fns.items()}, rounds=ROUNDS
    )


def verdict(rule, t: dict) -> str:
    d = rule(t)
    return f"{d.outcome}: {d.deciding}"


def main() -> int:
    s = bl.sizes("strategies")
    n, chunk = max(s.batch_sizes), max(s.batch_sizes) // 8
    keys = jax.random.split(jax.random.key(0), 7)
    report = Report(f"jax_versions-{jax.__version__}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    report.line(
        f"{os.cpu_count()} cores, load average (1 min) {load:.2f}; "
        f"{ROUNDS} interleaved rounds, decided on the per-round ratios"
    )

    vecs = jax.random.normal(keys[6], (n, s.outer_dim))

    def outer(x):
        return jnp.tanh(jnp.outer(x, x)) @ x

    ways = {
        "vmap": bl.batch(outer),
        "lax.map": bl.batch(outer, strategy="map"),
        "host": bl.batch(outer, strategy="host", chunk_size=chunk),
    }
    t = timed(ways, dict.fromkeys(ways, (vecs,)))
    v1 = verdict(bl.claims.ratio_above("lax.map", "host", 2.0), t)
    v2 = verdict(bl.claims.ratio_below("host", "vmap", 3.0), t)
    report.line(f"V1. outer product, {n} items, chunks of {chunk}: 03's lax.map > 2x host {v1}")
    report.line(
        f"V2. 03's host < 3x vmap {v2}; fastest: "
        + ", ".join(f"{k} {bl.format_seconds(v.fastest)}" for k, v in t.items())
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
    t = timed(convs, dict.fromkeys(convs, (signals, kernel)))
    v3 = verdict(bl.claims.ratio_above("vmap(jnp.convolve)", "hand", 5.0), t)
    report.line(f"V3. 03's vmap(jnp.convolve) > 5x hand-batched {v3}")
    report.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
