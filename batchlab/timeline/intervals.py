"""Unions of time intervals: what a timeline's figures (busy, overlap, gaps) are made of."""

from __future__ import annotations


def merge(intervals, gap: float = 0.0) -> list[tuple[float, float]]:
    """Sorted, disjoint union of ``(start, end)`` intervals (joining those ``gap`` or less
    apart)."""
    out: list[tuple[float, float]] = []
    for lo, hi in sorted((float(a), float(b)) for a, b in intervals):
        if out and lo <= out[-1][1] + gap:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def union_length(intervals) -> float:
    """Total length covered by ``(start, end)`` intervals (overlaps counted once)."""
    return float(sum(b - a for a, b in merge(intervals)))


def subtract(a, b) -> list[tuple[float, float]]:
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


def intersect_length(a, b) -> float:
    """Length of the intersection of two interval unions: ``|a| - |a - b|``."""
    return union_length(a) - union_length(subtract(a, b))
