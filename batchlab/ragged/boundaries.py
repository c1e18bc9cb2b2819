"""Where bucket boundaries go: the boundary rules and the padding they cost."""

from __future__ import annotations

from typing import Any

import numpy as np

from batchlab._util.checks import check_positive_int


def lengths_of(lengths: Any) -> np.ndarray:
    """``lengths`` as checked non-negative int64."""
    arr = np.asarray(lengths)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu") or np.any(arr < 0):
        raise ValueError(
            f"`lengths` must be a 1-D array of non-negative ints, got {arr.dtype}"
            f"{list(arr.shape)}; pass e.g. data.lengths or [len(s) for s in seqs]."
        )
    return arr.astype(np.int64)


def check_boundaries(boundaries: Any, lengths: np.ndarray) -> np.ndarray:
    """``boundaries`` as int64, checked: increasing ints that cover every length."""
    b = np.asarray(boundaries)
    if b.ndim != 1 or b.size == 0 or b.dtype.kind not in "iu":
        raise TypeError(f"`boundaries` must be a non-empty list of ints, got {boundaries!r:.60}.")
    if np.any(np.diff(b) <= 0) or b[0] < 1:
        raise ValueError(
            f"`boundaries` must be positive and strictly increasing, got {b.tolist()}."
        )
    if len(lengths) and lengths.max() > b[-1]:
        raise ValueError(
            f"the longest item has length {lengths.max()} but the last boundary is {b[-1]}; "
            f"add a boundary >= {lengths.max()} (or pad with truncate=True first)."
        )
    return b.astype(np.int64)


def padded_elements(lengths: Any, boundaries: Any) -> int:
    """Total padded size when every item is padded to its bucket's boundary."""
    lengths = lengths_of(lengths)
    b = check_boundaries(boundaries, lengths)
    return int(b[np.searchsorted(b, lengths)].sum()) if len(lengths) else 0


def optimal_boundaries(lengths: Any, n_buckets: int) -> np.ndarray:
    """The at most ``n_buckets`` boundaries that minimize the total padded size (exact).

    A dynamic program over the distinct lengths: the cheapest way to cover the first
    ``j`` of them with ``k`` buckets is the cheapest with ``k - 1`` buckets up to some
    ``i``, plus one bucket padding lengths ``i..j-1`` to the ``j-1``-th.

    Example:
      >>> optimal_boundaries([1, 2, 2, 7, 8, 8, 8], 2).tolist()
      [2, 8]
    """
    lengths, n_buckets = lengths_of(lengths), check_positive_int(n_buckets, "n_buckets")
    d, c = np.unique(np.maximum(lengths, 1), return_counts=True)
    m, k_max = len(d), min(n_buckets, len(d))
    if m == 0:
        return np.ones(1, dtype=np.int64)
    if m * m * k_max > 2 * 10**9:  # the DP is O(k * m^2): refuse what would take minutes
        raise ValueError(
            f"`lengths` has {m} distinct values: the exact search costs n_buckets x {m}^2 steps "
            f"(minutes). Round the lengths first (e.g. np.ceil(lengths / 16) * 16, at most "
            f"{int((2 * 10**9 / k_max) ** 0.5)} distinct values for n_buckets={k_max}) or use "
            f"quantile_boundaries(lengths, n_buckets)."
        )
    items_below = np.concatenate([[0], np.cumsum(c)]).astype(np.float64)
    best = np.full(m + 1, np.inf)
    best[0] = 0.0
    choice = np.zeros((k_max + 1, m + 1), dtype=np.int64)
    for k in range(1, k_max + 1):
        new = np.full(m + 1, np.inf)
        for j in range(k, m + 1):
            cost = best[:j] + d[j - 1] * (items_below[j] - items_below[:j])
            choice[k, j] = np.argmin(cost)
            new[j] = cost[choice[k, j]]
        best = new
    bounds, j = [], m
    for k in range(k_max, 0, -1):
        bounds.append(d[j - 1])
        j = choice[k, j]
    return np.array(bounds[::-1], dtype=np.int64)


def quantile_boundaries(lengths: Any, n_buckets: int) -> np.ndarray:
    """Boundaries at the ``1/n, 2/n, ..., 1`` quantiles of the lengths (equal item counts).

    Example:
      >>> quantile_boundaries([1, 2, 3, 4, 5, 6, 7, 100], 2).tolist()
      [4, 100]
    """
    lengths, n_buckets = lengths_of(lengths), check_positive_int(n_buckets, "n_buckets")
    if not len(lengths):
        return np.ones(1, dtype=np.int64)
    q = np.arange(1, n_buckets + 1) / n_buckets
    return np.unique(np.quantile(np.maximum(lengths, 1), q, method="inverted_cdf").astype(np.int64))


def power_of_two_boundaries(lengths: Any) -> np.ndarray:
    """Boundaries 1, 2, 4, ... up to the first power of two >= the longest length.

    Example:
      >>> power_of_two_boundaries([3, 5, 17]).tolist()
      [4, 8, 16, 32]
    """
    lengths = np.maximum(lengths_of(lengths), 1)
    lo, hi = (lengths.min(), lengths.max()) if len(lengths) else (1, 1)
    return 2 ** np.arange(int(np.ceil(np.log2(lo))), int(np.ceil(np.log2(hi))) + 1, dtype=np.int64)


def equal_width_boundaries(lengths: Any, n_buckets: int) -> np.ndarray:
    """``n_buckets`` evenly spaced boundaries up to the longest length ("fixed" buckets).

    Example:
      >>> equal_width_boundaries([1, 50, 100], 4).tolist()
      [25, 50, 75, 100]
    """
    lengths, n_buckets = lengths_of(lengths), check_positive_int(n_buckets, "n_buckets")
    hi = max(int(lengths.max()) if len(lengths) else 1, 1)
    return np.unique(np.ceil(np.arange(1, n_buckets + 1) * hi / n_buckets).astype(np.int64))
