"""Notebook 00's backend-dependent claims, measured on whatever backend runs this (meant for a GPU).

On CPU the notebook asserts exact figures; on a GPU it only asserts bounds,
because these were never measured there. This script prints what a GPU
gives, so the notebook's GPU text can be written from measurements:

  temp      compiled temp bytes of the tour's scorer against B * F * 4, and the
            temp values in XLA's buffer assignment (cuBLAS adds workspace?)
  bf16      argument and temp bytes after a change to bfloat16 (on XLA:CPU temp
            grows: the dot runs in float32; a GPU has bfloat16 matmuls)
  per item  the per-item speed-up of vmap at the largest batch over batch 1,
            split into fixed per-call cost (a call at batch 1 against lax.map's
            time per item) and vectorized work (lax.map against vmap per item)

Sizes come from ``bl.sizes("tour")`` (the ``gpu`` profile on a GPU).
Run: .venv/bin/python benchmarks/gpu_tour.py   (about 30 s on CPU)
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import Report

import batchlab as bl


def main() -> int:
    report = Report("gpu_tour")
    S = bl.sizes("tour")
    F = S.features

    def score_item(x, w, v):
        return jnp.tanh(x @ w) @ v

    scores = jax.vmap(score_item, in_axes=(0, None, None))
    w = jax.random.normal(jax.random.key(0), (F, F), jnp.float32) / F**0.5
    v = jnp.ones((F,), jnp.float32)

    def make_batch(b, dtype=jnp.float32):
        x = jax.random.normal(jax.random.key(1), (b, F), jnp.float32)
        return x.astype(dtype), w.astype(dtype), v.astype(dtype)

    report.line(f"profile {S.profile}, F = {F}, batch sizes {list(S.batch_sizes)}")
    for b in (S.batch_sizes[0], 64, S.batch_sizes[-1]):
        est = bl.memory_estimate(scores, *make_batch(b))
        ba = bl.buffer_assignment(scores, *make_batch(b))
        temp_values = [
            f"{val.name} {val.shape.split('{')[0]} @{val.offset}"
            for a in ba.allocations_of("temp")
            for val in a.values
            if val.start is not None
        ]
        report.line(
            f"temp at B={b}: {est.temp_bytes:,} B = {est.temp_bytes / (b * F * 4):.3f} x B*F*4; "
            f"values in temp: {temp_values}"
        )
        half = bl.memory_estimate(scores, *make_batch(b, jnp.bfloat16))
        report.line(
            f"  bfloat16: argument x{half.argument_bytes / est.argument_bytes:.2f}, "
            f"temp x{half.temp_bytes / max(est.temp_bytes, 1):.2f}"
        )

    n_loop = min(S.batch_sizes[-1], 1024)

    def score_loop(xs, w, v):
        return jax.lax.map(lambda x: score_item(x, w, v), xs)

    small, large = S.batch_sizes[0], S.batch_sizes[-1]
    looped, batched = jax.jit(score_loop), jax.jit(scores)
    args = {b: make_batch(b) for b in (small, large, n_loop)}
    timed = bl.measuring.interleaved(  # the three calls timed interleaved, ratios paired
        {
            "small": lambda: batched(*args[small]),
            "large": lambda: batched(*args[large]),
            "loop": lambda: looped(*args[n_loop]),
        }
    )
    items = {"small": small, "large": large, "loop": n_loop}
    per = {k: np.array(s.values) / items[k] for k, s in timed.items()}

    def ratio(a: str, b: str) -> float:  # median of the per-round ratios of time per item
        return float(np.median(per[a] / per[b]))

    fixed, vectorized = ratio("small", "loop"), ratio("loop", "large")
    report.line(
        f"per item: batch {small} {bl.format_seconds(np.median(per['small']))}, batch {large} "
        f"{bl.format_seconds(np.median(per['large']))}, lax.map over {n_loop} items "
        f"{bl.format_seconds(np.median(per['loop']))} (interleaved, paired by round)"
    )
    report.line(
        f"speed-up {ratio('small', 'large'):.1f}x = fixed per-call cost {fixed:.1f}x "
        f"x vectorized work {vectorized:.1f}x; one item's work is "
        f"{100 / fixed:.0f}% of a call at batch {small}"
    )
    report.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
