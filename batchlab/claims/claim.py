"""Claims decided by evidence, and a notebook's :class:`Record` of them: findings and checks.

A :class:`Claim` is decided when it is built: its rule reads its evidence and answers *holds*,
*does not hold* or *inconclusive here*. A cause is not stated in a claim's words: a finding's
contrast tests it.

A **finding** (:meth:`Record.finding`) must be able to come out the other way: it names the
*rival* explanation and runs the same rule on the ``case`` the claim is about and on the
``contrast``, a case where the rival is true. It stands only when the two read opposite ways
(*holds* in one, *does not hold* in the other); otherwise the experiment did not discriminate
here and it reads *inconclusive here*. A **check** is a fact with no contrast: listed apart,
never counted as evidence.

Example:
  >>> from batchlab.claims import Number, relation
  >>> rec = Record(sizes={"B": 8})
  >>> rec.finding("batching allocates once per batch, not once per item",
  ...     relation("allocations", "<", 2),
  ...     case=[Number("allocations", 1, "one call on 8 items")],
  ...     contrast=[Number("allocations", 8, "8 calls, one item each")],
  ...     rival="allocations follow items: 8 per 8 items either way")
  holds: allocations = 1 < 2; rival's case: does not hold, not: allocations = 8 < 2
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from batchlab._util.format import Rows
from batchlab.claims.evidence import Evidence, Number, Samples, Scope
from batchlab.claims.rules import FAILS, HOLDS, INCONCLUSIVE, Decision
from batchlab.claims.sources import source_claim

_CAUSE_WORDS = re.compile(r"\b(because|due to)\b", re.IGNORECASE)
Figures = Sequence[Evidence] | Mapping[str, Evidence]


def _check_text(value: Any, what: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"`{what}` must be a sentence in plain words, got {value!r}.")


def _check_evidence(evidence: Any, what: str) -> tuple[Evidence, ...]:
    """The figures as a tuple: a list, or the dict an interleaved run returns."""
    if isinstance(evidence, Mapping):
        evidence = list(evidence.values())
    if not isinstance(evidence, Sequence) or not all(
        isinstance(e, (Number, Samples)) for e in evidence
    ):
        raise TypeError(
            f"`{what}` must be a list of Number (a deterministic figure) and Samples (repeated "
            f"timings), got {evidence!r:.80}."
        )
    names = [e.name for e in evidence]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"`{what}` names {twice} more than once; give every figure its own name.")
    return tuple(evidence)


def _check_rule(rule: Any, names: Sequence[str], what: str) -> None:
    if not callable(rule) or not hasattr(rule, "reads"):
        raise TypeError(
            f"`{what}` must be a rule (bl.claims.ratio_above, ratio_below, equals, relation, "
            f"all_of), got {type(rule).__name__}."
        )
    missing = [n for n in rule.reads if n not in names]
    if missing:
        raise ValueError(
            f"`{what}` reads {missing}, which the evidence does not have; the evidence holds "
            f"{list(names)}."
        )


def verdict_text(decision: Decision) -> str:
    """The outcome as a table prints it; a verdict decided by wall-clock timings says so."""
    return decision.outcome + (" (wall clock)" if decision.timed else "")


@dataclass(frozen=True)
class Claim:
    """A statement decided by evidence measured in this run.

    Args:
      statement: the claim in plain words, without its cause.
      evidence: the figures measured in the cell (:class:`Number`, :class:`Samples`).
      rule: evidence -> *holds* / *does not hold* / *inconclusive here*.
      scope: where it was measured (:class:`Scope`; default: this machine, no sizes).
      source: the name of the source claim this tests (see ``bl.claims.NAMES``).

    Raises:
      ValueError: a cause in the statement's own words, a rule reading a figure the evidence
        lacks, a name twice, an unknown source.
      TypeError: a statement not text, evidence not Number/Samples, a rule not a rule.

    Example:
      >>> from batchlab.claims import Number, equals
      >>> c = Claim("two batch sizes compile twice", [Number("compilations", 2, "count_compiles")],
      ...           equals("compilations", 2))
      >>> c.outcome
      'holds'
    """

    statement: str
    evidence: Figures
    rule: Callable
    scope: Scope = field(default_factory=Scope)
    source: str | None = None
    decision: Decision = field(init=False, repr=False)

    def __post_init__(self):
        _check_text(self.statement, "statement")
        if _CAUSE_WORDS.search(self.statement):
            raise ValueError(
                f"`statement` gives a cause in its own words ({self.statement!r}); state the "
                f"claim alone and test the cause with a finding's contrast (record.finding)."
            )
        evidence = _check_evidence(self.evidence, "evidence")
        names = [e.name for e in evidence]
        _check_rule(self.rule, names, "rule")
        if not isinstance(self.scope, Scope):
            raise TypeError(f"`scope` must be a bl.claims.Scope, got {type(self.scope).__name__}.")
        if self.source is not None:
            source_claim(self.source)
        object.__setattr__(self, "evidence", evidence)
        object.__setattr__(self, "decision", self.rule(dict(zip(names, evidence, strict=True))))

    @property
    def outcome(self) -> str:
        """*holds*, *does not hold* or *inconclusive here*."""
        return self.decision.outcome

    def __repr__(self) -> str:
        return f"{self.statement}: {verdict_text(self.decision)}; {self.decision.deciding}"


@dataclass(frozen=True)
class Check:
    """A fact with no contrast case: asserted or shown, never counted as evidence."""

    claim: Claim

    @property
    def statement(self) -> str:
        return self.claim.statement

    @property
    def outcome(self) -> str:
        return self.claim.outcome

    @property
    def verdict(self) -> str:
        """The outcome, marked "(wall clock)" when timings decided it."""
        return verdict_text(self.claim.decision)

    def line(self) -> str:
        return f"check, {self.verdict}: {self.claim.decision.deciding}"

    def __repr__(self) -> str:
        return self.line()


@dataclass(frozen=True, repr=False)
class Finding(Check):
    """A claim decided on its case, shown able to fail by a contrast where the rival is true."""

    contrast: Claim
    rival: str

    @property
    def discriminates(self) -> bool:
        """The contrast reads the other way (one holds, the other does not)."""
        return {self.claim.outcome, self.contrast.outcome} == {HOLDS, FAILS}

    @property
    def outcome(self) -> str:
        return self.claim.outcome if self.discriminates else INCONCLUSIVE

    @property
    def verdict(self) -> str:
        timed = self.claim.decision.timed or self.contrast.decision.timed
        return self.outcome + (" (wall clock)" if timed else "")

    def line(self) -> str:
        """One line: the verdict ("(wall clock)" once), the case's numbers, the rival's case's."""
        d, c = self.claim.decision, self.contrast.decision
        tail = "" if self.discriminates else " (no contrast: not evidence here)"
        case = d.short or d.deciding
        return f"{self.verdict}: {case}; rival's case: {c.outcome}, {c.value or c.deciding}{tail}"


@dataclass
class Record(Rows):
    """What a notebook's cells decided, in order; its repr is the claims table.

    ``sizes`` and ``dtype`` make its :class:`Scope` (this machine's, printed once).
    """

    sizes: Mapping[str, Any] = field(default_factory=dict)
    dtype: str | None = None
    scope: Scope = field(init=False)
    entries: list[Finding | Check] = field(default_factory=list, init=False)
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
        """Decides ``rule`` on ``case`` and on ``contrast``; records and returns the finding.

        Raises:
          TypeError: ``rival`` is not a sentence; bad evidence or rule (as :class:`Claim`).
          ValueError: ``rule`` reads a figure one of the cases lacks.
        """
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
        return [e for e in self.entries if isinstance(e, Finding)]

    @property
    def checks(self) -> list[Check]:
        return [e for e in self.entries if not isinstance(e, Finding)]

    def rows(self) -> list[tuple[str, str, str]]:
        return [
            (kind, e.statement + (f" [{e.claim.source}]" if e.claim.source else ""), e.verdict)
            for kind, entries in (("finding", self.findings), ("check", self.checks))
            for e in entries
        ]

    _rows = rows

    def _caption(self) -> str:
        return f"Claims ({self.scope})"

    def __repr__(self) -> str:
        lines = [f"Claims ({self.scope}):"]
        return "\n".join(
            lines + [f"- {kind}: {name}: {verdict}" for kind, name, verdict in self.rows()]
        )
