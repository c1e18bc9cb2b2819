"""From paired timings to a pick: the fastest median where every other is shown slower
(``ratio_above(other, fastest, 1.0)``); among those it cannot tell apart, each shown within
1.1x (``ratio_below``), the smallest plan; otherwise not enough evidence: the fastest median."""

from __future__ import annotations

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


def screen(samples: Mapping[str, Samples]) -> list[str]:
    """The labels shown over :data:`SCREEN_RATIO` x slower than the fastest (dropped)."""
    fastest = min(samples, key=lambda k: samples[k].median)
    return [
        k
        for k in samples
        if k != fastest and ratio_above(k, fastest, SCREEN_RATIO)(samples).outcome == HOLDS
    ]


def decide(samples: Mapping[str, Samples], planned: Mapping[str, int]) -> Verdict:
    """The pick among ``samples`` (one interleaved run), and the numbers that decided it."""
    if len(samples) == 1:
        return Verdict(next(iter(samples)), None, True, (), "")
    order = sorted(samples, key=lambda k: samples[k].median)
    fastest = order[0]
    slower = {k: ratio_above(k, fastest, 1.0)(samples) for k in order[1:]}
    tied = [fastest] + [k for k in order[1:] if slower[k].outcome != HOLDS]
    if len(tied) == 1:
        return Verdict(fastest, order[1], True, (), slower[order[1]].deciding)
    near = {k: ratio_below(k, fastest, WITHIN)(samples) for k in tied[1:]}
    far = [k for k in tied[1:] if near[k].outcome != HOLDS]
    if far:  # not enough evidence: the fastest median so far, said to be undecided
        return Verdict(fastest, far[0], False, tuple(tied), slower[far[0]].deciding)
    pick = min(tied, key=lambda k: (planned[k], samples[k].median))
    other, runner = (pick, fastest) if pick != fastest else (tied[1], tied[1])
    return Verdict(pick, runner, True, tuple(tied), near[other].deciding)
