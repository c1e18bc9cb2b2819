"""Exercises for notebook 02 (shapes and broadcasting)."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from . import exercise


@exercise("broadcasting.predict_shape", "What shape do (8, 1, 3) and (5, 1) broadcast to?")
def predict_shape(answer: Any) -> tuple[bool, str]:
    """
    Example:
      >>> predict_shape((8, 5, 3))[0], predict_shape((8, 5))[0]
      (True, False)
    """
    try:
        answer = tuple(int(d) for d in answer)
    except TypeError:
        return False, "Answer with a shape, a tuple of ints."
    if answer == (8, 5, 3):
        return (
            True,
            "Right: aligned from the right, (5, 1) becomes (1, 5, 1), and each 1 stretches.",
        )
    if len(answer) != 3:
        return False, "The result has as many axes as the longest operand."
    return False, "Align the shapes from the RIGHT, then on each axis take the size that is not 1."


@exercise(
    "broadcasting.residual",
    "Write residual(pred, y) for pred of shape (n, 1) and y of shape (n,) "
    "that returns the (n,) element-wise differences pred - y.",
)
def residual(answer: Any) -> tuple[bool, str]:
    """
    Example:
      >>> residual(lambda pred, y: pred[:, 0] - y)[0]
      True
      >>> residual(lambda pred, y: pred - y)[1][:40]
      'Your result has shape (6, 6): an outer p'
    """
    pred = np.arange(6.0, dtype=np.float32).reshape(6, 1)
    y = np.linspace(0.0, 1.0, 6, dtype=np.float32)
    with jax.numpy_rank_promotion("allow"):
        out = np.asarray(answer(pred, y))
    if out.shape != (6,):
        hint = " an outer product: every pred against every y" if out.shape == (6, 6) else ""
        return (
            False,
            f"Your result has shape {out.shape}:{hint}. Make both operands (n,) before subtracting.",
        )
    if not np.allclose(out, pred[:, 0] - y):
        return False, "The shape is right but the values are not pred[i] - y[i]."
    return True, "Right: both are (n,), so the difference is element by element."
