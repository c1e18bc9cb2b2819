"""Exercises for notebook 02 (shapes and broadcasting)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from batchlab.exercises import choose, exercise


@exercise("broadcasting.predict_shape", "What shape do (8, 1, 3) and (5, 1) broadcast to?")
def predict_shape(answer: Any) -> tuple[bool, str]:
    if tuple(answer) == (8, 5, 3):
        return True, "Right: aligned from the right, a missing axis counts as 1, each 1 stretches."
    if len(answer) != 3:
        return False, "The result has as many axes as the longest operand."
    return False, "Align the shapes from the RIGHT, then on each axis take the size that is not 1."


@exercise("broadcasting.residual", "residual(pred, y): the (n,) differences of (n, 1) and (n,).")
def residual(answer: Any) -> tuple[bool, str]:
    pred = np.arange(6.0, dtype=np.float32).reshape(6, 1)
    y = np.linspace(0.0, 1.0, 6, dtype=np.float32)
    with jax.numpy_rank_promotion("allow"):
        out = np.asarray(answer(pred, y))
    if out.shape != (6,):
        hint = " an outer product: every pred against every y" if out.shape == (6, 6) else ""
        return False, f"Your result has shape {out.shape}:{hint}. Make both operands (n,) first."
    if not np.allclose(out, pred[:, 0] - y):
        return False, "The shape is right but the values are not pred[i] - y[i]."
    return True, "Right: both operands have one shape, so the difference is element by element."


@exercise("broadcasting.batch_of_one", "(n, 1) - (n,) MSE at n = 1: error, wrong or right answer?")
def batch_of_one(answer: Any, *, n: int) -> tuple[bool, str]:
    pred = jax.random.normal(jax.random.key(3), (n, 1))
    labels = jax.random.normal(jax.random.key(4), (n,))
    with jax.numpy_rank_promotion("allow"):  # (n, 1) - (n,) broadcasts: it never raises
        written = jnp.mean((pred - labels) ** 2)
    same = bool(jnp.allclose(written, jnp.mean((pred[:, 0] - labels) ** 2), rtol=1e-6))
    return choose(
        answer,
        "right answer" if same else "wrong answer",
        ("error", "wrong answer", "right answer"),
        "Right. Now say why, and what a test with this batch size can catch.",
        f"Not this time. With n = {n}, what shape does pred - labels have, how many pairs "
        "(i, j) does the mean average over, and how many of them are the pairs you meant?",
    )
