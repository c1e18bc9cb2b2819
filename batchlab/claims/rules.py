"""Rules: from a claim's evidence to one of three outcomes.

Every rule answers *holds*, *does not hold* or *inconclusive here*, and says
which numbers decided it. Timing samples are compared by their spread: when
the range a ratio can take (fastest against slowest) straddles the threshold,
the answer is *inconclusive here*, never an exception. Deterministic evidence
is compared exactly; a figure this backend cannot give (``None``) is
inconclusive.
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from batchlab.claims.evidence import Evidence, Number, Samples, format_value

HOLDS = "holds"
FAILS = "does not hold"
INCONCLUSIVE = "inconclusive here"
OUTCOMES = (HOLDS, FAILS, INCONCLUSIVE)


class Decision(NamedTuple):
    """What a rule decided, and the numbers that decided it (``timed``: a wall-clock verdict)."""

    outcome: str
    deciding: str
    timed: bool = False


def _get(evidence: Mapping[str, Evidence], name: str) -> Evidence:
    return evidence[name]


def _ratio_text(r: float) -> str:
    """``12.3x``-style, never in exponent notation (the notebooks' sanitizer reads it)."""
    digits = 0 if r >= 100 else 1 if r >= 10 else 2
    return f"{r:.{digits}f}x"


def _span(ev: Evidence) -> tuple[float, float, float] | None:
    """(estimate, low, high) of one side: the fastest sample and the range; a number is exact."""
    if isinstance(ev, Samples):
        return ev.fastest, ev.fastest, ev.slowest
    if ev.value is None:
        return None
    v = float(ev.value)
    return v, v, v


@dataclass(frozen=True)
class Ratio:
    """``numerator / denominator`` above (or below) a threshold, spread-aware.

    The estimate is the ratio of the fastest samples. The ratio can be as
    low as fastest/slowest and as high as slowest/fastest; the rule holds
    only when that whole range is on the claimed side of the threshold,
    does not hold when it is all on the other side, and is inconclusive
    when the range straddles the threshold.
    """

    numerator: str
    denominator: str
    threshold: float
    above: bool = True

    def __post_init__(self):
        if not isinstance(self.threshold, numbers.Real) or not self.threshold > 0:
            raise ValueError(f"`threshold` must be a positive number, got {self.threshold!r}.")

    @property
    def reads(self) -> tuple[str, ...]:
        return (self.numerator, self.denominator)

    def __call__(self, evidence: Mapping[str, Evidence]) -> Decision:
        num, den = _get(evidence, self.numerator), _get(evidence, self.denominator)
        timed = num.timed or den.timed
        a, b = _span(num), _span(den)
        side = ">" if self.above else "<"
        if a is None or b is None:
            return Decision(
                INCONCLUSIVE, f"{self.numerator} / {self.denominator}: not measurable here", timed
            )
        if b[1] <= 0:
            return Decision(INCONCLUSIVE, f"{self.denominator} is {b[1]}: no ratio", timed)
        est, lo, hi = a[0] / b[0], a[1] / b[2], a[2] / b[1]
        clock = " (wall clock)" if timed else ""
        text = f"{self.numerator} / {self.denominator} = {_ratio_text(est)}{clock}"
        if timed:
            text += (
                f" (fastest samples; range {_ratio_text(lo)}{clock} to {_ratio_text(hi)}{clock})"
            )
        text += f"; claimed {side} {self.threshold:g}x"
        if self.above:
            outcome = (
                HOLDS if lo > self.threshold else FAILS if hi <= self.threshold else INCONCLUSIVE
            )
        else:
            outcome = (
                HOLDS if hi < self.threshold else FAILS if lo >= self.threshold else INCONCLUSIVE
            )
        return Decision(outcome, text, timed)


def ratio_above(numerator: str, denominator: str, threshold: float) -> Ratio:
    """Holds when ``numerator / denominator`` is above ``threshold`` over the whole spread.

    Example:
      >>> from batchlab.claims.evidence import Samples
      >>> ev = {"slow": Samples("slow", [10e-3, 11e-3], "a"), "fast": Samples("fast", [1e-3, 1.2e-3], "b")}
      >>> ratio_above("slow", "fast", 4)(ev).outcome
      'holds'
      >>> ratio_above("slow", "fast", 9)(ev).outcome
      'inconclusive here'
    """
    return Ratio(numerator, denominator, threshold, above=True)


def ratio_below(numerator: str, denominator: str, threshold: float) -> Ratio:
    """Holds when ``numerator / denominator`` is below ``threshold`` over the whole spread."""
    return Ratio(numerator, denominator, threshold, above=False)


def _same(a: Any, b: Any) -> bool:
    """Exact equality: arrays by shape and every element, sequences item by item."""
    if hasattr(a, "shape") or hasattr(b, "shape"):
        a_, b_ = np.asarray(a), np.asarray(b)
        return a_.shape == b_.shape and bool(np.array_equal(a_, b_))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):  # True is not the count 1
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return a == b


@dataclass(frozen=True)
class Equals:
    """A deterministic figure equals the expected value exactly (counts, bytes, shapes, flags)."""

    name: str
    expected: Any

    @property
    def reads(self) -> tuple[str, ...]:
        return (self.name,)

    def __call__(self, evidence: Mapping[str, Evidence]) -> Decision:
        ev = _get(evidence, self.name)
        if isinstance(ev, Samples):
            raise TypeError(
                f"`{self.name}` holds timing samples; exact equality is for deterministic "
                f"evidence (a Number). Compare timings with ratio_above/ratio_below."
            )
        shown = format_value(ev.value, ev.unit)
        if ev.value is None:
            return Decision(INCONCLUSIVE, f"{self.name}: {shown}")
        want = format_value(self.expected, ev.unit)
        ok = _same(ev.value, self.expected)
        return Decision(
            HOLDS if ok else FAILS, f"{self.name} = {shown}" + ("" if ok else f", not {want}")
        )


def equals(name: str, expected: Any) -> Equals:
    """Holds when the figure ``name`` is exactly ``expected``.

    Example:
      >>> from batchlab.claims.evidence import Number
      >>> equals("compilations", 2)({"compilations": Number("compilations", 2, "count_compiles")}).outcome
      'holds'
    """
    return Equals(name, expected)


_OPS = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}


@dataclass(frozen=True)
class Compare:
    """A count compared with another count (by name) or with a fixed number."""

    left: str
    op: str
    right: str | float

    def __post_init__(self):
        if self.op not in _OPS:
            raise ValueError(f"`op` must be one of {tuple(_OPS)}, got {self.op!r}.")
        if not isinstance(self.right, (str, numbers.Real)) or isinstance(self.right, bool):
            raise TypeError(
                f"`right` must name a figure of the evidence or be a number, got {self.right!r}."
            )

    @property
    def reads(self) -> tuple[str, ...]:
        return (self.left, self.right) if isinstance(self.right, str) else (self.left,)

    def __call__(self, evidence: Mapping[str, Evidence]) -> Decision:
        sides = []
        for name in self.reads:
            ev = _get(evidence, name)
            if isinstance(ev, Samples):
                raise TypeError(
                    f"`{name}` holds timing samples; compare counts here and timings with "
                    f"ratio_above/ratio_below (spread-aware)."
                )
            sides.append(ev)
        left = sides[0]
        right = (
            sides[1]
            if isinstance(self.right, str)
            else Number("limit", self.right, "the claim", left.unit)
        )
        r_name = self.right if isinstance(self.right, str) else ""
        r_text = (f"{r_name} = " if r_name else "") + format_value(right.value, right.unit)
        text = f"{self.left} = {format_value(left.value, left.unit)} {self.op} {r_text}"
        if left.value is None or right.value is None:
            return Decision(INCONCLUSIVE, text.replace(f" {self.op} ", f" {self.op}? "))
        ok = _OPS[self.op](left.value, right.value)
        return Decision(HOLDS if ok else FAILS, text if ok else f"not: {text}")


def compare(left: str, op: str, right: str | float) -> Compare:
    """Holds when ``left op right``; ``right`` is a figure's name or a number.

    Example:
      >>> from batchlab.claims.evidence import Number
      >>> ev = {"temp": Number("temp", 64, "a", "B"), "values": Number("values", 128, "b", "B")}
      >>> compare("temp", "<", "values")(ev)
      Decision(outcome='holds', deciding='temp = 64 B < values = 128 B', timed=False)
    """
    return Compare(left, op, right)


@dataclass(frozen=True)
class AllOf:
    """Every part must hold; one that does not hold decides; otherwise inconclusive."""

    parts: tuple

    def __post_init__(self):
        if not self.parts or not all(callable(p) and hasattr(p, "reads") for p in self.parts):
            raise TypeError("`all_of` takes one or more rules (ratio_above, equals, compare, ...).")

    @property
    def reads(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(n for p in self.parts for n in p.reads))

    def __call__(self, evidence: Mapping[str, Evidence]) -> Decision:
        decisions = [p(evidence) for p in self.parts]
        outcomes = {d.outcome for d in decisions}
        outcome = (
            FAILS if FAILS in outcomes else INCONCLUSIVE if INCONCLUSIVE in outcomes else HOLDS
        )
        return Decision(
            outcome, "; ".join(d.deciding for d in decisions), any(d.timed for d in decisions)
        )


def all_of(*parts) -> AllOf:
    """Holds when every part holds (e.g. two counts and a flag)."""
    return AllOf(tuple(parts))
