"""Exercises for notebook 03 (vmap versus manual batching)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import exercise


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
