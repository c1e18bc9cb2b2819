"""Packing ragged items back to back: a segment reduction that computes no pads.

A mask still computes every pad (a ``where``, then a full-size sum); packing puts the items back
to back with each position's item index as its *segment id*, reduced by
``jax.ops.segment_sum``: work proportional to the true length. The tail past the items gets
segment id ``max_items``, out of range, so ``segment_sum`` drops it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from batchlab._util.checks import check_int
from batchlab.ragged.padding import Cost, Padded, as_ragged


class Packed(NamedTuple):
    """Items back to back: ``values[segment_ids == i]`` is item ``i``."""

    values: np.ndarray
    segment_ids: np.ndarray
    lengths: np.ndarray

    @property
    def num_segments(self) -> int:
        """The number of items packed."""
        return int(self.lengths.shape[0])

    @property
    def padded_elements(self) -> int:
        """Positions computed: the packed length, tail included."""
        return int(self.segment_ids.shape[0])

    true_elements = Padded.true_elements
    waste = Cost.waste  # the tail's share: 0 when total_length is the sum of the lengths


def pack(seqs: Any, *, total_length: int | None = None, max_items: int | None = None) -> Packed:
    """Packs ragged items back to back into one array, with segment ids and lengths.

    ``total_length`` (default: the sum of the lengths) and ``max_items`` (default: the item
    count) fix the shape: set both to the largest batch's and every batch compiles once.

    Args:
      seqs: 1-D sequences or a :class:`Ragged`.
      total_length: the packed length; the tail past the items is 0 with segment id ``max_items``.
      max_items: the number of segments (``lengths`` gets 0 for the missing ones).

    Returns:
      A :class:`Packed`: ``values`` and ``segment_ids`` (``total_length`` each), and ``lengths``.

    Raises:
      TypeError: ``seqs`` is not a list of 1-D sequences of numbers, or ``total_length`` /
        ``max_items`` is not an int.
      ValueError: ``total_length`` below the items' total length, ``max_items`` below their count.

    Example:
      >>> p = pack([[1, 2, 3], [4]], total_length=6, max_items=3)
      >>> p.values.tolist(), p.segment_ids.tolist(), p.lengths.tolist()
      ([1, 2, 3, 4, 0, 0], [0, 0, 0, 1, 3, 3], [3, 1, 0])
    """
    total_length = check_int(total_length, "total_length", allow_none=True)
    max_items = check_int(max_items, "max_items", allow_none=True)
    ragged = as_ragged(seqs)
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
    flat = ragged.flat[ragged.offsets[0] : ragged.offsets[0] + true]
    values = np.zeros((total_length, *flat.shape[1:]), flat.dtype)
    values[:true] = flat
    ids = np.full(total_length, max_items, np.int32)
    ids[:true] = np.repeat(np.arange(n, dtype=np.int32), lengths)
    return Packed(values, ids, np.pad(lengths, (0, max_items - n)).astype(np.int32))


def packed_mean_pool(packed: Packed, table: jax.Array) -> jax.Array:
    """Embeds every packed token id and averages per item: ``(max_items, features)``.

    >>> packed_mean_pool(pack([[1, 2], [2]]), jnp.array([[0.0, 0.0], [1.0, 2.0], [3.0, 4.0]]))
    Array([[2., 3.],
           [3., 4.]], dtype=float32)
    """
    x = jnp.asarray(table)[packed.values]
    n = packed.num_segments
    total = jax.ops.segment_sum(x, packed.segment_ids, num_segments=n, indices_are_sorted=True)
    count = jnp.maximum(jnp.asarray(packed.lengths), 1).astype(total.dtype)
    return total / count[:, None]
