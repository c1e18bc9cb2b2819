"""Where bucket boundaries go: the boundary rules and the padding they cost.

Example:
  >>> lengths = [3, 3, 4, 9, 10, 30]
  >>> optimal_boundaries(lengths, 3).tolist()
  [4, 10, 30]
  >>> padded_elements(lengths, [4, 10, 30]), padded_elements(lengths, [30])
  (62, 180)
  >>> {r: rule_boundaries([1, 5, 9, 100], r, n_buckets=2).tolist() for r in RULES}
  {'max': [100], 'fixed': [50, 100], 'pow2': [1, 2, 4, 8, 16, 32, 64, 128], 'quantile': [5, 100], 'optimal': [9, 100]}
"""

from __future__ import annotations

from typing import Any

import numpy as np

from batchlab._util.checks import check_choice, check_positive_int

RULES = ("max", "fixed", "pow2", "quantile", "optimal")


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
    """``boundaries`` as int64, checked: positive, strictly increasing ints that cover every length."""
    b, longest = np.asarray(boundaries), int(lengths.max()) if len(lengths) else 0
    ok = b.ndim == 1 and b.size > 0 and b.dtype.kind in "iu"
    if not (ok and b[0] >= 1 and np.all(np.diff(b) > 0) and b[-1] >= longest):
        raise ValueError(
            f"`boundaries` must be positive, strictly increasing ints, the last >= the longest "
            f"item's length {longest}, got {boundaries!r:.60}; add a boundary >= {longest} "
            f"(or pad with truncate=True first)."
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
            f'batchlab.ragged.boundaries.rule_boundaries(lengths, "quantile", n_buckets={n_buckets}).'
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


def rule_boundaries(lengths: Any, rule: str, *, n_buckets: int = 8) -> np.ndarray:
    """Boundaries of one rule: ``max`` (one bucket), ``fixed`` (``n_buckets`` of equal width),
    ``pow2`` (1, 2, 4, ... up to the longest), ``quantile`` (``n_buckets`` of equal item
    counts) or ``optimal`` (:func:`optimal_boundaries`)."""
    check_choice(rule, "rule", RULES)
    lengths, n_buckets = lengths_of(lengths), check_positive_int(n_buckets, "n_buckets")
    if rule == "optimal":
        return optimal_boundaries(lengths, n_buckets)
    clipped = np.maximum(lengths, 1) if len(lengths) else np.ones(1, np.int64)
    if rule == "max":
        return clipped.max(keepdims=True)
    if rule == "pow2":
        lo, hi = np.ceil(np.log2([clipped.min(), clipped.max()])).astype(np.int64)
        return 2 ** np.arange(lo, hi + 1, dtype=np.int64)
    if rule == "fixed":
        edges = np.ceil(np.arange(1, n_buckets + 1) * clipped.max() / n_buckets)
    else:
        edges = np.quantile(clipped, np.arange(1, n_buckets + 1) / n_buckets, method="inverted_cdf")
    return np.unique(edges.astype(np.int64))
