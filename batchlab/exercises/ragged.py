"""Exercises for notebooks 04 (padding and masking) and 05 (bucketing and recompilation)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from batchlab.exercises import direction, exercise
from batchlab.ragged.boundaries import optimal_boundaries, padded_elements


@exercise("ragged.wasted_fraction", "Fraction of the padded positions that are pads (0 to 1).")
def wasted_fraction(answer: Any, *, lengths: Any) -> tuple[bool, str]:
    lengths = np.asarray(lengths)
    if abs(float(answer) - (1 - lengths.sum() / (len(lengths) * lengths.max()))) < 1e-3:
        return True, "Right."
    return False, "Count pads, not data: padded is batch x longest; data fills sum(lengths)."


@exercise("ragged.masked_mean", "my_masked_mean(x, mask): NaN-free, 0.0 for an empty row.")
def masked_mean_exercise(answer: Callable, *, x: Any, mask: Any) -> tuple[bool, str]:
    x, mask = jnp.asarray(x), jnp.asarray(mask)
    rows = [np.asarray(x[i])[np.asarray(mask[i])] for i in range(x.shape[0])]
    expected = np.array([r.mean() if len(r) else 0.0 for r in rows], dtype=np.float32)
    got = np.asarray(jax.jit(answer)(x, mask))
    if got.shape != expected.shape:
        return False, f"Your result has shape {got.shape}; reduce over axis 1: one number per row."
    if not np.allclose(got, expected, rtol=1e-5, atol=1e-6):
        return False, "Not the per-item mean: do pads leak in? An empty row gives 0.0, not 0/0."
    if not np.all(np.isfinite(np.asarray(jax.grad(lambda x: jnp.sum(answer(x, mask)))(x)))):
        return False, (
            "The value is right but the gradient has NaN: a `where` after a division by 0 still "
            "differentiates that division. Make the division itself safe."
        )
    return True, "Correct, including empty rows and a NaN-free gradient (the 'double where' trick)."


@exercise("ragged.predict_compiles", "Compilations unpadded and bucketed: (raw, bucketed).")
def predict_compiles(answer: Any, *, lengths: Any, boundaries: Any) -> tuple[bool, str]:
    raw, bucketed = (int(v) for v in answer)
    if raw != len(np.unique(lengths)):
        return False, "Raw count is off: jit compiles once per distinct input shape, not per call."
    if bucketed != len(np.unique(np.searchsorted(boundaries, lengths))):
        return False, "Bucketed count is off: only boundaries that receive an item make a shape."
    return True, "Right: one compilation per distinct shape; bucketing caps it at used buckets."


@exercise("ragged.three_boundaries", "3 bucket boundaries within 5% of the best padded size.")
def three_boundaries(answer: Any, *, lengths: Any) -> tuple[bool, str]:
    lengths, b = np.asarray(lengths), [int(v) for v in answer]
    if len(b) != 3 or b != sorted(set(b)) or b[-1] < lengths.max():
        return False, "Give 3 increasing ints, the last >= the longest, e.g. [32, 128, 1601]."
    best = padded_elements(lengths, optimal_boundaries(lengths, 3))
    mine = padded_elements(lengths, b)
    if mine <= 1.05 * best:
        return True, f"Within {mine / best - 1:.1%} of the optimum found by dynamic programming."
    return False, (
        f"Your boundaries pad {mine / best:.2f}x as much as the best 3. Most items are short: "
        "does your first bucket end close to where most lengths are?"
    )


@exercise("ragged.long_item", "One long item's flop factors: (padded_factor, packed_factor).")
def long_item(answer: Any, *, lengths: Any, extra: int) -> tuple[bool, str]:
    lengths = np.asarray(lengths)
    padded = (len(lengths) + 1) * max(int(lengths.max()), extra) / (len(lengths) * lengths.max())
    packed = (lengths.sum() + extra) / lengths.sum()
    a_padded, a_packed = (float(v) for v in answer)
    if not 0.5 <= a_padded / padded <= 2:
        return False, "The padded factor is off: a mask computes items x longest; and now?"
    if not 0.5 <= a_packed / packed <= 2:
        return False, "The packed factor is off: packing costs the sum of the lengths, no more."
    return True, "Right."


@exercise("ragged.batch_size_change", "New batch_size: compiles, filler_rows, batches (a dict).")
def batch_size_change(
    answer: Any, *, lengths: Any, boundaries: Any, old: int, new: int
) -> tuple[bool, str]:
    hints = {
        "compiles": "What decides a compiled shape: the number of batches, or (batch_size, "
        "boundary)?",
        "filler_rows": "Filler rows only fill up each bucket's last batch: at most "
        "batch_size - 1 per bucket.",
        "batches": "Each bucket is cut into ceil(items / batch_size) batches.",
    }
    if not isinstance(answer, dict) or set(answer) != set(hints):
        return False, "Answer with a dict: {'compiles': ..., 'filler_rows': ..., 'batches': ...}."
    counts = np.bincount(np.searchsorted(boundaries, lengths))
    counts = counts[counts > 0]  # items per bucket that receives any

    def epoch(bs: int) -> dict[str, int]:
        filler, batches = int(np.sum(-counts % bs)), int(np.sum(-(-counts // bs)))
        return {"compiles": len(counts), "filler_rows": filler, "batches": batches}

    before, after = epoch(old), epoch(new)
    words = ("fewer", "same", "more")
    said = {k: str(answer[k]).strip().lower() for k in hints}
    wrong = [k for k in hints if said[k] != direction(after[k], before[k], 0, words)]
    if wrong:
        return False, " ".join(hints[k] for k in wrong)
    return True, "Right."
