"""Reductions over padded data that ignore the padding.

A plain ``x.mean(axis=1)`` over a padded batch averages the pads in. These give, for every
item, what the reduction over its unpadded data gives, inside ``jit`` and ``vmap``, with
zero gradients at pads and never NaN. An item with no data gets what
``jax.ops.segment_*`` gives an empty segment (so padded and packed results agree): sum
``0``, mean ``0`` (``empty=`` to choose), max ``-inf`` (an integer dtype's minimum),
softmax all zeros. The mask has the shape of ``x`` or of its leading axes, any
axis of size 1 shared (``(batch, 1, length)`` for attention); any other shape is refused,
never broadcast silently. Integers are promoted to float, except by sum and max.
"""

from __future__ import annotations

import numbers
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from batchlab._util.checks import check_numeric_array
from batchlab.ragged.padding import Ragged, check_value

Array = jax.Array


def _prepare(x: Any, mask: Any, axis: int) -> tuple[Array, Array, int]:
    """Checks shapes and dtypes before any computation; aligns the mask with ``x``."""
    x = jnp.asarray(check_numeric_array(x, "x"))
    mask = jnp.asarray(check_numeric_array(mask, "mask"))
    fits = mask.ndim <= x.ndim and all(
        m in (1, n) for m, n in zip(mask.shape, x.shape, strict=False)
    )
    if mask.dtype != jnp.bool_ or not fits:
        raise (ValueError if mask.dtype == jnp.bool_ else TypeError)(
            f"`mask` must be boolean, of x's shape or its leading axes (size 1 on an axis it "
            f"shares, e.g. (batch, 1, seq) for heads), got {mask.dtype}{mask.shape} for x "
            f"{x.shape}; build it with a comparison (positions < lengths[:, None])."
        )
    is_int = isinstance(axis, (int, np.integer)) and not isinstance(axis, bool)
    # a negative axis of a mask with fewer dims than x would count from the mask's end
    if not is_int or not -mask.ndim <= axis < mask.ndim or (mask.ndim == 1 < x.ndim and axis < 0):
        raise (ValueError if is_int else TypeError)(
            f"`axis` must be one int, an axis of `mask` (shape {mask.shape}, x {x.shape}) counted "
            f"from the front, e.g. axis=1 for a (batch, seq) mask, got axis={axis!r}."
        )
    axis, mask = axis % mask.ndim, mask.reshape(mask.shape + (1,) * (x.ndim - mask.ndim))
    return x, jnp.broadcast_to(mask, x.shape), axis


def _check_empty(empty: Any, dtype: Any = None) -> None:
    """``empty`` must be a number; for ``masked_max`` (``dtype``: x's) one that dtype holds."""
    if isinstance(empty, bool) or not isinstance(empty, (numbers.Number, np.generic, jax.Array)):
        raise TypeError(
            f"`empty` (the result for a fully masked row) must be a number, e.g. empty=0.0 or "
            f"empty=float('nan'), got {type(empty).__name__} {empty!r}."
        )
    if dtype is not None and not jnp.issubdtype(dtype, jnp.inexact):  # masked_max keeps x's dtype
        check_value(empty, dtype, "empty", f"x's dtype {np.dtype(dtype).name}")


def to_float(x: Array) -> Array:
    """``x``, integers promoted to the default float dtype."""
    return x if jnp.issubdtype(x.dtype, jnp.inexact) else x.astype(jnp.result_type(float))


def masked_sum(x: Any, mask: Any, axis: int = -1) -> Array:
    """Sum over ``axis`` (a mask axis) where ``mask`` is ``True``: ``x``'s shape without ``axis``.

    Pad positions may hold anything, even NaN. The other reductions take the same arguments.

    Args:
      x: the padded values, a numeric array.
      mask: bool, ``True`` at real data: ``x``'s shape or its leading axes (size 1: shared).
      axis: the axis reduced, an axis of ``mask`` (a negative one counts from ``mask``'s end).

    Returns:
      ``x``'s shape without ``axis``, in ``x``'s dtype; 0 for an item with no data.

    Raises:
      TypeError: ``x`` or ``mask`` is not a numeric array, ``mask`` is not bool, or ``axis`` is
        not an int.
      ValueError: ``mask``'s shape does not fit ``x``, or ``axis`` is not an axis of ``mask``.

    Example:
      >>> x = jnp.array([[1, 2, 99], [5, 99, 99]])
      >>> masked_sum(x, jnp.array([[True, True, False], [True, False, False]]), axis=1).tolist()
      [3, 5]
    """
    x, mask, axis = _prepare(x, mask, axis)
    return jnp.sum(jnp.where(mask, x, jnp.zeros((), x.dtype)), axis=axis)


def masked_mean(x: Any, mask: Any, axis: int = -1, *, empty: float = 0.0) -> Array:
    """Mean over ``axis`` of the unmasked positions; ``empty`` for a fully masked row.

    Args:
      x, mask, axis: as in :func:`masked_sum`.
      empty: the result for an item with no data (e.g. ``float("nan")``).

    Returns:
      ``x``'s shape without ``axis``, a float array (integers promoted).

    Raises:
      TypeError: as :func:`masked_sum`, or ``empty`` is not a number.
      ValueError: as :func:`masked_sum`.

    Example:
      >>> x = jnp.array([[1.0, 2.0, 99.0], [5.0, 99.0, 99.0]])
      >>> masked_mean(x, jnp.array([[True, True, False], [False] * 3]), axis=1).tolist()
      [1.5, 0.0]
    """
    _check_empty(empty)
    x, mask, axis = _prepare(x, mask, axis)
    x = to_float(x)
    count = jnp.sum(mask, axis=axis)
    total = jnp.sum(jnp.where(mask, x, jnp.zeros((), x.dtype)), axis=axis)
    # the double `where`: never divide by 0, so no NaN in the value or the gradient
    safe = total / jnp.maximum(count, 1).astype(x.dtype)
    return jnp.where(count > 0, safe, jnp.asarray(empty, x.dtype))


def masked_max(x: Any, mask: Any, axis: int = -1, *, empty: Any = None) -> Array:
    """Maximum over ``axis`` of the unmasked positions, in ``x``'s dtype (``empty``: see above).

    Args:
      x, mask, axis: as in :func:`masked_sum`.
      empty: the result for an item with no data (default: ``-inf``, an integer dtype's minimum).

    Returns:
      ``x``'s shape without ``axis``, in ``x``'s dtype.

    Raises:
      TypeError: as :func:`masked_sum`, or ``empty`` is not a number.
      ValueError: as :func:`masked_sum`, or an ``empty`` that ``x``'s integer dtype cannot hold.

    Example:
      >>> x = jnp.array([[1.0, 2.0, 99.0], [5.0, 99.0, 99.0]])
      >>> masked_max(x, jnp.array([[True, True, False], [False] * 3]), axis=1).tolist()
      [2.0, -inf]
    """
    x, mask, axis = _prepare(x, mask, axis)
    if empty is not None:
        _check_empty(empty, x.dtype)
    if jnp.issubdtype(x.dtype, jnp.inexact):
        lowest = jnp.asarray(-jnp.inf, x.dtype)
    else:
        lowest = jnp.asarray(jnp.iinfo(x.dtype).min if x.dtype != jnp.bool_ else False, x.dtype)
    # initial: a length-0 axis (a batch of only empty items) has no maximum otherwise
    result = jnp.max(jnp.where(mask, x, lowest), axis=axis, initial=lowest)
    if empty is None:
        return result
    return jnp.where(jnp.any(mask, axis=axis), result, jnp.asarray(empty, x.dtype))


def masked_softmax(x: Any, mask: Any, axis: int = -1) -> Array:
    """Softmax over ``axis`` among unmasked positions: ``x``'s shape, 0 at pads and empty rows.

    Args:
      x, mask, axis: as in :func:`masked_sum`.

    Returns:
      A float array of ``x``'s shape (integers promoted): an item's weights sum to 1 (0 if empty).

    Raises:
      TypeError: as :func:`masked_sum`.
      ValueError: as :func:`masked_sum`.

    Example:
      >>> x = jnp.array([[1.0, 2.0, 99.0], [5.0, 99.0, 99.0]])
      >>> masked_softmax(x, jnp.array([[True, True, False], [True, False, False]])).tolist()
      [[0.269, 0.731, 0.0], [1.0, 0.0, 0.0]]
    """
    x, mask, axis = _prepare(x, mask, axis)
    x = to_float(x)
    zero = jnp.zeros((), x.dtype)
    # exp(x - m) at unmasked positions, m each row's finite maximum: pads never reach exp
    m = jnp.max(jnp.where(mask, x, -jnp.inf), axis=axis, keepdims=True, initial=-jnp.inf)
    m = jax.lax.stop_gradient(jnp.where(jnp.isfinite(m), m, zero))
    e = jnp.where(mask, jnp.exp(jnp.where(mask, x - m, zero)), zero)
    total = jnp.sum(e, axis=axis, keepdims=True)
    return e / jnp.where(total > 0, total, jnp.ones((), e.dtype))


def mean_pool(values: jax.Array, mask: jax.Array, table: jax.Array) -> jax.Array:
    """Embeds every token id and averages over the real tokens: ``(items, features)``."""
    return masked_mean(table[values], mask, axis=1)


def mean_pool_reference(ragged: Ragged, table: np.ndarray) -> np.ndarray:
    """Per-item numpy reference for :func:`mean_pool` (no padding anywhere)."""
    table = np.asarray(table)
    empty = np.zeros(table.shape[1], table.dtype)
    rows = [table[ragged.item(i)].mean(0) if n else empty for i, n in enumerate(ragged.lengths)]
    return np.stack(rows) if rows else np.zeros((0, table.shape[1]), table.dtype)
