"""The search for the largest batch whose planned bytes fit a budget (:func:`search`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from batchlab.runs.planning import batch_args, batch_planner

METHODS = ("interpolate", "bisect")
_GROW = 64  # the furthest one extrapolated step may jump: 64 x the last fitting batch


class _Plans:
    """Planned bytes per batch size, compiled once each (``known`` may be shared by searches)."""

    def __init__(self, jitted, example_item, known, on_compile, in_axes=0):
        self.plan, self.example_item, self.in_axes = batch_planner(jitted), example_item, in_axes
        self.known = {} if known is None else known
        self.on_compile = on_compile
        self.visited: dict[int, int] = {}
        self.compiled = 0

    def __call__(self, b: int) -> int:
        if b not in self.known:
            if self.on_compile is not None:
                self.on_compile(b)
            self.known[b] = self.plan(*batch_args(self.example_item, b, self.in_axes))
            self.compiled += 1
        self.visited[b] = self.known[b]
        return self.known[b]


def _line(x0: int, y0: int, x1: int, y1: int, budget: int) -> int | None:
    """Where the line through (x0, y0), (x1, y1) reaches ``budget`` (floor), or None if flat."""
    if x1 == x0 or y1 <= y0:
        return None
    return x0 + math.floor((budget - y0) * (x1 - x0) / (y1 - y0))


def search(
    jitted: Callable,
    example_item: Any,
    budget_bytes: int,
    upper: int,
    multiple: int | None = None,
    *,
    method: str = "interpolate",
    known: dict[int, int] | None = None,
    on_compile: Callable[[int], None] | None = None,
    stats: dict | None = None,
    in_axes: Any = 0,
) -> tuple[int, dict[int, int]]:
    """The largest batch size whose planned bytes fit: ``(answer, {batch: planned bytes})``.

    It ends on a measured pair: ``answer`` fits, ``answer + 1`` does not (or is ``upper``).
    ``"bisect"`` doubles from 1, then bisects; ``"interpolate"`` aims where the line through
    the last two points meets the budget and checks the neighbour of a guess that fits (4
    compilations on a straight line). ``known`` (read and extended) gives a warm start;
    ``multiple``: a ``lax.map`` chunk; ``stats["compiled"]`` counts the new compilations.
    """
    plan = _Plans(jitted, example_item, known, on_compile, in_axes)
    answer = _search(plan, budget_bytes, upper, multiple, method)
    if stats is not None:
        stats["compiled"] = stats.get("compiled", 0) + plan.compiled
    return answer, plan.visited


def _search(plan, budget, upper, m, method) -> int:
    if not m:
        return _largest(plan, budget, upper, method, 1)
    # lax.map plans a remainder (batch % chunk) apart: a batch just above a multiple of the
    # chunk plans MORE than the next multiple (a saw-tooth). Search the multiples (a straight
    # line), then the block of remainders above the last multiple that fits.
    fits = lambda b: plan(b) <= budget  # noqa: E731
    q = _largest(plan, budget, upper // m, method, m)
    if q == 0:
        return _largest(plan, budget, min(upper, m - 1), method, 1)
    lo, top = q * m, min(q * m + m - 1, upper)
    if lo == top or not fits(lo + 1):
        return lo
    return top if fits(top) else _refine(plan, fits, budget, lo + 1, top, method)[0]


def _largest(plans, budget, upper, method, step) -> int:
    """The largest ``u <= upper`` with ``plans(u * step) <= budget`` (0 if none), neighbours measured."""
    if upper < 1:
        return 0
    known = {b // step: p for b, p in plans.known.items() if b % step == 0}
    known = {u: p for u, p in known.items() if 1 <= u <= upper}
    plan = lambda u: plans(u * step)  # noqa: E731 (in units of step items: a chunk's multiples)
    fits = lambda u: plan(u) <= budget  # noqa: E731
    fitting = sorted(u for u, p in known.items() if p <= budget)
    prev = None  # the fitting point before lo, for extrapolation
    if method == "interpolate" and fitting:  # warm start from earlier searches
        lo = fitting[-1]
        plan(lo)
        if len(fitting) > 1:
            prev = fitting[-2]
            plan(prev)
        misses = [u for u, p in known.items() if u > lo and p > budget]
        hi = min(misses) if misses else None
        if hi is not None:
            plan(hi)
    else:
        if not fits(1):
            return 0
        lo, hi = 1, None
    lo, hi, prev = _expand(plan, fits, budget, upper, lo, hi, prev, method)
    if hi is None:  # lo == upper
        return lo
    return _refine(plan, fits, budget, lo, hi, method)[0]


def _expand(plan, fits, budget, upper, lo, hi, prev, method):
    """Grows ``lo`` (fits) until a batch ``hi`` does not fit, or ``lo == upper``."""
    while hi is None:
        if lo >= upper:
            return upper, None, prev
        guess = None
        if method == "interpolate":
            if prev is None:
                guess = 2 * lo
            else:
                guess = _line(prev, plan(prev), lo, plan(lo), budget)
                guess = _GROW * lo if guess is None else min(guess, _GROW * lo)
        nxt = min(max(guess or 2 * lo, lo + 1), upper)
        if method == "bisect":
            nxt = min(2 * lo, upper)
        if not fits(nxt):
            hi = nxt
        elif method == "interpolate" and guess is not None and nxt < upper and nxt < 2 * lo:
            # aimed close to the answer: the neighbour usually settles it
            if fits(nxt + 1):
                prev, lo = lo, nxt + 1
            else:
                return nxt, nxt + 1, lo
        else:
            prev, lo = lo, nxt
    return lo, hi, prev


def _refine(plan, fits, budget, lo, hi, method):
    """Shrinks the bracket (``lo`` fits, ``hi`` does not) to neighbours."""
    bisect_next = method == "bisect"
    while hi - lo > 1:
        width = hi - lo
        if bisect_next:
            g = (lo + hi) // 2
        else:
            g = _line(lo, plan(lo), hi, plan(hi), budget)
            g = (lo + hi) // 2 if g is None else min(max(g, lo + 1), hi - 1)
        if fits(g):
            lo = g
            if not bisect_next and lo + 1 < hi:
                if fits(lo + 1):
                    lo += 1
                else:
                    hi = lo + 1
        else:
            hi = g
        bisect_next = method == "bisect" or (not bisect_next and hi - lo > width // 2)
    return lo, hi


def compilation_target(answer: int) -> int:
    """What doubling then bisection needs: ``2 * floor(log2(answer)) + 2`` compilations."""
    return 2 * math.floor(math.log2(answer)) + 2 if answer >= 1 else 1
