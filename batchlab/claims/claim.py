"""A claim: a statement, its scope, its evidence, a rule, and a control for every cause.

A :class:`Claim` is decided when it is built: its rule reads its evidence and
answers *holds*, *does not hold* or *inconclusive here*. A claim that gives
a cause ("because ...") must carry a :class:`Control` for it: the same
measurement with the suspected cause removed, with a rule of its own. A
cause without a control is refused at construction.

A notebook records its verdicts with :class:`~batchlab.claims.Record` (findings
and checks). :class:`Control`, :class:`ClaimsTable` and :func:`table` are the
table of free-standing claims, the programmatic form outside a notebook.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from batchlab._util.format import html_table
from batchlab.claims.evidence import Evidence, Number, Samples, Scope
from batchlab.claims.rules import Decision
from batchlab.claims.sources import source_claim

_CAUSE_WORDS = re.compile(r"\b(because|due to)\b", re.IGNORECASE)


def _check_text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"`{what}` must be a sentence in plain words, got {value!r}.")
    return value


def _check_evidence(evidence: Any, what: str) -> tuple[Evidence, ...]:
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


def _decide(rule: Callable, evidence: Sequence[Evidence]) -> Decision:
    return rule({e.name: e for e in evidence})


def verdict_text(decision: Decision) -> str:
    """The outcome as a table prints it; a verdict decided by wall-clock timings says so."""
    return decision.outcome + (" (wall clock)" if decision.timed else "")


@dataclass(frozen=True)
class Control:
    """The same measurement with a suspected cause removed, and the rule it must satisfy.

    Its rule may read the claim's evidence as well as its own (the baseline the
    cause-free run is compared with).

    Args:
      removes: what was removed, in plain words ("the per-call cost: the same
        items in one ``lax.map`` call").
      evidence: the control's own measurements.
      rule: what the control must show for the cause to be supported.
    """

    removes: str
    evidence: Sequence[Evidence]
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
      ValueError: a cause without a control (or a control without a cause), a
        statement that gives its cause in its own words, a rule reading a figure
        the evidence lacks, a figure named twice, an unknown source claim.
      TypeError: a statement that is not text, evidence that is not Number/Samples,
        a rule that is not a rule.

    Example:
      >>> from batchlab.claims import Number, equals
      >>> c = Claim("two batch sizes compile twice", [Number("compilations", 2, "count_compiles")],
      ...           equals("compilations", 2))
      >>> c.outcome
      'holds'
    """

    statement: str
    evidence: Sequence[Evidence]
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
        object.__setattr__(self, "evidence", evidence)
        _check_rule(self.rule, [e.name for e in evidence], "rule")
        if not isinstance(self.scope, Scope):
            raise TypeError(f"`scope` must be a bl.claims.Scope, got {type(self.scope).__name__}.")
        because = (self.because,) if isinstance(self.because, str) else tuple(self.because)
        controls = (self.controls,) if isinstance(self.controls, Control) else tuple(self.controls)
        for cause in because:
            _check_text(cause, "because")
        if not all(isinstance(c, Control) for c in controls):
            raise TypeError("`controls` must be bl.claims.Control objects, one per cause.")
        if len(controls) < len(because):
            missing = because[len(controls) :]
            raise ValueError(
                f"the claim {self.statement!r} states a cause without a control: {missing[0]!r}. "
                f"Add controls=Control(removes=..., evidence=..., rule=...): the same measurement "
                f"with that cause removed, with its own rule; or drop the cause. No control, no "
                f"'because'."
            )
        if len(controls) > len(because):
            raise ValueError(
                f"the claim {self.statement!r} has {len(controls)} control(s) for {len(because)} "
                f"cause(s); a control tests a stated cause: give one because= entry per control."
            )
        if self.source is not None:
            source_claim(self.source)
        object.__setattr__(self, "because", because)
        object.__setattr__(self, "controls", controls)
        names = [e.name for e in evidence]
        decisions = []
        for c in controls:
            own = [e.name for e in c.evidence]
            clash = sorted(set(own) & set(names))
            if clash:
                raise ValueError(
                    f"the control names {clash} like the claim's evidence; rename them."
                )
            _check_rule(c.rule, names + own, "Control.rule")
            decisions.append(_decide(c.rule, evidence + c.evidence))
        object.__setattr__(self, "decision", _decide(self.rule, evidence))
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
        """(claim, verdict, deciding numbers, sources, scope): the claim's row, then one per cause."""
        head = self.statement + (f" [source claim: {self.source}]" if self.source else "")
        read = {e.name: e for e in self.evidence}
        out = [
            (
                head,
                verdict_text(self.decision),
                self.decision.deciding,
                _sources(self.rule, read),
                str(self.scope),
            )
        ]
        for cause, control, d in zip(
            self.because, self.controls, self.control_decisions, strict=True
        ):
            both = {**read, **{e.name: e for e in control.evidence}}
            out.append(
                (
                    f"  because {cause}; control: {control.removes}",
                    verdict_text(d),
                    d.deciding,
                    _sources(control.rule, both),
                    "same",
                )
            )
        return out

    def __repr__(self) -> str:
        return ClaimsTable((self,)).__repr__()

    def _repr_html_(self) -> str:
        return ClaimsTable((self,))._repr_html_()


def _sources(rule: Callable, evidence: dict[str, Evidence]) -> str:
    return "; ".join(f"{n}: {evidence[n].source}" for n in rule.reads)


HEADER = ("claim", "verdict", "deciding numbers", "sources", "scope")


@dataclass(frozen=True)
class ClaimsTable:
    """Claims rendered as one table: statement, verdict, deciding numbers, sources, scope."""

    claims: tuple[Claim, ...]
    title: str = "Claims and verdicts"

    def rows(self) -> list[tuple]:
        return [r for c in self.claims for r in c.rows()]

    @property
    def outcomes(self) -> dict[str, str]:
        """Each statement and its outcome."""
        return {c.statement: c.outcome for c in self.claims}

    def __repr__(self) -> str:
        lines = [self.title + ":"] if self.title else []
        for claim, verdict, deciding, sources, scope in self.rows():
            cause = claim.startswith("  because")
            pad = "    " if cause else ""
            lines.append(f"{pad}- {claim.strip()}")
            lines.append(f"{pad}    verdict: {verdict}")
            lines.append(f"{pad}    deciding: {deciding}")
            lines.append(f"{pad}    sources: {sources}")
            if not cause:
                lines.append(f"{pad}    scope: {scope}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return html_table(self.rows(), HEADER, caption=self.title)


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
