"""Claims as experiments: every verdict scoped and decided by a rule.

A :class:`Claim` is a statement in plain words, its :class:`Scope` (backend, device kind, JAX
version, sizes, dtype), the evidence measured in the cell (:class:`Number` for deterministic
figures, :class:`Samples` for repeated timings) and a rule with exactly three outcomes
(*holds*, *does not hold*, *inconclusive here*: :func:`ratio_above` / :func:`ratio_below`,
spread-aware for timings, :func:`equals`, :func:`relation`, :func:`all_of`). A notebook
records its verdicts in a :class:`Record`: a finding is a contrast (it stands only when the
case and the rival's case read opposite ways), a :class:`Check` a fact listed apart. The
eleven source claims have names (:data:`NAMES`).
"""

from __future__ import annotations

from batchlab.claims.claim import Check, Claim, Record
from batchlab.claims.evidence import Number, Samples, Scope
from batchlab.claims.rules import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    OUTCOMES,
    Decision,
    all_of,
    equals,
    ratio_above,
    ratio_below,
    relation,
)
from batchlab.claims.sources import NAMES, SOURCE_CLAIMS, source_claim

__all__ = [
    "FAILS",
    "HOLDS",
    "INCONCLUSIVE",
    "NAMES",
    "OUTCOMES",
    "SOURCE_CLAIMS",
    "Check",
    "Claim",
    "Decision",
    "Number",
    "Record",
    "Samples",
    "Scope",
    "all_of",
    "equals",
    "ratio_above",
    "ratio_below",
    "relation",
    "source_claim",
]
