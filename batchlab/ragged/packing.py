"""Packing ragged items back to back: segment reductions that compute no pads.

A mask does not skip work (a ``where``, then a full-size sum). Packing does: the items
back to back in one array, each position's item index as its *segment id*, reduced with
``jax.ops.segment_sum`` / ``segment_max``: work proportional to the true length. With a
fixed ``total_length`` and ``max_items`` every batch has one shape (one compile); the tail
gets segment id ``max_items``, out of range, so ``segment_*`` drops it. Empty items follow
:mod:`batchlab.ragged.masking`'s convention.

The reductions take ``x``, per-position values ``(total_length, *features)`` (e.g.
``packed.values`` or ``table[packed.values]``), and the :class:`Packed` batch it follows.

Example:
  >>> p = pack([[1, 2, 3], [4], []], total_length=6)
  >>> p.values.tolist(), p.segment_ids.tolist(), p.lengths.tolist()
  ([1, 2, 3, 4, 0, 0], [0, 0, 0, 1, 3, 3], [3, 1, 0])
  >>> packed_sum(p.values, p).tolist(), packed_mean(p.values, p).tolist()
  ([6, 4, 0], [2.0, 4.0, 0.0])
  >>> packed_max(p.values, p).tolist()[:2], packed_softmax(p.values, p).tolist()[3:]
  ([3, 4], [1.0, 0.0, 0.0])
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from batchlab._util.format import Rows
from batchlab.ragged.masking import to_float
from batchlab.ragged.padding import Cost, as_ragged, check_size, check_value, layout_rows


class Packed(NamedTuple):
    """Items back to back: ``values[segment_ids == i]`` is item ``i``."""

    values: np.ndarray
    segment_ids: np.ndarray
    lengths: np.ndarray

    @property
    def num_segments(self) -> int:
        return int(self.lengths.shape[0])

    @property
    def padded_elements(self) -> int:
        """Positions computed on: ``total_length``."""
        return int(self.segment_ids.shape[0])

    @property
    def true_elements(self) -> int:
        return int(np.sum(self.lengths))

    waste = Cost.waste  # the tail's share: 0 when total_length is the sum of the lengths

    def _rows(self) -> list[tuple[str, str]]:
        segments = f"{self.num_segments} ({int(np.sum(self.lengths > 0))} non-empty)"
        return layout_rows(self, ("segments", segments), " (the tail)")

    def _title(self) -> str:
        return "a packed batch (values + segment ids)"

    __repr__, _repr_html_ = Rows.__repr__, Rows._repr_html_


def pack(
    seqs: Any,
    *,
    total_length: int | None = None,
    max_items: int | None = None,
    value: Any = 0,
    dtype: Any = None,
) -> Packed:
    """Packs ragged items back to back into one array, with segment ids and lengths.

    Args:
      seqs: a list of 1-D sequences, of ``(len, *features)`` arrays, or a :class:`~batchlab.Ragged`.
      total_length: the packed length; default: the sum of the lengths (no tail).
      max_items: the number of segments; default: the number of items. Fix both (e.g. to
        the largest batch's) and every batch has one shape: one compile.
      value: the value of the tail positions (must fit ``dtype``).
      dtype: the result dtype; default: the items' own.

    Example:
      >>> p = pack([[1.0, 2.0], [3.0]], total_length=4, max_items=3)
      >>> p.segment_ids.tolist(), p.lengths.tolist()
      ([0, 0, 1, 3], [2, 1, 0])
    """
    total_length = check_size(total_length, "total_length")
    max_items = check_size(max_items, "max_items")
    ragged = as_ragged(seqs, dtype=dtype)
    lengths, n = ragged.lengths, len(ragged)
    true = int(lengths.sum())
    total_length = true if total_length is None else total_length
    max_items = n if max_items is None else max_items
    if total_length < true:
        raise ValueError(
            f"the items hold {true:,} elements but `total_length`={total_length:,}; pass "
            f"total_length >= {true} (packing never cuts data), or pack fewer items."
        )
    if max_items < n:
        raise ValueError(f"there are {n} items but `max_items`={max_items}; pass max_items >= {n}.")
    check_value(value, ragged.flat.dtype)
    flat = ragged.flat[ragged.offsets[0] : ragged.offsets[0] + true]
    shape = (total_length, *flat.shape[1:])
    values = np.zeros(shape, flat.dtype) if value == 0 else np.full(shape, value, flat.dtype)
    values[:true] = flat
    ids = np.full(total_length, max_items, np.int32)
    ids[:true] = np.repeat(np.arange(n, dtype=np.int32), lengths)
    return Packed(values, ids, np.pad(lengths, (0, max_items - n)).astype(np.int32))


def unpack(packed: Packed) -> list[np.ndarray]:
    """The items of a :class:`Packed` batch (inverse of :func:`pack`, unused slots included).

    Example:
      >>> [s.tolist() for s in unpack(pack([[1, 2], [], [3]], total_length=5))]
      [[1, 2], [], [3]]
    """
    values, lengths = np.asarray(packed.values), np.asarray(packed.lengths)
    return [values[e - k : e] for e, k in zip(np.cumsum(lengths), lengths, strict=True)]


def _segments(x: Any, packed: Packed) -> tuple[jax.Array, jax.Array, int]:
    x, ids = jnp.asarray(x), jnp.asarray(packed.segment_ids)
    if x.ndim == 0 or x.shape[0] != ids.shape[0]:
        raise ValueError(
            f"`x` has shape {x.shape} but the packed batch has {ids.shape[0]} positions; pass "
            f"per-position values of shape ({ids.shape[0]}, ...), e.g. table[packed.values]."
        )
    return x, ids, packed.num_segments


def packed_sum(x: Any, packed: Packed) -> jax.Array:
    """Per-item sum of packed values: ``(max_items, *features)``; ``0`` for an empty item."""
    x, ids, n = _segments(x, packed)
    return jax.ops.segment_sum(x, ids, num_segments=n, indices_are_sorted=True)


def packed_mean(x: Any, packed: Packed) -> jax.Array:
    """Per-item mean of packed values; ``0`` for an empty item (never NaN)."""
    x, ids, n = _segments(x, packed)
    total = jax.ops.segment_sum(to_float(x), ids, num_segments=n, indices_are_sorted=True)
    count = jnp.maximum(jnp.asarray(packed.lengths), 1).astype(total.dtype)
    return total / count.reshape(count.shape + (1,) * (x.ndim - 1))


def packed_max(x: Any, packed: Packed) -> jax.Array:
    """Per-item maximum; ``-inf`` (floats) or the dtype's minimum (ints) for an empty item."""
    x, ids, n = _segments(x, packed)
    return jax.ops.segment_max(x, ids, num_segments=n, indices_are_sorted=True)


def packed_softmax(x: Any, packed: Packed) -> jax.Array:
    """Softmax of every item's positions, in place: ``(total_length, *features)``; 0 on the tail."""
    x, ids, n = _segments(x, packed)
    x = to_float(x)
    m = jax.ops.segment_max(x, ids, num_segments=n, indices_are_sorted=True)
    m = jax.lax.stop_gradient(jnp.where(jnp.isfinite(m), m, jnp.zeros((), x.dtype)))
    real = (ids < n).reshape(ids.shape + (1,) * (x.ndim - 1))
    safe_ids = jnp.minimum(ids, max(n - 1, 0))
    shift = m[safe_ids] if n else jnp.zeros_like(x)
    e = jnp.where(real, jnp.exp(jnp.where(real, x - shift, 0)), 0)
    total = jax.ops.segment_sum(e, ids, num_segments=n, indices_are_sorted=True)
    denom = total[safe_ids] if n else jnp.ones_like(x)
    return e / jnp.where(real & (denom > 0), denom, 1)


def packed_mean_pool(packed: Packed, table: jax.Array) -> jax.Array:
    """Embeds every packed token id and averages per item: ``(max_items, features)``.

    Example:
      >>> table = jnp.array([[0.0, 0.0], [1.0, 2.0], [3.0, 4.0]])
      >>> packed_mean_pool(pack([[1, 2], [2]]), table).tolist()
      [[2.0, 3.0], [3.0, 4.0]]
    """
    return packed_mean(jnp.asarray(table)[packed.values], packed)
