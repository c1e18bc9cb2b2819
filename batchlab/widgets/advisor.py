"""The advisor's explorer (12): the budget moved over what ``advise`` measured, re-decided."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from batchlab._util.checks import check_positive_int
from batchlab._util.format import format_bytes
from batchlab.advisor import Advice, decide, plot_candidates
from batchlab.widgets.controls import stops_slider
from batchlab.widgets.explorer import Explorer


class AdvisorSetting(NamedTuple):
    """The advice re-decided at one budget: what fits, the pick, whether the timings decided it."""

    budget: int
    fits: tuple[str, ...]
    recommended: str | None
    decided: bool
    tied: tuple[str, ...]
    batch_size: int | None  # only at the advice's own budget (it needs a fresh process)


def setting(advice: Advice, budget: int) -> AdvisorSetting:
    """The advice at ``budget``: fitting timed candidates, re-decided on their own run's samples."""
    m, own_budget = advice.margin or 1.0, advice.budget.bytes
    fits = [c for c in advice.candidates if c.samples is not None and c.planned_bytes * m <= budget]
    # left out: a fresh process found it cannot run all the items at the advice's budget, so it
    # cannot at a smaller one either; at its own budget the pool is the one advise decided in
    left = {c.label for c in advice.candidates if c.note.startswith("left out")}
    if budget == own_budget:
        timed = [c for c in advice.candidates if c.samples is not None and c.label not in left]
        pool = [c for c in timed if not c.note.startswith("screened")]
    else:
        keep = [c for c in fits if budget > own_budget or c.label not in left]
        pool = [c for c in keep if not c.note.startswith("screened")] or keep
    if not pool:
        return AdvisorSetting(int(budget), (), None, False, (), None)
    v = decide({c.label: c.samples for c in pool}, {c.label: c.planned_bytes for c in pool})
    own = budget == own_budget and v.pick == advice.recommended
    labels = tuple(c.label for c in fits)
    return AdvisorSetting(
        int(budget), labels, v.pick, v.decided, v.tied, advice.batch_size if own else None
    )


class AdvisorExplorer(Explorer):
    """A budget slider over one :func:`batchlab.advise` result; starts at the advice's budget."""

    def __init__(self, advice: Advice, budgets: Sequence[int]) -> None:
        if not isinstance(advice, Advice):
            raise TypeError(
                f"`advice` must be what bl.advise returned, got {type(advice).__name__}."
            )
        budget = advice.budget.bytes
        stops = sorted({budget, *(check_positive_int(b, "budgets") for b in budgets)})
        super().__init__(
            lambda budget: setting(advice, budget),
            {"budget": budget},
            controls={"budget": stops_slider(stops, "budget", width="420px", label=format_bytes)},
            draw=lambda ex: plot_candidates(
                advice, budget=ex.result.budget, pick=ex.result.recommended
            ),
            describe=_describe,
            title="The advice over the budget",
        )
        self.update()


def _describe(s: AdvisorSetting) -> str:
    head = f"budget {format_bytes(s.budget)}: {len(s.fits)} timed candidates fit; pick <b>{s.recommended}</b>"
    if not s.decided and s.tied:
        head += f" (not enough evidence among {', '.join(s.tied)}: the smallest plan)"
    return head + " (from the advice's measurements: nothing re-measured)"
