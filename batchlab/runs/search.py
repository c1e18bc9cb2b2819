"""The search for the largest batch whose planned bytes fit a budget (:func:`largest_fitting`)."""

from __future__ import annotations

import math
from collections.abc import Callable

from batchlab._util.backend import backend_facts
from batchlab.runs.errors import is_out_of_memory

METHODS = ("interpolate", "bisect")
_GROW = 64  # the furthest one extrapolated step may jump: 64 x the last fitting batch
#: the plan of a batch whose compile ran out of device memory (XLA:TPU): it fits no budget
NO_ROOM = math.inf


def _line(x0: int, y0: int, x1: int, y1: int, budget: int) -> int | None:
    """Where the line through (x0, y0), (x1, y1) reaches ``budget`` (floor), or None if flat."""
    if x1 == x0 or y1 <= y0 or y1 == NO_ROOM:
        return None
    return x0 + math.floor((budget - y0) * (x1 - x0) / (y1 - y0))


def backend_tiles() -> tuple[int, ...]:
    """The tile sides the backend pads a batch to, largest first (XLA:TPU: 128, 8; else none)."""
    return tuple(sorted(set(backend_facts().lane_tile or ()), reverse=True))


def largest_fitting(
    plan_of: Callable[[int], int],
    budget_bytes: int,
    upper: int,
    tiles: tuple[int, ...] = (),
    method: str = "interpolate",
    known: dict[int, int] | None = None,
    on_compile: Callable[[int], None] | None = None,
) -> tuple[int, dict[int, int]]:
    """``(the largest b <= upper with plan_of(b) <= budget_bytes (0: none), {b: plan} visited)``.

    ``plan_of(b)`` compiles a batch of ``b`` and returns its planned bytes, once per ``b``
    (``known`` keeps them, and is extended); a compile that runs out of memory (XLA:TPU) plans
    :data:`NO_ROOM`. ``tiles``: sides the plans step at, largest first (XLA:TPU's 128 and 8, or a
    ``lax.map`` chunk, whose remainder plans apart): the search aims along their multiples first.
    :func:`batchlab.max_batch_size` and :func:`batchlab.run_batches` share it.
    """
    known = {} if known is None else known
    visited: dict[int, int] = {}

    def plan(b: int) -> int:
        if b not in known:
            if on_compile is not None:
                on_compile(b)
            try:
                known[b] = plan_of(b)
            except Exception as e:  # out of memory at compile time: this size does not fit
                if not is_out_of_memory(e):
                    raise
                known[b] = NO_ROOM
        visited[b] = known[b]
        return known[b]

    fits = lambda b: plan(b) <= budget_bytes  # noqa: E731
    return _tiled(plan, fits, known, budget_bytes, upper, method, tiles), visited


def _tiled(plan, fits, known, budget, upper, method, tiles) -> int:
    """The largest ``b <= upper`` that fits, found along the multiples of each tile first: padded
    to tiles, plans are a staircase (a line through two points of one step aims nowhere)."""
    if not tiles:
        return _largest(plan, known, budget, upper, method, 1)
    m, rest = tiles[0], tiles[1:]
    q = _largest(plan, known, budget, upper // m, method, m)
    if q == 0:
        return _tiled(plan, fits, known, budget, min(upper, m - 1), method, rest)
    lo, top = q * m, min(q * m + m - 1, upper)
    if lo == top or not fits(lo + 1):
        return lo
    return top if fits(top) else _refine(plan, fits, budget, lo + 1, top, method)


def _largest(plans, known, budget, upper, method, step) -> int:
    """The largest ``u <= upper`` with ``plans(u * step) <= budget`` (0 if none)."""
    if upper < 1:
        return 0
    known = {b // step: p for b, p in known.items() if b % step == 0 and 1 <= b // step <= upper}
    plan = lambda u: plans(u * step)  # noqa: E731 (in units of step items: a chunk's multiples)
    fits = lambda u: plan(u) <= budget  # noqa: E731
    fitting = sorted(u for u, p in known.items() if p <= budget)
    prev, hi = None, None  # prev: the fitting point before lo, for extrapolation
    if method == "interpolate" and fitting:  # warm start from earlier searches
        lo, prev = fitting[-1], (fitting[0] if len(fitting) > 1 else None)  # the widest line
        hi = min((u for u, p in known.items() if u > lo and p > budget), default=None)
        for u in {lo, prev, hi} - {None}:
            plan(u)  # the bracket's points are part of this search's curve
    elif not fits(1):
        return 0
    else:
        lo = 1
    while hi is None:  # grow lo (it fits) until hi does not fit, or lo is upper
        if lo >= upper:
            return upper
        guess = None
        if method == "interpolate":
            guess = 2 * lo if prev is None else _line(prev, plan(prev), lo, plan(lo), budget)
            guess = _GROW * lo if guess is None else min(guess, _GROW * lo)
        nxt = min(2 * lo, upper) if method == "bisect" else min(max(guess, lo + 1), upper)
        if not fits(nxt):
            hi = nxt
        elif method == "interpolate" and nxt < upper and nxt < 2 * lo:
            # aimed close to the answer: the neighbour usually settles it
            if not fits(nxt + 1):
                return nxt
            prev, lo = lo, nxt + 1
        else:
            prev, lo = lo, nxt
    return _refine(plan, fits, budget, lo, hi, method)


def _refine(plan, fits, budget, lo, hi, method) -> int:
    """Shrinks the bracket (``lo`` fits, ``hi`` does not) to neighbours; returns ``lo``."""
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
            if not bisect_next and lo + 1 < hi:  # aimed at the answer: its neighbour settles it
                lo, hi = (lo + 1, hi) if fits(lo + 1) else (lo, lo + 1)
        else:
            hi = g
        bisect_next = method == "bisect" or (not bisect_next and hi - lo > width // 2)
    return lo


def compilation_target(answer: int) -> int:
    """What doubling then bisection needs: ``2 * floor(log2(answer)) + 2`` compilations."""
    return 2 * math.floor(math.log2(answer)) + 2 if answer >= 1 else 1
