"""Exercises for notebook 03 (vmap versus manual batching)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from batchlab.exercises import exercise


def _pairwise(x, ys):
    return jnp.sqrt(((x[None, :] - ys) ** 2).sum(-1))


@exercise(
    "strategies.manual_pairwise",
    "Write pairwise_batched(xs, ys) for xs (n, d) and ys (m, d) returning the "
    "(n, m) distances, without vmap (broadcasting only).",
)
def manual_pairwise(answer: Any) -> tuple[bool, str]:
    """
    Example:
      >>> manual_pairwise(lambda xs, ys: jnp.sqrt(((xs[:, None, :] - ys[None]) ** 2).sum(-1)))[0]
      True
    """
    k1, k2 = jax.random.split(jax.random.key(7))
    xs, ys = jax.random.normal(k1, (5, 3)), jax.random.normal(k2, (4, 3))
    expected = np.asarray(jax.vmap(_pairwise, (0, None))(xs, ys))
    out = np.asarray(answer(xs, ys))
    if out.shape != expected.shape:
        return (
            False,
            f"Your result has shape {out.shape}, expected one row per x and one column per y.",
        )
    if not np.allclose(out, expected, rtol=1e-4, atol=1e-5):
        return (
            False,
            "The shape is right but not the values: which axis do you sum the squared differences over?",
        )
    return True, "Right: the same numbers as vmap, written by hand with broadcasting."


@exercise(
    "strategies.chunk_count",
    "With 1000 items and strategy='chunked', batch_size=64: how many vmap calls "
    "run (full chunks plus the remainder)?",
)
def chunk_count(answer: Any) -> tuple[bool, str]:
    """
    Example:
      >>> chunk_count(16)[0], chunk_count(15)[0]
      (True, False)
    """
    if answer == 16:
        return (
            True,
            "Right: 15 full chunks of 64 (960 items) in a sequential loop, then one vmap over the last 40.",
        )
    if answer == 15:
        return False, "15 full chunks cover 960 items: what happens to the rest?"
    return False, "Divide 1000 by 64: full chunks, then one more call for the remainder, if any."


def _host_dispatches(items: int, chunk: int) -> int:
    chunks = -(-items // chunk)
    return 1 if chunks == 1 else chunks + 2  # a split, one step per chunk, a concatenation


@exercise(
    "strategies.host_chunk_size",
    "Run strategy='host' on the MLP with a small and a large chunk; give (time ratio, temp ratio, "
    "dispatch ratio), small chunk over large chunk, and explain each.",
)
def host_chunk_size(answer: Any, *, items: int, chunks: tuple[int, int]) -> tuple[bool, str]:
    """
    Example:
      >>> host_chunk_size((9.0, 0.23, 66 / 4), items=512, chunks=(8, 256))[0]
      True
      >>> host_chunk_size((9.0, 0.23, 64 / 2), items=512, chunks=(8, 256))[1][:22]
      'Count the dispatches a'
    """
    try:
        time_ratio, temp_ratio, dispatch_ratio = (float(v) for v in answer)
    except (TypeError, ValueError):
        return (
            False,
            "Give three numbers: (time ratio, temp ratio, dispatch ratio), small chunk over large.",
        )
    small, large = chunks
    expected = _host_dispatches(items, small) / _host_dispatches(items, large)
    if abs(dispatch_ratio - expected) > 0.01 * expected:
        return False, (
            "Count the dispatches again: besides one step per chunk, the host loop makes one more call "
            "before the steps and one after them. Use the `dispatches` column of bl.compare."
        )
    if not temp_ratio < 1:
        return (
            False,
            "Smaller chunks hold fewer intermediates at a time: did you divide small by large?",
        )
    if not time_ratio > 1:
        return False, (
            "On this MLP the small chunks should take longer: what does each dispatch cost next to the "
            "work of 8 items? Measure again, small chunk over large chunk."
        )
    return True, (
        f"Right: {dispatch_ratio:.1f}x the dispatches, each paying a fixed overhead larger than the work "
        f"of a small chunk, so the run is slower; the step's temp shrinks with the chunk, but the "
        f"whole call's temp ({temp_ratio:.2f}x, not {small / large:.2f}x) also holds a copy of the "
        f"inputs and the chunk outputs, which do not shrink."
    )
