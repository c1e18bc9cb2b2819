"""Why the advisor chose: claims built from this run's measurements (``batchlab.claims``).

Every reason is a :class:`~batchlab.claims.Claim` whose rule reads the samples
and figures measured here: the choice is faster per item than each other
candidate within budget (*inconclusive here* when the spreads overlap: those
candidates are within noise), what chunking costs in time and saves in peak
memory against ``vmap``, whether the choice fits the budget at the measured
batch, and how far the observed peak is above XLA's plan. No rule of thumb.
"""

from __future__ import annotations

from batchlab.advisor.report import CandidateResult
from batchlab.claims.claim import Claim
from batchlab.claims.evidence import Number, Samples, Scope
from batchlab.claims.rules import INCONCLUSIVE, compare, ratio_above

TIME_SOURCE = "wall clock around jax.block_until_ready of one call, / items"


def _time(c: CandidateResult, name: str) -> Samples:
    return Samples(name, c.per_item.values, f"{c.label}: {TIME_SOURCE}")


def _peak(c: CandidateResult, name: str) -> Number:
    source = (
        f"{c.label}: {c.observed_source}"
        if c.observed_bytes is not None
        else f"{c.label}: XLA compiled memory analysis (planned; no observed figure here)"
    )
    return Number(name, c.peak_bytes, source, "B")


def faster(best: CandidateResult, other: CandidateResult, scope: Scope) -> Claim:
    """``best`` takes less time per item than ``other`` (inconclusive when spreads overlap)."""
    return Claim(
        f"{best.label} takes less time per item than {other.label} here",
        [_time(other, f"{other.label} per item"), _time(best, f"{best.label} per item")],
        ratio_above(f"{other.label} per item", f"{best.label} per item", 1.0),
        scope,
    )


def within_noise(
    best: CandidateResult, others: list[CandidateResult], scope: Scope
) -> tuple[list[Claim], list[str]]:
    """The claims ``best`` is faster than each of ``others``, and the labels it cannot be told from."""
    claims = [faster(best, o, scope) for o in others]
    tied = [o.label for o, c in zip(others, claims, strict=True) if c.outcome == INCONCLUSIVE]
    return claims, tied


def chunk_tradeoff(vmap: CandidateResult, c: CandidateResult, scope: Scope) -> list[Claim]:
    """What ``c`` costs in time and saves in peak memory against ``vmap``: two claims."""
    return [
        Claim(
            f"{c.label} costs more time per item than vmap here",
            [_time(c, f"{c.label} per item"), _time(vmap, "vmap per item")],
            ratio_above(f"{c.label} per item", "vmap per item", 1.0),
            scope,
        ),
        Claim(
            f"{c.label} needs less peak memory than vmap here",
            [_peak(vmap, "vmap peak"), _peak(c, f"{c.label} peak")],
            ratio_above("vmap peak", f"{c.label} peak", 1.0),
            scope,
        ),
    ]


def fits(c: CandidateResult, budget: int, scope: Scope) -> Claim:
    """The candidate's peak at the measured batch is within the budget."""
    return Claim(
        f"{c.label} at {c.items} items fits the budget",
        [_peak(c, "peak"), Number("budget", int(budget), "the budget given to advise", "B")],
        compare("peak", "<=", "budget"),
        scope,
    )


def above_plan(c: CandidateResult, scope: Scope) -> Claim:
    """The observed peak is above XLA's plan (inconclusive where nothing was observed)."""
    observed = Number("observed peak", c.observed_bytes, f"{c.label}: {c.observed_source}", "B")
    planned = Number(
        "planned peak", c.planned_bytes, f"{c.label}: XLA compiled memory analysis", "B"
    )
    return Claim(
        f"the observed peak of {c.label} is above XLA's plan",
        [observed, planned],
        ratio_above("observed peak", "planned peak", 1.0),
        scope,
    )


__all__ = ["above_plan", "chunk_tradeoff", "faster", "fits", "within_noise"]
