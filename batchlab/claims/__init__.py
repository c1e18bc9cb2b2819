"""Claims as experiments: verdicts scoped, decided by rules that can fail, kept in a Record."""

from __future__ import annotations

from batchlab.claims.claim import NAMES, SOURCE_CLAIMS, Claim, Record, source_claim
from batchlab.claims.evidence import Number, Scope
from batchlab.claims.rules import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    OUTCOMES,
    Decision,
    all_of,
    equals,
    estimate,
    ratio_above,
    ratio_below,
    relation,
)
from batchlab.measuring.samples import Samples  # here too: notebooks 06 and 07 use it

__all__ = [
    "FAILS",
    "HOLDS",
    "INCONCLUSIVE",
    "NAMES",
    "OUTCOMES",
    "SOURCE_CLAIMS",
    "Claim",
    "Decision",
    "Number",
    "Record",
    "Samples",
    "Scope",
    "all_of",
    "equals",
    "estimate",
    "ratio_above",
    "ratio_below",
    "relation",
    "source_claim",
]
