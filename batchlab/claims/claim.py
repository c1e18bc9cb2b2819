"""Claims decided by evidence, and a notebook's :class:`Record` of them: findings and checks.

A :class:`Claim` is decided when it is built: its rule reads its evidence and answers *holds*,
*does not hold* or *inconclusive here*. A claim that gives a cause ("because ...") must carry
a :class:`Control` for it (the same measurement with the cause removed, with its own rule).

A **finding** (:meth:`Record.finding`) must be able to come out the other way: it names the
*rival* explanation and runs the same rule on the ``case`` the claim is about and on the
``contrast``, a case where the rival is true. It stands only when the two read opposite ways
(*holds* in one, *does not hold* in the other); otherwise the experiment did not discriminate
here and it reads *inconclusive here*. A **check** is a fact with no contrast: listed apart,
never counted as evidence. :func:`table` renders free-standing claims.

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
    """The figures as a tuple: one, a list, or the dict an interleaved run returns."""
    if isinstance(evidence, Mapping):
        evidence = list(evidence.values())
    if isinstance(evidence, (Number, Samples)):
        evidence = (evidence,)
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


def _sources(rule: Callable, evidence: Sequence[Evidence]) -> str:
    named = {e.name: e for e in evidence}
    return "; ".join(f"{n}: {named[n].source}" for n in rule.reads)


@dataclass(frozen=True)
class Control:
    """The same measurement with a suspected cause removed, and the rule it must satisfy.

    ``removes`` says what was removed, in plain words ("the per-call cost: the same items in
    one ``lax.map`` call"); ``evidence`` is the control's own; its ``rule`` may read the
    claim's evidence too (the baseline the cause-free run is compared with).
    """

    removes: str
    evidence: Figures
    rule: Callable

    def __post_init__(self):
        _check_text(self.removes, "removes")
        object.__setattr__(self, "evidence", _check_evidence(self.evidence, "Control.evidence"))


@dataclass(frozen=True)
class Claim:
    """A statement decided by evidence measured in this run.

    Args:
      statement: the claim in plain words, without its cause.
      evidence: the figures measured in the cell (:class:`Number`, :class:`Samples`).
      rule: evidence -> *holds* / *does not hold* / *inconclusive here*.
      scope: where it was measured (:class:`Scope`; default: this machine, no sizes).
      because: the stated cause(s), one :class:`Control` each, in the same order.
      controls: the control run for each cause.
      source: the name of the source claim this tests (see ``bl.claims.NAMES``).

    Raises:
      ValueError: a cause without a control or the reverse, a cause in the statement's own
        words, a rule reading a figure the evidence lacks, a name twice, an unknown source.
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
    because: str | Sequence[str] = ()
    controls: Control | Sequence[Control] = ()
    source: str | None = None
    decision: Decision = field(init=False, repr=False)
    control_decisions: tuple[Decision, ...] = field(init=False, repr=False)

    def __post_init__(self):
        _check_text(self.statement, "statement")
        if _CAUSE_WORDS.search(self.statement):
            raise ValueError(
                f"`statement` gives a cause in its own words ({self.statement!r}); state the "
                f"claim alone, put the cause in because= and add a Control that removes it."
            )
        evidence = _check_evidence(self.evidence, "evidence")
        names = [e.name for e in evidence]
        _check_rule(self.rule, names, "rule")
        if not isinstance(self.scope, Scope):
            raise TypeError(f"`scope` must be a bl.claims.Scope, got {type(self.scope).__name__}.")
        because = (self.because,) if isinstance(self.because, str) else tuple(self.because)
        controls = (self.controls,) if isinstance(self.controls, Control) else tuple(self.controls)
        for cause in because:
            _check_text(cause, "because")
        if not all(isinstance(c, Control) for c in controls):
            raise TypeError("`controls` must be bl.claims.Control objects, one per cause.")
        if len(controls) < len(because):
            raise ValueError(
                f"the claim {self.statement!r} states a cause without a control: "
                f"{because[len(controls)]!r}. Add controls=Control(removes=..., evidence=..., "
                f"rule=...): the same measurement with that cause removed, with its own rule; or "
                f"drop the cause. No control, no 'because'."
            )
        if len(controls) > len(because):
            raise ValueError(
                f"the claim {self.statement!r} has {len(controls)} control(s) for {len(because)} "
                f"cause(s); a control tests a stated cause: give one because= entry per control."
            )
        if self.source is not None:
            source_claim(self.source)
        decisions = []
        for c in controls:
            own = [e.name for e in c.evidence]
            clash = sorted(set(own) & set(names))
            if clash:
                raise ValueError(
                    f"the control names {clash} like the claim's evidence; rename them."
                )
            _check_rule(c.rule, names + own, "Control.rule")
            decisions.append(c.rule({e.name: e for e in evidence + c.evidence}))
        object.__setattr__(self, "evidence", evidence)
        object.__setattr__(self, "because", because)
        object.__setattr__(self, "controls", controls)
        object.__setattr__(self, "decision", self.rule(dict(zip(names, evidence, strict=True))))
        object.__setattr__(self, "control_decisions", tuple(decisions))

    @property
    def outcome(self) -> str:
        """*holds*, *does not hold* or *inconclusive here*."""
        return self.decision.outcome

    @property
    def cause_outcomes(self) -> dict[str, str]:
        """Each stated cause and what its control decided."""
        return {b: d.outcome for b, d in zip(self.because, self.control_decisions, strict=True)}

    def rows(self) -> list[tuple[str, str, str, str, str]]:
        """(claim, verdict, deciding numbers, sources, scope): the claim's row, then its causes'."""
        d, ev = self.decision, self.evidence
        head = self.statement + (f" [source claim: {self.source}]" if self.source else "")
        out = [(head, verdict_text(d), d.deciding, _sources(self.rule, ev), str(self.scope))]
        for cause, c, d in zip(self.because, self.controls, self.control_decisions, strict=True):
            label = f"  because {cause}; control: {c.removes}"
            sources = _sources(c.rule, ev + c.evidence)
            out.append((label, verdict_text(d), d.deciding, sources, "same"))
        return out

    def __repr__(self) -> str:
        return repr(ClaimsTable((self,)))

    def _repr_html_(self) -> str:
        return ClaimsTable((self,))._repr_html_()


@dataclass(frozen=True)
class ClaimsTable(Rows):
    """Claims rendered as one table: statement, verdict, deciding numbers, sources, scope."""

    claims: tuple[Claim, ...]
    title: str = "Claims and verdicts"
    _header = ("claim", "verdict", "deciding numbers", "sources", "scope")

    def rows(self) -> list[tuple]:
        return [r for c in self.claims for r in c.rows()]

    _rows = rows

    def _caption(self) -> str:
        return self.title

    @property
    def outcomes(self) -> dict[str, str]:
        """Each statement and its outcome."""
        return {c.statement: c.outcome for c in self.claims}

    def __repr__(self) -> str:
        lines = [self.title + ":"] if self.title else []
        for claim, verdict, deciding, sources, scope in self.rows():
            pad = "    " if claim.startswith("  because") else ""
            lines += [f"{pad}- {claim.strip()}", f"{pad}    verdict: {verdict}"]
            lines += [f"{pad}    deciding: {deciding}", f"{pad}    sources: {sources}"]
            if not pad:
                lines.append(f"    scope: {scope}")
        return "\n".join(lines)


def table(claims: Claim | Sequence[Claim], *, title: str = "Claims and verdicts") -> ClaimsTable:
    """Renders claims as one table (``_repr_html_`` in a notebook, text in a terminal).

    Raises:
      TypeError: something that is not a :class:`Claim`.

    Example:
      >>> from batchlab.claims import Number, equals
      >>> c = Claim("one batch size compiles once", [Number("compilations", 1, "count_compiles")],
      ...           equals("compilations", 1), scope=Scope(backend="cpu", device_kind="cpu", jax_version="X"))
      >>> print(table([c]))
      Claims and verdicts:
      - one batch size compiles once
          verdict: holds
          deciding: compilations = 1
          sources: compilations: count_compiles
          scope: cpu (cpu); jax X
    """
    claims = (claims,) if isinstance(claims, Claim) else tuple(claims)
    bad = [type(c).__name__ for c in claims if not isinstance(c, Claim)]
    if bad:
        raise TypeError(f"`claims` must be bl.claims.Claim objects, got {bad}.")
    return ClaimsTable(claims, title)


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

    ``sizes`` and ``dtype`` make its :class:`Scope` (printed once), or ``scope`` gives it whole.
    """

    sizes: Mapping[str, Any] = field(default_factory=dict)
    dtype: str | None = None
    scope: Scope | None = None
    entries: list[Finding | Check] = field(default_factory=list)
    _header = ("kind", "claim", "verdict")

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

    @property
    def outcomes(self) -> dict[str, str]:
        """Each statement and its outcome, findings and checks alike."""
        return {e.statement: e.outcome for e in self.entries}

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
