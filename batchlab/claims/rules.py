"""Rules: from the figures named in ``reads`` to *holds*, *does not hold* or *inconclusive here*."""

from __future__ import annotations

import functools
import math
import numbers
import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from batchlab._util.checks import check_choice, check_positive_float
from batchlab.claims.evidence import Evidence, Number
from batchlab.measuring.samples import Samples, format_value

HOLDS = "holds"
FAILS = "does not hold"
INCONCLUSIVE = "inconclusive here"
OUTCOMES = (HOLDS, FAILS, INCONCLUSIVE)


class Decision(NamedTuple):
    """What a rule decided, the numbers that decided it (``short``: in fewer words; ``value``: the
    deciding figure alone) and whether wall-clock timings did (``timed``)."""

    outcome: str
    deciding: str
    timed: bool = False
    short: str = ""
    value: str = ""


def _ratio_text(r: float) -> str:
    """``12.3x``-style, never in exponent notation (the notebooks' sanitizer reads it)."""
    return f"{r:.{0 if r >= 100 else 1 if r >= 10 else 2}f}x"


#: the least coverage of a median interval; 6 rounds are the fewest that reach it
COVERAGE = 0.95


def median_interval(ratios: list[float]) -> tuple[float, float, float] | None:
    """(median, low, high): the sign test's interval ``r_(k)`` to ``r_(n+1-k)``, the largest ``k``
    with coverage ``1 - 2 P(Bin(n, 1/2) < k)`` >= :data:`COVERAGE`; ``None`` below 6 ratios."""
    n, r = len(ratios), sorted(ratios)
    tail, k = 0.0, 0  # tail = P(Bin(n, 1/2) <= k - 1)
    while 1 - 2 * (tail + math.comb(n, k) / 2**n) >= COVERAGE:
        tail, k = tail + math.comb(n, k) / 2**n, k + 1
    return None if k == 0 else (float(np.median(r)), r[k - 1], r[n - k])


def _paired(num: Evidence, den: Evidence) -> list[float] | None:
    """Per-round ratios when both sides are paired samples of one run (or one side is exact)."""
    if isinstance(num, Samples) and isinstance(den, Samples):
        same = num.paired is not None and num.paired == den.paired
        return [a / b for a, b in zip(num.values, den.values, strict=True)] if same else None
    if isinstance(num, Samples) and num.paired and den.value:
        return [a / float(den.value) for a in num.values]
    if isinstance(den, Samples) and den.paired and num.value is not None:
        return [float(num.value) / b for b in den.values]
    return None


def _span(ev: Evidence) -> tuple[float, float, float] | None:
    """(estimate, low, high) of one unpaired side: the fastest sample and the range."""
    if isinstance(ev, Samples):
        return ev.fastest, ev.fastest, ev.slowest
    return None if ev.value is None else (float(ev.value),) * 3


def estimate(numerator: Evidence, denominator: Evidence) -> float:
    """The ratio a timing rule reads: the median per-round ratio of paired samples (one
    ``interleaved`` run), else fastest over fastest. A reveal or a sentence quoting a finding's
    ratio uses this, not the ratio of two medians.

    Args:
      numerator: Samples or a Number.
      denominator: Samples or a Number.

    Returns:
      The estimate, a float.

    Raises:
      ValueError: a side with no value, or a denominator of 0.

    Example:
      >>> a = Samples("a", (4.0, 9.0, 4.0), "t", paired="r")
      >>> b = Samples("b", (1.0, 3.0, 2.0), "t", paired="r")
      >>> estimate(a, b), a.median / b.median
      (3.0, 2.0)
    """
    ratios = _paired(numerator, denominator)
    if ratios is not None:
        return float(np.median(ratios))
    a, b = _span(numerator), _span(denominator)
    if a is None or b is None or b[0] <= 0:
        raise ValueError(
            f"no ratio of {numerator.name!r} to {denominator.name!r}: each side needs a value "
            "and the denominator must be above 0."
        )
    return a[0] / b[0]


@dataclass(frozen=True)
class Ratio:
    """``numerator / denominator`` above (or below) ``threshold`` over its whole interval: paired,
    the per-round ratios' :func:`median_interval`; unpaired, fastest/slowest to slowest/fastest."""

    numerator: str
    denominator: str
    threshold: float
    above: bool = True
    reads: tuple[str, ...] = field(init=False)  # the figures it reads

    def __post_init__(self):
        check_positive_float(self.threshold, "threshold")
        object.__setattr__(self, "reads", (self.numerator, self.denominator))

    def __call__(self, evidence: Mapping[str, Evidence]) -> Decision:
        num, den = evidence[self.numerator], evidence[self.denominator]
        timed, name = num.timed or den.timed, f"{self.numerator} / {self.denominator}"
        claimed = f"; claimed {'>' if self.above else '<'} {self.threshold:g}x"
        ratios, short = _paired(num, den), ""
        if ratios is not None:
            interval = median_interval(ratios)
            if interval is None:
                value = f"{len(ratios)} paired rounds, 6 needed"
                return Decision(INCONCLUSIVE, f"{name}: {value}{claimed}", timed, value=value)
            est, lo, hi = interval
            value, median = f"{_ratio_text(lo)} to {_ratio_text(hi)}", _ratio_text(est)
            text = f"{name} = {value} ({len(ratios)} paired rounds, median {median}){claimed}"
            short = f"{name} = {value} (median {median}, {len(ratios)} rounds){claimed}"
        else:
            a, b = _span(num), _span(den)
            if a is None or b is None:
                return Decision(INCONCLUSIVE, f"{name}: not measurable here", timed)
            if b[1] <= 0:
                return Decision(INCONCLUSIVE, f"{self.denominator} is {b[1]}: no ratio", timed)
            est, lo, hi = a[0] / b[0], a[1] / b[2], a[2] / b[1]
            value = _ratio_text(est)
            if timed:
                value += f" (unpaired: fastest; range {_ratio_text(lo)} to {_ratio_text(hi)})"
            text = f"{name} = {value}{claimed}"
        # "below t" is "above -t" for the negated interval
        lo, hi, t = (lo, hi, self.threshold) if self.above else (-hi, -lo, -self.threshold)
        outcome = HOLDS if lo > t else FAILS if hi <= t else INCONCLUSIVE
        return Decision(outcome, text, timed, short, value)


ratio_above = functools.partial(Ratio, above=True)  # ratio_above(numerator, denominator, t)
ratio_below = functools.partial(Ratio, above=False)


def _same(a: Any, b: Any) -> bool:
    """Exact equality: arrays by shape and every element, sequences item by item."""
    if hasattr(a, "shape") or hasattr(b, "shape"):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and bool(np.array_equal(a, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):  # True is not the count 1
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return a == b


def _number(evidence: Mapping[str, Evidence], name: str) -> Number:
    if isinstance(evidence[name], Samples):
        raise TypeError(
            f"`{name}` holds timing samples; equals and relation compare deterministic figures "
            "(a Number): compare timings with ratio_above/ratio_below (spread-aware)."
        )
    return evidence[name]


@dataclass(frozen=True)
class Equals:
    """Holds when the figure ``name`` is exactly ``expected`` (counts, bytes, shapes, flags)."""

    name: str
    expected: Any

    @property
    def reads(self) -> tuple[str, ...]:
        return (self.name,)

    def __call__(self, evidence: Mapping[str, Evidence]) -> Decision:
        ev = _number(evidence, self.name)
        shown = format_value(ev.value, ev.unit)
        if ev.value is None:
            return Decision(INCONCLUSIVE, f"{self.name}: {shown}")
        if _same(ev.value, self.expected):
            return Decision(HOLDS, f"{self.name} = {shown}")
        return Decision(FAILS, f"{self.name} = {shown}, not {format_value(self.expected, ev.unit)}")


equals = Equals

_OPS = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}


@dataclass(frozen=True)
class Relation:
    """Holds when ``left op right``; ``right`` is a figure's name or a number.

    Example:
      >>> ev = {"temp": Number("temp", 64, "a", "B"), "values": Number("values", 128, "b", "B")}
      >>> relation("temp", "<", "values")(ev).deciding
      'temp = 64 B < values = 128 B'
    """

    left: str
    op: str
    right: str | float

    def __post_init__(self):
        check_choice(self.op, "op", _OPS)
        if not isinstance(self.right, (str, numbers.Real)) or isinstance(self.right, bool):
            raise TypeError(
                f"`right` must name a figure of the evidence or be a number, got {self.right!r}."
            )

    @property
    def reads(self) -> tuple[str, ...]:
        return (self.left, self.right) if isinstance(self.right, str) else (self.left,)

    def __call__(self, evidence: Mapping[str, Evidence]) -> Decision:
        left, *named = (_number(evidence, n) for n in self.reads)
        right = named[0] if named else Number("limit", self.right, "the claim", left.unit)
        r_text = (f"{self.right} = " if named else "") + format_value(right.value, right.unit)
        value = f"{self.left} = {format_value(left.value, left.unit)}"
        text = f"{value} {self.op} {r_text}"
        if left.value is None or right.value is None:
            return Decision(INCONCLUSIVE, text.replace(f" {self.op} ", f" {self.op}? "))
        ok = _OPS[self.op](left.value, right.value)
        return Decision(HOLDS if ok else FAILS, text if ok else f"{value}, not {self.op} {r_text}")


relation = Relation


@dataclass(frozen=True)
class AllOf:
    """Every part must hold; one that does not hold decides; otherwise inconclusive."""

    parts: tuple
    reads: tuple[str, ...] = field(init=False)  # the figures its parts read

    def __post_init__(self):
        if not self.parts or not all(callable(p) and hasattr(p, "reads") for p in self.parts):
            raise TypeError(
                "`all_of` takes one or more rules (ratio_above, equals, relation, ...)."
            )
        reads = tuple(dict.fromkeys(n for p in self.parts for n in p.reads))
        object.__setattr__(self, "reads", reads)

    def __call__(self, evidence: Mapping[str, Evidence]) -> Decision:
        decisions = [p(evidence) for p in self.parts]
        outcomes = {d.outcome for d in decisions}
        outcome = next((o for o in (FAILS, INCONCLUSIVE) if o in outcomes), HOLDS)
        deciding = "; ".join(d.deciding for d in decisions)
        return Decision(outcome, deciding, any(d.timed for d in decisions))


def all_of(*parts) -> AllOf:
    """Holds when every part holds (e.g. two counts and a flag)."""
    return AllOf(tuple(parts))
