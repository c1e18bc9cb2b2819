"""How big a batch of :func:`batchlab.run_batches` is: the planned budget, and after a memory error.

The budget is ``budget_bytes`` divided by a ``margin`` (as :func:`batchlab.max_batch_size`
takes it: a ratio ``>= 1`` or ``"calibrated"``). Before any batch has run, a batch that
runs out of memory is retried at half its size; after one has run, the size is bisected
between the last size that ran (``ok``) and the smallest that failed (``fail``), about
``log2(batch_size)`` probes, one compilation each. ``multiple_of`` keeps every size tried a
multiple of it (vector units, a ``lax.map`` chunk); ``tolerance`` stops once
``fail - ok <= tolerance * fail``. The defaults (1, 0.0) search to the exact largest size.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

from batchlab._util.checks import check_positive_int
from batchlab.runs.budget import default_budget, max_batch_size
from batchlab.runs.calibration import check_margin


class Sizer:
    """Next batch sizes after a memory error or a success (``ok``/``fail`` kept in the run state)."""

    def __init__(self, minimum: int, multiple_of: int = 1, tolerance: float = 0.0) -> None:
        self.minimum, self.multiple_of, self.tolerance = minimum, multiple_of, tolerance

    def round(self, n: int) -> int:
        """``n`` rounded down to a multiple of ``multiple_of`` (unchanged below it)."""
        m = self.multiple_of
        return n - n % m if m > 1 and n >= m else n

    def settled(self, ok: int, fail: int) -> bool:
        return fail - ok <= max(1, math.floor(self.tolerance * fail))

    def after_oom(self, state, size: int) -> int:
        """The size after ``size`` ran out of memory (halve, or bisect above the last success)."""
        if size <= state.ok_size:  # memory got tighter than when ok_size ran: forget it
            state.ok_size = 0
        state.fail_size = size if state.fail_size is None else min(state.fail_size, size)
        ok = state.ok_size
        if ok and self.settled(ok, size):
            return ok
        nxt = self.round((ok + size) // 2 if ok else size // 2)
        return min(max(nxt, self.minimum, ok), size - 1) if size > 1 else 1

    def after_success(self, state, size: int) -> int:
        """The size after a batch of ``size`` ran: probe halfway to the smallest failure."""
        state.ok_size = size
        if state.fail_size is not None and state.fail_size <= size:
            state.fail_size = None
        fail = state.fail_size
        if fail is None or self.settled(size, fail):
            return size
        nxt = self.round((size + fail) // 2)
        return nxt if size < nxt < fail else size


def check_sizing(multiple_of: int, tolerance: float) -> tuple[int, float]:
    """Checks ``multiple_of`` (a positive int) and ``tolerance`` (a fraction in [0, 1))."""
    multiple_of = check_positive_int(multiple_of, "multiple_of")
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)):
        raise TypeError(
            f"`tolerance` must be a number in [0, 1) (a fraction of the smallest failing batch "
            f"size), got {type(tolerance).__name__} {tolerance!r}."
        )
    if not 0 <= tolerance < 1 or math.isnan(tolerance):
        raise ValueError(
            f"`tolerance` must be in [0, 1): the search stops once the last size that ran is "
            f"within this fraction of the smallest that failed, got tolerance={tolerance}; e.g. "
            f"tolerance=0.1."
        )
    return multiple_of, float(tolerance)


class PlannedBudget(NamedTuple):
    """``planned_bytes``: what batches are sized for and checked against (``None``: no check)."""

    planned_bytes: int | None
    margin: float | None = None
    margin_source: str | None = None


def check_run_margin(margin: Any, *, batch_size: Any, budget_bytes: int | None, batched: bool):
    """Refuses a margin that cannot act, before any work; returns the checked margin."""
    margin = check_margin(margin)
    if margin is None:
        return None
    if batch_size != "auto" and budget_bytes is None:
        raise ValueError(
            f"`margin`={margin!r} divides a budget, but this run has none: batch_size="
            f"{batch_size!r} is fixed and `budget_bytes` is None. Pass budget_bytes=... (the "
            f"planned check then uses budget / margin), or batch_size='auto'."
        )
    if margin == "calibrated" and batched:
        raise ValueError(
            "`margin`='calibrated' measures a function of ONE item (run as jit(vmap(fn))), but "
            "strategy='manual' gives a function of a whole batch. Pass a number instead, e.g. "
            "margin=max_batch_size(item_fn, item, margin='calibrated').margin, or margin=1.5."
        )
    return margin


def planned_budget(fn: Callable, spec_item: Any, margin, budget_bytes: int | None) -> PlannedBudget:
    """The budget batches are planned against, and the margin that gave it (with its source)."""
    if margin is None:
        return PlannedBudget(budget_bytes)
    base = budget_bytes if budget_bytes is not None else default_budget().bytes
    if margin != "calibrated":
        return PlannedBudget(max(1, int(base / margin)), margin, "given")
    if spec_item is None:  # no items: nothing to measure, nothing to size
        return PlannedBudget(base, 1.0, "not calibrated: no items")
    r = max_batch_size(fn, spec_item, budget_bytes=base, margin="calibrated")
    return PlannedBudget(r.planned_budget_bytes, r.margin, r.margin_source)
