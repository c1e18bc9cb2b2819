"""Padding ragged sequences to one array, with a mask and the true lengths."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from batchlab._util import checks


@dataclass(frozen=True)
class Ragged:
    """Ragged data stored without padding: all items back to back (``flat``), plus offsets.

    Args:
      flat: every item's values, back to back.
      offsets: ``len + 1`` non-decreasing positions in ``flat``: item ``i`` is
        ``flat[offsets[i]:offsets[i + 1]]`` (``Ragged.from_lengths(flat, lengths)`` builds them).

    Example:
      >>> r = Ragged.from_lengths([1, 2, 3, 4], [3, 1])
      >>> len(r), r.offsets.tolist(), r.lengths.tolist(), r.item(0).tolist()
      (2, [0, 3, 4], [3, 1], [1, 2, 3])
    """

    flat: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray = field(init=False)  # each item's length

    def __post_init__(self):
        object.__setattr__(self, "lengths", np.diff(self.offsets))

    @classmethod
    def from_lengths(cls, flat: Any, lengths: Any) -> Ragged:
        return cls(np.asarray(flat), np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def item(self, i: int) -> np.ndarray:
        """Item ``i`` as an array (a view, no copy)."""
        return self.flat[self.offsets[i] : self.offsets[i + 1]]


class Cost:
    """``waste`` and ``ratio`` of a layout from its ``padded_elements`` and ``true_elements``."""

    padded_elements: int
    true_elements: int

    @property
    def waste(self) -> float:
        """Fraction of the computed positions that are padding (0 = none; 0.9 = 90% wasted)."""
        return 1.0 - self.true_elements / self.padded_elements if self.padded_elements else 0.0

    @property
    def ratio(self) -> float:
        """Positions computed / the ragged minimum (1.0 = no padding at all)."""
        return self.padded_elements / self.true_elements if self.true_elements else 1.0


class Padded(NamedTuple):
    """A padded batch: ``values[i, :lengths[i]]`` is item ``i``; ``mask`` marks real data."""

    values: np.ndarray
    mask: np.ndarray
    lengths: np.ndarray

    @property
    def padded_elements(self) -> int:
        """Positions computed: every entry of ``values``, pads included."""
        return int(self.mask.size)

    @property
    def true_elements(self) -> int:
        """Positions that hold data: the sum of ``lengths``."""
        return int(np.sum(self.lengths))

    waste = Cost.waste


def as_ragged(seqs: Any, *, dtype: Any = None) -> Ragged:
    """A list of 1-D sequences (or a :class:`Ragged`) -> :class:`Ragged`."""
    if isinstance(seqs, Ragged):
        return seqs if dtype is None else Ragged(seqs.flat.astype(dtype, copy=False), seqs.offsets)
    ok = not isinstance(seqs, (str, bytes, dict)) and hasattr(seqs, "__len__")
    items = [np.asarray(s, dtype=dtype) for s in seqs] if ok else []
    bad = next((i for i, s in enumerate(items) if s.ndim != 1 or s.dtype.kind in "USO"), None)
    if not ok or bad is not None:
        got = f"{type(seqs).__name__} {seqs!r:.60}"
        got = got if not ok else f"`seqs[{bad}]` of shape {items[bad].shape}, {items[bad].dtype}"
        raise TypeError(
            f"`seqs` must be a list of 1-D sequences of numbers, e.g. [[1, 2], [3]] (wrap one "
            f"sequence as [seq]; map text to token ids first), got {got}."
        )
    # empty items ([] is float64) take the others' dtype
    dtypes = {s.dtype for s in items if s.size} or {s.dtype for s in items} or {np.float64}
    dtype = dtype or np.result_type(*dtypes)
    flat = np.concatenate(items, dtype=dtype, casting="unsafe") if items else np.zeros(0, dtype)
    return Ragged.from_lengths(flat, [len(s) for s in items])


def check_value(value: Any, dtype: np.dtype, name: str = "value", where: str = "") -> None:
    """Refuses a ``value`` (a pad value) that an array of ``dtype`` would change."""
    try:
        with np.errstate(invalid="ignore", over="ignore"):
            cast = np.asarray(value).astype(dtype)
        ok = bool(cast == value) or bool(np.isnan(cast) and np.isnan(value))
    except (TypeError, ValueError):
        cast, ok = "an error", False
    if not ok:
        raise ValueError(
            f"`{name}`={value!r} cannot be stored in {where or f'a {dtype} array'} (it would "
            f"become {cast}); pick a value of that dtype, e.g. {name}=0."
        )


def pad(
    seqs: Any,
    *,
    length: int | None = None,
    multiple_of: int | None = None,
    value: Any = 0,
    dtype: Any = None,
    truncate: bool = False,
) -> Padded:
    """Pads ragged items into one array, with a boolean mask and the true lengths.

    Args:
      seqs: 1-D sequences or a :class:`Ragged`.
      length: pad every item to this length (with ``truncate=True``, cut longer ones to it).
      multiple_of: instead, round the longest length up to a multiple of this.
      value, dtype: the pad value (it must fit) and the result dtype (default: the items'); a
        ``dtype`` that changes a value (1.5 -> int, 300 -> uint8) is refused.
      truncate: cut items longer than ``length`` (with a warning) instead of refusing them.

    Returns:
      A :class:`Padded`: ``values`` (items x length), a bool ``mask`` and int32 ``lengths``.

    Raises:
      TypeError: ``seqs`` is not a list of 1-D sequences of numbers, ``dtype`` is not a dtype,
        ``length`` / ``multiple_of`` is not an int, or ``truncate`` is not a bool.
      ValueError: both ``length`` and ``multiple_of``, a ``length`` that would cut an item
        without ``truncate=True``, a ``value`` or ``dtype`` that changes a value, or a result
        larger than the host's available memory.

    Example:
      >>> p = pad([[1, 2, 3], [4]])
      >>> p.values.tolist(), p.mask.sum(axis=1).tolist(), p.lengths.tolist()
      ([[1, 2, 3], [4, 0, 0]], [3, 1], [3, 1])
    """
    checks.check_bool(truncate, "truncate")
    dtype = checks.check_dtype(dtype)
    if dtype is not None and isinstance(seqs, (Ragged, list, tuple)):
        checks.check_lossless_cast([seqs.flat] if isinstance(seqs, Ragged) else seqs, dtype)
    length = checks.check_int(length, "length", allow_none=True)
    multiple_of = checks.check_int(multiple_of, "multiple_of", 1, allow_none=True)
    if length is not None and multiple_of is not None:
        raise ValueError(f"pass either `length`={length} or `multiple_of`={multiple_of}, not both.")
    ragged = as_ragged(seqs, dtype=dtype)
    flat, lengths = ragged.flat, ragged.lengths
    longest = int(lengths.max()) if len(lengths) else 0
    if length is None:
        length = -(-max(longest, 1) // multiple_of) * multiple_of if multiple_of else longest
    cut = lengths > length
    if cut.any():
        what = f"{cut.sum()} of {len(lengths)} items"
        if not truncate:
            raise ValueError(
                f"`length`={length} would cut {what} (the longest has {longest}); pass "
                f"truncate=True to cut them, or a larger `length`."
            )
        dropped = int((lengths - length)[cut].sum())
        warnings.warn(
            f"pad: truncated {what} to length {length} ({dropped} dropped).", stacklevel=2
        )
    check_value(value, flat.dtype)
    n_bytes = len(lengths) * length * int(np.prod(flat.shape[1:], dtype=np.int64)) * flat.itemsize
    checks.check_fits_memory(n_bytes, "length", f"{len(lengths)} items x length {length}")
    return scatter_rows(flat, ragged.offsets[:-1], lengths, length, value)


def scatter_rows(
    flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray, target: int, value: Any
) -> Padded:
    """Writes items ``flat[starts[i]:][:lengths[i]]``, cut to ``target``, into one padded array."""
    kept = np.minimum(lengths, target)
    shape = (len(lengths), target, *flat.shape[1:])
    # np.zeros gets zeroed pages lazily from the OS: much faster than writing a fill value
    values = np.zeros(shape, flat.dtype) if value == 0 else np.full(shape, value, dtype=flat.dtype)
    mask = np.arange(target)[None, :] < kept[:, None]
    # the mask is True, in row-major order, exactly where the items go: one boolean
    # assignment writes them all, from source indices computed without a loop
    out_starts, total = np.cumsum(kept) - kept, int(kept.sum())
    if total and np.array_equal(kept, lengths) and np.array_equal(starts - starts[0], out_starts):
        values[mask] = flat[starts[0] : starts[0] + total]  # contiguous: no gather
    elif total:
        values[mask] = flat[np.repeat(starts - out_starts, kept) + np.arange(total)]
    return Padded(values, mask, kept.astype(np.int32))


def unpad(padded: Padded) -> list[np.ndarray]:
    """The items of a :class:`Padded` batch, without padding (inverse of :func:`pad`).

    Args:
      padded: a :class:`Padded` ``(values, mask, lengths)``, as :func:`pad` returns.

    Returns:
      One numpy array per item, its first ``lengths[i]`` values.

    Raises:
      TypeError: ``padded`` is not a ``(values, mask, lengths)`` tuple.
      ValueError: ``mask`` is not a bool (items, length) prefix mask agreeing with ``lengths``.

    Example:
      >>> [s.tolist() for s in unpad(pad([[1, 2, 3], [], [4]]))]
      [[1, 2, 3], [], [4]]
    """
    if not isinstance(padded, tuple) or len(padded) != 3:
        got = f"{type(padded).__name__} {padded!r:.40}"
        raise TypeError(f"`padded` must be a Padded (values, mask, lengths) from pad(), got {got}.")
    values, mask, lengths = (np.asarray(a) for a in padded)
    ok = mask.dtype == bool and mask.ndim == 2 and values.shape[:2] == mask.shape
    ok = ok and np.array_equal(lengths, mask.sum(axis=1))
    if not ok or not np.array_equal(mask, np.arange(mask.shape[1]) < lengths.reshape(-1, 1)):
        raise ValueError(
            f"`padded` must hold a bool `mask` (batch, length) over the leading axes of `values`, "
            f"True for the first `lengths` positions of each row; got values {values.shape}, "
            f"mask {mask.dtype}{mask.shape}, lengths {lengths.tolist()[:8]}. Rebuild it with pad()."
        )
    return np.split(values[mask], np.cumsum(lengths)[:-1]) if len(lengths) else []
