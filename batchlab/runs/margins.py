"""The budget a run really plans with: ``budget_bytes`` divided by a margin, given or measured.

XLA's plan is a lower bound of what a call needs (on XLA:CPU the runtime allocates outside
it: :mod:`batchlab.runs.calibration`). :func:`batchlab.run_batches` takes the same
``margin=`` as :func:`batchlab.max_batch_size`: a ratio ``>= 1``, or ``"calibrated"`` (the
plan-to-real ratio of this function, measured in a fresh process). Batches are then sized
for, and checked against, ``budget / margin``; the result says which figure it used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from batchlab.runs.budget import default_budget, max_batch_size
from batchlab.runs.calibration import check_margin


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
            "batched=True gives a function of a whole batch. Pass a number instead, e.g. "
            "margin=max_batch_size(item_fn, item, margin='calibrated').margin, or margin=1.5."
        )
    return margin


def planned_budget(fn: Callable, spec_item: Any, margin, budget_bytes: int | None) -> PlannedBudget:
    """The budget batches are planned against, and the margin that gave it (with its source)."""
    if margin is None:
        return PlannedBudget(budget_bytes)
    base = budget_bytes if budget_bytes is not None else default_budget().bytes
    if margin == "calibrated":
        if spec_item is None:  # no items: nothing to measure, nothing to size
            return PlannedBudget(base, 1.0, "not calibrated: no items")
        r = max_batch_size(fn, spec_item, budget_bytes=base, margin="calibrated")
        return PlannedBudget(r.planned_budget_bytes, r.margin, r.margin_source)
    return PlannedBudget(max(1, int(base / margin)), margin, "given")
