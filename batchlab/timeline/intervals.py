"""Unions of time intervals: what a timeline's figures (busy, overlap, gaps) are made of."""

from __future__ import annotations

import numpy as np


def union_length(intervals: list[tuple[float, float]]) -> float:
    """Total length covered by ``(start, end)`` intervals (overlaps counted once)."""
    merged = merge(intervals)
    return float(sum(b - a for a, b in merged))


def merge(intervals, gap: float = 0.0) -> list[tuple[float, float]]:
    """Sorted, disjoint union of ``(start, end)`` intervals (joining those ``gap`` or less apart)."""
    if len(intervals) == 0:
        return []
    arr = np.asarray(intervals, dtype=float).reshape(-1, 2)
    arr = arr[np.argsort(arr[:, 0], kind="stable")]
    reach = np.maximum.accumulate(arr[:, 1])  # the furthest end seen so far
    new = np.empty(len(arr), bool)
    new[0] = True
    new[1:] = arr[1:, 0] > reach[:-1] + gap
    starts = arr[new, 0]
    group_end = np.maximum.reduceat(arr[:, 1], np.flatnonzero(new))
    return list(zip(starts.tolist(), group_end.tolist(), strict=True))


def intersect_length(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """Length of the intersection of two interval unions."""
    a, b = merge(a), merge(b)
    i = j = 0
    total = 0.0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def subtract(
    a: list[tuple[float, float]], b: list[tuple[float, float]]
) -> list[tuple[float, float]]:
    """The union of ``a`` minus the union of ``b``."""
    out, b, j = [], merge(b), 0
    for lo, hi in merge(a):
        while j < len(b) and b[j][1] <= lo:
            j += 1
        cur, k = lo, j
        while k < len(b) and b[k][0] < hi:
            if b[k][0] > cur:
                out.append((cur, b[k][0]))
            cur = max(cur, b[k][1])
            k += 1
        if cur < hi:
            out.append((cur, hi))
    return out
