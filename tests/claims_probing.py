"""Probing a claim (test tooling): does its rule reach every outcome on evidence like its own?

A verdict that cannot come out otherwise is no verdict. `probe` takes a
claim (or a rule and evidence), derives evidence variants from the claim's own
evidence (same names and kinds: a :class:`Number` stays a ``Number``,
:class:`Samples` stay ``Samples`` with a spread) meant to give each of the
three outcomes, runs the **real** rule on every variant, and reports, per
outcome, whether it was reached and by which evidence:

- ratio (``ratio_above`` / ``ratio_below``): the numerator scaled to twice the
  threshold over the whole spread, to half of it, samples whose spread
  straddles it, a figure that is not measurable here (``None``);
- ``equals``: the expected value, a different value of the same type, ``None``;
- ``relation``: the left side moved onto, above and below the right, ``None``;
- ``all_of``: every part holding, then one part not holding (the others as
  they were), then one part inconclusive.

A rule the probe does not know (a custom callable) gets no variants: only the
evidence as measured is run, so it reaches one outcome and is reported *not
shown able to fail*, never passed silently. The probe shows that a rule responds
to made-up evidence; it cannot show that an experiment could have come out
otherwise (that is a finding's contrast, ``Record.finding``), so it is test
tooling: ``tests/test_notebook_claims.py`` probes every literal rule a notebook writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from claims_variants import KNOWN_RULES, run_rule, variants

from batchlab._util.format import html_table
from batchlab.claims.evidence import Evidence, Number, Samples
from batchlab.claims.rules import OUTCOMES

# --- the result ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reached:
    """One outcome a rule reached: the variant that reached it, what changed, what the rule said."""

    outcome: str
    label: str
    changed: tuple[Evidence, ...]
    deciding: str

    def __repr__(self) -> str:
        what = "; ".join(repr(e) for e in self.changed) or "nothing changed"
        return f"{self.outcome}: by {self.label} [{what}] -> {self.deciding}"


@dataclass(frozen=True)
class RuleProbe:
    """What one rule gave over the variants of its evidence (``reached``: outcome -> Reached or None)."""

    what: str
    rule: Callable
    reached: Mapping[str, Reached | None]
    tried: int
    errors: tuple[str, ...] = ()

    @property
    def missing(self) -> tuple[str, ...]:
        """The outcomes no variant reached."""
        return tuple(o for o in OUTCOMES if self.reached.get(o) is None)

    @property
    def shown(self) -> bool:
        """True when the rule reached all three outcomes: it is shown able to fail."""
        return not self.missing

    def lines(self) -> list[str]:
        known = type(self.rule) in KNOWN_RULES
        head = f"{self.what}: {self.rule!r}" + (
            "" if known else " (a rule the probe does not know)"
        )
        out = [head]
        for o in OUTCOMES:
            r = self.reached.get(o)
            out.append(f"    {r!r}" if r else f"    {o}: NOT reached in {self.tried} variants")
        out.extend(f"    a variant {e}" for e in self.errors[:3])
        if self.shown:
            out.append("    shown able to fail: every outcome reached")
        else:
            out.append(f"    NOT shown able to fail: never {' / '.join(map(repr, self.missing))}")
        return out

    def __repr__(self) -> str:
        return "\n".join(self.lines())


def probe_rule(
    rule: Callable, evidence: Mapping[str, Evidence] | Sequence[Evidence], what: str = "rule"
) -> RuleProbe:
    """Runs ``rule`` on its evidence as measured and on every variant derived from it.

    Example:
      >>> from batchlab.claims import Number, equals
      >>> p = probe_rule(equals("compilations", 2), [Number("compilations", 2, "count_compiles")])
      >>> p.shown, p.reached["does not hold"].changed
      (True, (Number(compilations = 3; count_compiles),))
    """
    if not callable(rule):
        raise TypeError(
            f"`rule` must be a rule (bl.claims.ratio_above, equals, relation, all_of, ...), got "
            f"{type(rule).__name__} {rule!r}."
        )
    items = evidence.values() if isinstance(evidence, Mapping) else evidence
    if isinstance(evidence, (str, bytes)) or not isinstance(items, Iterable):
        items = None
    else:
        items = list(items)
    if items is None or not all(isinstance(e, (Number, Samples)) for e in items):
        raise TypeError(
            f"`evidence` must be a list of bl.claims.Number / Samples (or a dict of them by "
            f"name), as a Claim takes it; got {type(evidence).__name__}."
        )
    ev = dict(evidence) if isinstance(evidence, Mapping) else {e.name: e for e in items}
    reached: dict[str, Reached | None] = dict.fromkeys(OUTCOMES)
    errors: list[str] = []
    candidates = [("the evidence as measured", ev), *variants(rule, ev)]
    for label, v in candidates:
        outcome, deciding = run_rule(rule, v)
        if outcome is None:
            errors.append(f"({label}) {deciding}")
        elif reached[outcome] is None:
            changed = tuple(e for n, e in v.items() if ev.get(n) is not e)
            reached[outcome] = Reached(outcome, label, changed, deciding)
    return RuleProbe(what, rule, reached, len(candidates), tuple(errors))


@dataclass(frozen=True)
class Probe:
    """A claim's probe: its rule's (``shown``: the rule reaches every outcome)."""

    statement: str
    rules: tuple[RuleProbe, ...]

    @property
    def shown(self) -> bool:
        return all(p.shown for p in self.rules)

    @property
    def missing(self) -> dict[str, tuple[str, ...]]:
        """The rule, if it misses outcomes, and the outcomes it misses."""
        return {p.what: p.missing for p in self.rules if p.missing}

    def __repr__(self) -> str:
        lines = [f"Probe of {self.statement!r}:"]
        lines += ["  " + line for p in self.rules for line in p.lines()]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = [
            (p.what, o, *((r.label, repr(r)) if (r := p.reached[o]) else ("NOT reached", "")))
            for p in self.rules
            for o in OUTCOMES
        ]
        shown = "shown able to fail" if self.shown else "NOT shown able to fail"
        head = ("rule", "outcome", "reached by", "evidence and decision")
        return html_table(rows, head, caption=f"Probe of {self.statement!r}: {shown}")


def probe(claim: Any) -> Probe:
    """Probes a :class:`~batchlab.claims.Claim`: its rule, over variants of its own evidence.

    Raises:
      TypeError: ``claim`` is not a Claim.

    Example:
      >>> from batchlab.claims import Claim, Number, equals
      >>> c = Claim("two batch sizes compile twice", [Number("compilations", 2, "count_compiles")],
      ...           equals("compilations", 2))
      >>> probe(c).shown
      True
    """
    if not all(hasattr(claim, a) for a in ("statement", "evidence", "rule")):
        raise TypeError(f"`claim` must be a bl.claims.Claim, got {type(claim).__name__}.")
    return Probe(claim.statement, (probe_rule(claim.rule, claim.evidence, "rule"),))
