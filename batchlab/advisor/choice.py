"""From paired timings to a pick: the fastest, only where the per-round ratios say so.

:func:`decide` takes one :func:`batchlab.measuring.interleaved` run. The candidate with the
smallest median is the fastest; each other is *slower* when ``ratio_above(other, fastest,
1.0)`` holds (its per-round ratios' distribution-free interval lies above 1). When every other
is slower, the fastest is the pick and the ratio against the runner-up is the deciding number.
Candidates it cannot tell from the fastest but each shown within 1.1x of it (``ratio_below``)
are equivalent: the pick among them is the smallest plan (XLA's, deterministic). Otherwise
there is not enough evidence: the advice says so and names the fastest median so far.
:func:`screen` drops, after a short run, the candidates shown over 1.5x slower than the fastest.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import NamedTuple

from batchlab.claims.evidence import Samples
from batchlab.claims.rules import HOLDS, ratio_above, ratio_below

#: a short run's candidates shown this much slower than its fastest are not timed further
SCREEN_RATIO = 1.5
#: candidates the timings cannot order but each shown within this of the fastest are equivalent
WITHIN = 1.1


class Verdict(NamedTuple):
    pick: str
    runner_up: str | None
    decided: bool
    tied: tuple[str, ...]
    deciding: str


def _median(s: Samples) -> float:
    return statistics.median(s.values)


def slower_than_fastest(samples: Mapping[str, Samples], ratio: float) -> dict[str, bool]:
    """``{label: ratio_above(label, fastest, ratio) holds}`` for every label but the fastest."""
    fastest = min(samples, key=lambda k: _median(samples[k]))
    return {
        k: ratio_above(k, fastest, ratio)(samples).outcome == HOLDS for k in samples if k != fastest
    }


def screen(samples: Mapping[str, Samples]) -> list[str]:
    """The labels shown over :data:`SCREEN_RATIO` x slower than the fastest (dropped)."""
    return [k for k, slow in slower_than_fastest(samples, SCREEN_RATIO).items() if slow]


def decide(samples: Mapping[str, Samples], planned: Mapping[str, int]) -> Verdict:
    """The pick among ``samples`` (one interleaved run), and the numbers that decided it."""
    if len(samples) == 1:
        return Verdict(next(iter(samples)), None, True, (), "")
    order = sorted(samples, key=lambda k: _median(samples[k]))
    fastest, runner = order[0], order[1]
    slower = slower_than_fastest(samples, 1.0)
    tied = [fastest] + [k for k in order[1:] if not slower[k]]
    if len(tied) == 1:
        return Verdict(
            fastest, runner, True, (), ratio_above(runner, fastest, 1.0)(samples).deciding
        )
    near = {k: ratio_below(k, fastest, WITHIN)(samples) for k in tied[1:]}
    far = [k for k in tied[1:] if near[k].outcome != HOLDS]
    if not far:  # every one the timings cannot order is shown within 1.1x: the smallest plan
        pick = min(tied, key=lambda k: (planned[k], _median(samples[k])))
        other = pick if pick != fastest else tied[1]
        return Verdict(pick, fastest if pick != fastest else tied[1], True, tuple(tied),
                       near[other].deciding)  # fmt: skip
    # not enough evidence: the fastest median so far, said to be undecided
    return Verdict(
        fastest, far[0], False, tuple(tied), ratio_above(far[0], fastest, 1.0)(samples).deciding
    )
