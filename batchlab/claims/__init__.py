"""Claims as experiments: every verdict scoped and decided by a rule that can fail.

A :class:`Claim` is a statement, the evidence measured in the cell (:class:`Number`,
:class:`Samples`), its :class:`Scope` and a rule with three outcomes (*holds*, *does not
hold*, *inconclusive here*). A notebook records its verdicts in a :class:`Record`.
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
