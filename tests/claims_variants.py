"""Evidence variants, per rule kind: what claims_probing (test tooling) runs a rule on.

Each variant keeps the claim's own names and kinds (a :class:`Number` stays a ``Number``,
:class:`Samples` stay ``Samples`` with a spread) and is meant to give one outcome; the
probe runs the real rule on it and reports what it gave.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from batchlab.claims.evidence import Evidence, Number, Samples
from batchlab.claims.rules import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    OUTCOMES,
    AllOf,
    Decision,
    Equals,
    Ratio,
    Relation,
)

EvidenceMap = dict[str, Evidence]
Variant = tuple[str, EvidenceMap]


# --- variants, per rule kind --------------------------------------------------------------------


def different(value: Any) -> Any:
    """A value of the same type as ``value`` that ``equals`` does not take for it."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, numbers.Integral):
        return value + 1
    if isinstance(value, numbers.Real):
        return value * 2 + 1 if math.isfinite(value) else 0.0
    if isinstance(value, str):
        return value + " (changed)"
    if isinstance(value, (tuple, list)):
        extra = different(value[-1]) if len(value) else 0
        return type(value)([*value, extra])
    if hasattr(value, "shape"):
        a = np.asarray(value)
        if a.dtype == bool:
            return ~a if a.size else np.zeros((*a.shape, 1), bool)
        if np.issubdtype(a.dtype, np.number):
            return a + 1 if a.size else np.zeros((*a.shape, 1), a.dtype)
        return np.zeros((*a.shape, 1))
    if value is None:
        return 0
    return f"not {value!r}"


def _with(ev: Mapping[str, Evidence], **changed: Evidence) -> EvidenceMap:
    return {**ev, **changed}


def _nullable(ev: Evidence) -> bool:
    return isinstance(ev, Number)


def _positive(ev: Evidence) -> Evidence:
    """The figure as a ratio can use it: a missing or non-positive Number becomes 1.0."""
    if isinstance(ev, Number):
        v = ev.value
        ok = isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v) and v > 0
        return ev if ok else dataclasses.replace(ev, value=1.0)
    return ev


def _span(ev: Evidence) -> tuple[float, float]:
    if isinstance(ev, Samples):
        return ev.fastest, ev.slowest
    return float(ev.value), float(ev.value)


def _scaled(ev: Evidence, factor: float) -> Evidence:
    if isinstance(ev, Samples):
        return dataclasses.replace(ev, values=tuple(v * factor for v in ev.values))
    return dataclasses.replace(ev, value=float(ev.value) * factor)


def _spread(ev: Samples, lo: float, hi: float) -> Samples:
    return dataclasses.replace(ev, values=tuple(np.linspace(lo, hi, max(len(ev.values), 2))))


def ratio_variants(rule: Ratio, ev: Mapping[str, Evidence]) -> list[Variant]:
    """The numerator above, below and across the threshold; each side not measurable."""
    n_name, d_name, t = rule.numerator, rule.denominator, float(rule.threshold)
    num, den = _positive(ev[n_name]), _positive(ev[d_name])
    (n_lo, n_hi), (d_lo, d_hi) = _span(num), _span(den)
    base = _with(ev, **{d_name: den})
    out = [
        (
            f"{n_name!r} scaled to 2x the threshold over the whole spread",
            _with(base, **{n_name: _scaled(num, 2 * t * d_hi / n_lo)}),
        ),
        (
            f"{n_name!r} scaled to half the threshold over the whole spread",
            _with(base, **{n_name: _scaled(num, t * d_lo / (2 * n_hi))}),
        ),
    ]
    if isinstance(num, Samples):
        lo = t * d_hi / 2
        out.append(
            (
                f"{n_name!r} samples spread across the threshold",
                _with(base, **{n_name: _spread(num, lo, max(2 * t * d_lo, 2 * lo))}),
            )
        )
    elif isinstance(den, Samples):
        wide = _spread(den, d_lo, 4 * d_lo)
        out.append(
            (
                f"{d_name!r} samples spread so the ratio straddles the threshold",
                _with(ev, **{d_name: wide, n_name: dataclasses.replace(num, value=2 * t * d_lo)}),
            )
        )
    for name in (n_name, d_name):
        if _nullable(ev[name]):
            none = dataclasses.replace(ev[name], value=None)
            out.append((f"{name!r} not measurable here", _with(ev, **{name: none})))
    return out


def equals_variants(rule: Equals, ev: Mapping[str, Evidence]) -> list[Variant]:
    """The expected value, a different value of the same type, and no value."""
    e = ev[rule.name]
    if not isinstance(e, Number):
        return []
    return [
        (
            "the expected value",
            _with(ev, **{rule.name: dataclasses.replace(e, value=rule.expected)}),
        ),
        (
            "a different value of the same type",
            _with(ev, **{rule.name: dataclasses.replace(e, value=different(rule.expected))}),
        ),
        (
            f"{rule.name!r} not measurable here",
            _with(ev, **{rule.name: dataclasses.replace(e, value=None)}),
        ),
    ]


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


def relation_variants(rule: Relation, ev: Mapping[str, Evidence]) -> list[Variant]:
    """The left side moved onto, above and below the right side; either side not measurable."""
    left = ev[rule.left]
    named = isinstance(rule.right, str)
    right = ev[rule.right] if named else None
    if not isinstance(left, Number) or (named and not isinstance(right, Number)):
        return []
    r = right.value if named else rule.right
    if r is None:
        r = left.value if left.value is not None else 1
    if hasattr(r, "shape") and np.ndim(r) == 0:  # a 0-d array (jnp.sum(...)): its Python number
        r = np.asarray(r).item()
    if _is_number(r):
        step = max(abs(r) // 2, 1) if isinstance(r, numbers.Integral) else (abs(r) / 2 or 1.0)
        moves = [("onto", r), ("above", r + step), ("below", r - step)]
    else:
        moves = [("onto", r), ("away from", different(r))]
    out = [
        (
            f"{rule.left!r} moved {where} the right side",
            _with(ev, **{rule.left: dataclasses.replace(left, value=v)}),
        )
        for where, v in moves
    ]
    if named and right.value is None:  # the right side was not measurable: give it the value used
        out = [
            (label, _with(v, **{rule.right: dataclasses.replace(right, value=r)}))
            for label, v in out
        ]
    out.append(
        (
            f"{rule.left!r} not measurable here",
            _with(ev, **{rule.left: dataclasses.replace(left, value=None)}),
        )
    )
    if named:
        none = dataclasses.replace(right, value=None)
        out.append((f"{rule.right!r} not measurable here", _with(ev, **{rule.right: none})))
    return out


def _first(rule: Callable, ev: Mapping[str, Evidence], want: str) -> Variant | None:
    """The first candidate (as given, then the rule's variants) on which ``rule`` gives ``want``."""
    for label, v in [("as given", dict(ev)), *variants(rule, ev)]:
        if run_rule(rule, v)[0] == want:
            return label, v
    return None


def all_of_variants(rule: AllOf, ev: Mapping[str, Evidence]) -> list[Variant]:
    """Every part holding; then each part in turn not holding, or inconclusive, the rest as before."""
    holding: EvidenceMap = dict(ev)
    for _ in range(2):  # twice: a later part may move a figure an earlier part reads
        for i, part in enumerate(rule.parts, 1):
            found = _first(part, holding, HOLDS)
            if found is None:
                return [(f"part {i} never holds", holding)]
            holding = found[1]
    out = [("every part holding", holding)]
    for i, part in enumerate(rule.parts, 1):
        for want in (FAILS, INCONCLUSIVE):
            found = _first(part, holding, want)
            if found is not None:
                out.append((f"part {i} {want} ({found[0]}), the others holding", found[1]))
    return out


KNOWN_RULES: dict[type, Callable[[Any, Mapping[str, Evidence]], list[Variant]]] = {
    Ratio: ratio_variants,
    Equals: equals_variants,
    Relation: relation_variants,
    AllOf: all_of_variants,
}


def variants(rule: Callable, evidence: Mapping[str, Evidence]) -> list[Variant]:
    """Evidence variants derived from ``evidence`` for a rule the probe knows; none for any other."""
    make = KNOWN_RULES.get(type(rule))
    return make(rule, evidence) if make else []


def run_rule(rule: Callable, ev: Mapping[str, Evidence]) -> tuple[str | None, str]:
    """The real rule on one piece of evidence: (outcome, deciding), or (None, the error)."""
    try:
        d = rule(ev)
    except Exception as e:  # a rule that raises on some evidence reaches no outcome there
        return None, f"raised {type(e).__name__}: {e}"
    if not isinstance(d, Decision) or d.outcome not in OUTCOMES:
        return None, f"returned {d!r:.80}, not a Decision with one of {OUTCOMES}"
    return d.outcome, d.deciding
