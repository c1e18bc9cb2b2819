"""Exercises for notebook 03 (vmap versus manual batching)."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from batchlab.exercises import exercise


@exercise("strategies.manual_pairwise", "pairwise_all(xs, ys): (n, m) distances without vmap.")
def manual_pairwise(answer: Any) -> tuple[bool, str]:
    rng = np.random.default_rng(7)
    xs, ys = rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=(4, 3)).astype(np.float32)
    expected = np.sqrt(((xs[:, None, :] - ys[None]) ** 2).sum(-1))  # what vmap of one row gives
    out = np.asarray(answer(jnp.asarray(xs), jnp.asarray(ys)))
    if out.shape != expected.shape:
        return False, f"Your result has shape {out.shape}; want one row per x, one column per y."
    if not np.allclose(out, expected, rtol=1e-4, atol=1e-5):
        return False, "The shape is right, not the values: which axis do you sum the squares over?"
    return True, "Right: the same numbers as vmap, written by hand with broadcasting."


@exercise("strategies.chunk_count", "vmap(f) runs at chunk_size=64 on 1000 items? Give an int.")
def chunk_count(answer: Any) -> tuple[bool, str]:
    if isinstance(answer, bool) or not isinstance(answer, (int, np.integer)):
        return False, f"Give a whole number (an int), got {type(answer).__name__}."
    if answer == 16:
        return True, "Right."
    if answer == 15:
        return False, "That counts the full chunks only: what runs the items they leave over?"
    if answer == 1:
        return False, "1 is the number of dispatches (one program); how often does vmap(f) run?"
    return False, (
        "Divide 1000 by 64: the whole part is the loop's iterations; then count one more run if "
        "anything is left over. Check it with jax.make_jaxpr: the scan's `length`, plus one."
    )


@exercise("strategies.host_chunk_size", "Small/large host chunk: (time, temp, dispatch) ratios.")
def host_chunk_size(answer: Any, *, items: int, chunks: tuple[int, int]) -> tuple[bool, str]:
    time_ratio, temp_ratio, dispatch_ratio = (float(v) for v in answer)
    # dispatches: one chunk alone is one call; more chunks are a split, a step each, a concatenation
    steps = [-(-items // c) for c in chunks]
    calls = [1 if n == 1 else n + 2 for n in steps]
    if abs(dispatch_ratio - calls[0] / calls[1]) > 0.01 * calls[0] / calls[1]:
        return False, (
            "Count the dispatches again: besides one step per chunk, the host loop makes one more "
            "call before the steps and one after them. Use the `dispatches` column of bl.compare."
        )
    if not temp_ratio < 1:
        return False, "Smaller chunks hold fewer intermediates: did you divide small by large?"
    if not time_ratio > 0:
        return False, "The time ratio is small over large chunk's seconds: a positive number."
    # the time ratio is not judged: a timing never decides a check (a busy machine can flip it)
    return True, "Right. Now explain each ratio (why is the temp ratio not small / large?)."
