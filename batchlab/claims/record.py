"""A notebook's verdicts: findings (contrasts) and checks, one line each, one table at the end.

A **finding** is evidence for or against a source claim, so it must be able
to come out the other way. It names the *rival* explanation, runs the same
rule on two cases: the ``case`` the claim is about, and the ``contrast``, a
case where the rival is true. The rule's threshold sits between what the two
predict; the finding stands only when the contrast reads the other way
(*holds* in one, *does not hold* in the other). When it does not, the
experiment did not discriminate here and the finding reads *inconclusive here*.

A **check** is a fact with no contrast (it could not have come out otherwise
in this program): it is listed apart and never counted as evidence.

Example:
  >>> from batchlab.claims import Number, relation
  >>> rec = Record(sizes={"B": 8}, scope=Scope(backend="cpu", device_kind="cpu", jax_version="X"))
  >>> rec.finding("batching allocates once per batch, not once per item",
  ...     relation("allocations", "<", 2),
  ...     case=[Number("allocations", 1, "one call on 8 items")],
  ...     contrast=[Number("allocations", 8, "8 calls, one item each")],
  ...     rival="allocations follow items: 8 per 8 items either way")
  holds: allocations = 1 < 2; rival's case: does not hold, not: allocations = 8 < 2
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from batchlab._util.format import html_table
from batchlab.claims.claim import Claim, verdict_text
from batchlab.claims.evidence import Evidence, Scope
from batchlab.claims.rules import FAILS, HOLDS, INCONCLUSIVE


def _evidence(value: Any) -> list[Evidence]:
    """A list of figures, or the dict an interleaved run returns."""
    return list(value.values()) if isinstance(value, Mapping) else value


@dataclass(frozen=True)
class Finding:
    """A claim decided on its case, shown able to fail by a contrast where the rival is true."""

    claim: Claim
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
    def statement(self) -> str:
        return self.claim.statement

    @property
    def verdict(self) -> str:
        """The outcome, marked "(wall clock)" when timings decided it."""
        timed = self.claim.decision.timed or self.contrast.decision.timed
        return self.outcome + (" (wall clock)" if timed else "")

    def line(self) -> str:
        """One line: the verdict ("(wall clock)" once), the case's numbers, the rival's case's."""
        d, c = self.claim.decision, self.contrast.decision
        tail = "" if self.discriminates else " (no contrast: not evidence here)"
        return (
            f"{self.verdict}: {d.short or d.deciding}; "
            f"rival's case: {c.outcome}, {c.value or c.deciding}{tail}"
        )

    def __repr__(self) -> str:
        return self.line()


@dataclass(frozen=True)
class Check:
    """A fact with no contrast case: asserted or shown, never counted as evidence."""

    claim: Claim

    @property
    def outcome(self) -> str:
        return self.claim.outcome

    @property
    def statement(self) -> str:
        return self.claim.statement

    @property
    def verdict(self) -> str:
        return verdict_text(self.claim.decision)

    def line(self) -> str:
        return f"check, {self.verdict}: {self.claim.decision.deciding}"

    def __repr__(self) -> str:
        return self.line()


@dataclass
class Record:
    """What a notebook's cells decided, in order; its repr is the claims table.

    Args:
      sizes: the sizes the notebook measures at (printed once, in the scope).
      dtype: the data's dtype, if one applies.
      scope: the whole scope instead (tests pass a fixed one).
    """

    sizes: Mapping[str, Any] = field(default_factory=dict)
    dtype: str | None = None
    scope: Scope | None = None
    entries: list[Finding | Check] = field(default_factory=list)

    def __post_init__(self):
        if self.scope is None:
            self.scope = Scope(sizes=self.sizes, dtype=self.dtype)
        elif not isinstance(self.scope, Scope):
            raise TypeError(f"`scope` must be a bl.claims.Scope, got {type(self.scope).__name__}.")

    def finding(
        self,
        statement: str,
        rule: Callable,
        *,
        case: Sequence[Evidence] | Mapping[str, Evidence],
        contrast: Sequence[Evidence] | Mapping[str, Evidence],
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
        claim = Claim(statement, _evidence(case), rule, self.scope, source=source)
        other = Claim(statement, _evidence(contrast), rule, self.scope)
        entry = Finding(claim, other, rival)
        self.entries.append(entry)
        return entry

    def check(
        self, statement: str, rule: Callable, evidence: Sequence[Evidence] | Mapping[str, Evidence]
    ) -> Check:
        """Decides ``rule`` on ``evidence``; records and returns a check (not evidence)."""
        entry = Check(Claim(statement, _evidence(evidence), rule, self.scope))
        self.entries.append(entry)
        return entry

    @property
    def findings(self) -> list[Finding]:
        return [e for e in self.entries if isinstance(e, Finding)]

    @property
    def checks(self) -> list[Check]:
        return [e for e in self.entries if isinstance(e, Check)]

    @property
    def outcomes(self) -> dict[str, str]:
        """Each statement and its outcome, findings and checks alike."""
        return {e.statement: e.outcome for e in self.entries}

    def rows(self) -> list[tuple[str, str, str]]:
        rows = []
        for kind, entries in (("finding", self.findings), ("check", self.checks)):
            for e in entries:
                src = e.claim.source
                name = e.statement + (f" [{src}]" if src else "")
                rows.append((kind, name, e.verdict))
        return rows

    def __repr__(self) -> str:
        lines = [f"Claims ({self.scope}):"]
        lines += [f"- {kind}: {name}: {outcome}" for kind, name, outcome in self.rows()]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return html_table(
            self.rows(), ("kind", "claim", "verdict"), caption=f"Claims ({self.scope})"
        )
