"""Claims decided by evidence, and a notebook's :class:`Record` of them."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from batchlab._util.format import Rows
from batchlab.claims.evidence import Evidence, Scope
from batchlab.claims.rules import FAILS, HOLDS, INCONCLUSIVE, Decision


class SourceClaim(NamedTuple):
    """One of the eleven claims of the two source texts, and the notebooks that measure it."""

    name: str
    notebooks: tuple[str, ...]


#: the first four from the text on memory fragmentation, the rest from the pitfalls of batching
SOURCE_CLAIMS = (
    SourceClaim("batching allocates once per batch", ("08",)),
    SourceClaim("reused blocks keep memory whole", ("08",)),
    SourceClaim("batches wait for free memory", ("07",)),  # 07 times the error (a check, device)
    SourceClaim("in-place updates reduce fragmentation", ("09",)),
    SourceClaim("a batch needs one shape", ("01",)),
    SourceClaim("big batches run out of memory", ("06",)),
    SourceClaim("different shapes conflict when combined", ("02",)),
    SourceClaim("loading can starve the batch", ("10",)),
    SourceClaim("shape and memory errors can be caught", ("07",)),
    SourceClaim("vmap versus hand batching depends on the case", ("03",)),
    SourceClaim("padding wastes compute, masks exclude it", ("05",)),  # 04 times it as a check
)
NAMES = tuple(c.name for c in SOURCE_CLAIMS)


def source_claim(name: str) -> SourceClaim:
    """The source claim called ``name`` (``ValueError`` naming all eleven for another)."""
    if name not in NAMES:
        names = "; ".join(repr(n) for n in NAMES)
        raise ValueError(f"no source claim is called {name!r}; the eleven names are: {names}.")
    return SOURCE_CLAIMS[NAMES.index(name)]


_CAUSE_WORDS = re.compile(r"\b(because|due to)\b", re.IGNORECASE)
Figures = Sequence[Evidence] | Mapping[str, Evidence]


@dataclass(frozen=True)
class Claim:
    """A ``statement`` (plain words, no cause) decided by ``rule`` on the ``evidence`` (Number and
    Samples, or an interleaved run's dict) when built; ``source`` names the source claim tested."""

    statement: str
    evidence: Figures
    rule: Callable
    scope: Scope = field(default_factory=Scope)
    source: str | None = None
    decision: Decision = field(init=False, repr=False)
    outcome: str = field(init=False)  # holds / does not hold / inconclusive

    def __post_init__(self):
        statement, evidence, rule = self.statement, self.evidence, self.rule
        plain = isinstance(statement, str) and statement.strip()
        if not plain or _CAUSE_WORDS.search(statement):
            raise ValueError(
                f"`statement` must be a sentence in plain words that gives no cause, got "
                f"{statement!r}; test a cause with a finding's contrast (record.finding)."
            )
        if isinstance(evidence, Mapping):
            evidence = list(evidence.values())
        ok = isinstance(evidence, Sequence) and all(isinstance(e, Evidence) for e in evidence)
        names = [e.name for e in evidence] if ok else []
        if not ok or len(set(names)) < len(names):
            raise TypeError(
                f"`evidence` must be a list of Number (a deterministic figure) and Samples "
                f"(repeated timings), each with a name of its own, got {evidence!r:.80}."
            )
        reads = getattr(rule, "reads", None)
        if not callable(rule) or reads is None or not set(reads) <= set(names):
            raise TypeError(
                f"`rule` must be a rule (bl.claims.ratio_above, ratio_below, equals, relation, "
                f"all_of) reading figures the evidence has ({names}), got {type(rule).__name__} "
                f"reading {list(reads or [])}."
            )
        if self.source is not None:
            source_claim(self.source)  # raises for an unknown name
        object.__setattr__(self, "evidence", tuple(evidence))
        object.__setattr__(self, "decision", rule(dict(zip(names, evidence, strict=True))))
        object.__setattr__(self, "outcome", self.decision.outcome)

    def __repr__(self) -> str:
        return f"{self.statement}: {Check(self).verdict}; {self.decision.deciding}"


@dataclass(frozen=True)
class Check:
    """A fact with no contrast case: shown, never counted as evidence."""

    claim: Claim

    @property
    def statement(self) -> str:
        """The claim's statement."""
        return self.claim.statement

    @property
    def outcome(self) -> str:
        """holds / does not hold / inconclusive here."""
        return self.claim.outcome

    @property
    def timed(self) -> bool:
        """Whether a timing (wall clock) decided it."""
        return self.claim.decision.timed

    @property
    def verdict(self) -> str:
        """The outcome, marked "(wall clock)" where a timing decided it."""
        return self.outcome + (" (wall clock)" if self.timed else "")

    def __repr__(self) -> str:
        return f"check, {self.verdict}: {self.claim.decision.deciding}"


@dataclass(frozen=True)
class Finding(Check):
    """A claim decided on its case and on a ``contrast`` where the ``rival`` explanation is true:
    it holds only when the two read opposite ways; a case that does not hold decides alone (the
    claim is false here, whatever the contrast); else it reads *inconclusive here*."""

    contrast: Claim
    rival: str

    @property
    def discriminates(self) -> bool:
        """Whether the case and the contrast read opposite ways (one holds, one does not)."""
        return {self.claim.outcome, self.contrast.outcome} == {HOLDS, FAILS}

    @property
    def outcome(self) -> str:
        """The case's outcome if the contrast discriminates or the case fails, else inconclusive."""
        decided = self.discriminates or self.claim.outcome == FAILS
        return self.claim.outcome if decided else INCONCLUSIVE

    @property
    def timed(self) -> bool:
        """Whether a timing (wall clock) decided the case or the contrast."""
        return self.claim.decision.timed or self.contrast.decision.timed

    def __repr__(self) -> str:
        d, c = self.claim.decision, self.contrast.decision
        tail = " (no contrast: not evidence here)" if self.outcome == INCONCLUSIVE else ""
        rival = f"rival's case: {c.outcome}, {c.value or c.deciding}{tail}"
        return f"{self.verdict}: {d.short or d.deciding}; {rival}"


@dataclass
class Record(Rows):
    """What a notebook's cells decided, in order; its repr is the claims table, under the
    :class:`Scope` that ``sizes`` and ``dtype`` make (printed once).

    Example:
      >>> from batchlab.claims import Number, relation
      >>> rec = Record(sizes={"B": 8})
      >>> rec.finding("batching allocates once per batch, not once per item",
      ...     relation("allocations", "<", 2),
      ...     case=[Number("allocations", 1, "one call on 8 items")],
      ...     contrast=[Number("allocations", 8, "8 calls, one item each")],
      ...     rival="allocations follow items: 8 per 8 items either way")
      holds: allocations = 1 < 2; rival's case: does not hold, allocations = 8, not < 2
    """

    sizes: Mapping[str, Any] = field(default_factory=dict)
    dtype: str | None = None
    scope: Scope = field(init=False)
    entries: list[Check] = field(default_factory=list, init=False)
    _header = ("kind", "claim", "verdict")

    def __post_init__(self):
        self.scope = Scope(sizes=self.sizes, dtype=self.dtype)

    def finding(
        self,
        statement: str,
        rule: Callable,
        *,
        case: Figures,
        contrast: Figures,
        rival: str,
        source: str | None = None,
    ) -> Finding:
        """Decides ``rule`` on ``case`` and on ``contrast``; records and returns the finding."""
        if not isinstance(rival, str) or not rival.strip():
            raise TypeError(
                "`rival` must say, in plain words, the other explanation and what it predicts "
                f"(e.g. 'the mask skips the pads: padded costs what compact costs'), got {rival!r}."
            )
        claim = Claim(statement, case, rule, self.scope, source=source)
        self.entries.append(Finding(claim, Claim(statement, contrast, rule, self.scope), rival))
        return self.entries[-1]

    def check(self, statement: str, rule: Callable, evidence: Figures) -> Check:
        """Decides ``rule`` on ``evidence``; records and returns a check (not evidence)."""
        self.entries.append(Check(Claim(statement, evidence, rule, self.scope)))
        return self.entries[-1]

    @property
    def findings(self) -> list[Finding]:
        """The findings recorded so far, in order."""
        return [e for e in self.entries if isinstance(e, Finding)]

    @property
    def checks(self) -> list[Check]:
        """The checks recorded so far (not evidence), in order."""
        return [e for e in self.entries if not isinstance(e, Finding)]

    def _rows(self) -> list[tuple[str, str, str]]:
        return [
            (kind, e.statement + (f" [{e.claim.source}]" if e.claim.source else ""), e.verdict)
            for kind, entries in (("finding", self.findings), ("check", self.checks))
            for e in entries
        ]

    def _title(self) -> str:
        return f"Claims ({self.scope})"

    def __repr__(self) -> str:
        rows = [f"- {kind}: {name}: {verdict}" for kind, name, verdict in self._rows()]
        return "\n".join([f"{self._title()}:", *rows])
