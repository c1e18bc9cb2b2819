"""Exercises for notebook 01 (vmap and its axes): hints point at the concept, never the answer."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from ..axes import BatchAxisError, explain_axes
from . import exercise


@exercise(
    "axes.item_shape",
    "x has shape (4, 6, 3) and is mapped with in_axes=1. What shape does fn see per item?",
)
def item_shape(answer: Any) -> tuple[bool, str]:
    """
    Example:
      >>> item_shape((4, 3))
      (True, 'Right: vmap removes axis 1 (size 6), so each call sees (4, 3).')
      >>> item_shape((6, 3))[0]
      False
    """
    try:
        answer = tuple(int(d) for d in answer)
    except TypeError:
        return False, "Answer with a shape, a tuple of ints like (2, 5)."
    if answer == (4, 3):
        return True, "Right: vmap removes axis 1 (size 6), so each call sees (4, 3)."
    if answer == (6, 3):
        return (
            False,
            "That removes axis 0. in_axes=1 names the axis that is mapped over, counting from 0.",
        )
    if len(answer) == 3:
        return False, "vmap removes the mapped axis: one item has one axis fewer than the batch."
    return False, "Remove exactly the axis that in_axes names from (4, 6, 3)."


@exercise(
    "axes.fix_in_axes",
    "Find in_axes so that vmap runs score(x, w) over the 5 rows of x with w shared.",
)
def fix_in_axes(answer: Any, *, fn=None, x=None, w=None) -> tuple[bool, str]:
    """
    Example:
      >>> fix_in_axes((0, None))[0], fix_in_axes(0)[0]
      (True, False)
    """
    fn = fn or (lambda x, w: x @ w)
    x = jnp.ones((5, 3)) if x is None else x
    w = jnp.ones((3, 2)) if w is None else w
    try:
        e = explain_axes(fn, x, w, in_axes=answer)
    except BatchAxisError as err:
        return False, f"vmap would refuse it: {str(err).split('.')[0]}."
    mapped = {lf.label: lf.axis for lf in e.inputs}
    if e.batch_size == x.shape[0] and mapped.get("w", 0) is None and mapped.get("x") == 0:
        return True, "Right: x is mapped over its rows and w is shared by every item."
    if mapped.get("w") is not None:
        return False, "w is the same for every item: which in_axes entry means 'not mapped'?"
    return False, "The batch is the 5 rows of x: map the axis of x that has 5 items."
