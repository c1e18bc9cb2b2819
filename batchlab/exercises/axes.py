"""Exercises for notebook 01 (vmap and its axes): hints point at the concept, never the answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from batchlab.batching.axes import BatchAxisError, explain_axes
from batchlab.exercises import choose, exercise


@exercise("axes.item_shape", "Shape fn sees per item of x (4, 6, 3) with in_axes=1?")
def item_shape(answer: Any) -> tuple[bool, str]:
    if isinstance(answer, (str, bytes)):  # "43" would read as (4, 3)
        return False, "Answer with a shape, a tuple of ints like (2, 5), not a string."
    if tuple(answer) == (4, 3):
        return True, "Right: vmap removes the mapped axis, only that one; the others keep order."
    return False, "vmap removes exactly the axis in_axes names, counting from 0, from (4, 6, 3)."


@exercise("axes.columns_batch", "in_axes and out_axes mapping x @ w over x's 5 columns.")
def columns_batch(answer: Any, *, fn: Callable, x: Any, w: Any) -> tuple[bool, str]:
    if not isinstance(answer, dict) or not {"in_axes", "out_axes"} <= set(answer):
        return False, "Answer with a dict {'in_axes': ..., 'out_axes': ...}."
    try:
        e = explain_axes(fn, x, w, in_axes=answer["in_axes"], out_axes=answer["out_axes"])
    except (BatchAxisError, TypeError) as err:  # TypeError: each call sees unmultipliable shapes
        why = str(err).splitlines()[0].split(". ")[0]  # the first sentence: never the fix
        return False, f"vmap would refuse it ({why}): which axes hold the items?"
    mapped = {lf.label: lf.axis for lf in e.inputs}
    if mapped.get("w") is not None or e.batch_size != x.shape[1] or mapped.get("x") != 1:
        return False, "5 items, one per column of x, and w the same for every item: which in_axes?"
    if e.outputs[0].shape != (w.shape[1], x.shape[1]):
        got = e.outputs[0].shape
        return False, f"The output comes out as {got}: out_axes says where the batch axis goes."
    return True, "Right: in_axes picks the axis that holds the items, out_axes where they go."


@exercise("axes.non_square", "in_axes=(1, None) on a (3, 4) batch: error, wrong or right answer?")
def non_square(answer: Any, *, fn: Callable, x: Any, w: Any) -> tuple[bool, str]:
    try:
        wrong = jax.vmap(fn, in_axes=(1, None))(x, w)
    except (TypeError, ValueError):
        truth = "error"
    else:
        right = jax.vmap(fn, in_axes=(0, None))(x, w)
        same = wrong.shape == right.shape and bool(jnp.allclose(wrong, right))
        truth = "right answer" if same else "wrong answer"
    return choose(
        answer,
        truth,
        ("error", "wrong answer", "right answer"),
        "Right. Now say why, from the shape each call sees and the shape of w.",
        "Not this time. With in_axes=(1, None), what shape does each call see for x, and can "
        "it be multiplied by w? Try it with plain jax.vmap and read JAX's message.",
    )
