"""Timing samples and how a figure is written: :class:`Samples`, the unit of every timing."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from batchlab._util.checks import check_choice, check_positive_int
from batchlab._util.format import format_bytes, format_seconds

#: units a Number or Samples may carry; "B" prints bytes exactly, "s" as a duration
UNITS = ("", "B", "s", "x", "%")


def check_figure(name: Any, source: Any, unit: Any) -> None:
    """Raises ``TypeError`` for an empty ``name`` / ``source``, ``ValueError`` for an unknown
    unit."""
    for what, text in (("name", name), ("source", source)):
        if not isinstance(text, str) or not text.strip():
            raise TypeError(f"`{what}` must be a non-empty string naming the figure, got {text!r}.")
    check_choice(unit, "unit", UNITS)


def format_value(value: Any, unit: str = "") -> str:
    """A figure as a table shows it: exact bytes and counts, durations in human units."""
    if value is None:
        return "not measurable here"
    if isinstance(value, bool):
        return str(value)
    if unit == "s":
        return format_seconds(value)
    if isinstance(value, numbers.Integral) and unit == "B":
        return f"{int(value):,} B" + (f" ({format_bytes(value)})" if value >= 1024 else "")
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}{unit}"
    if isinstance(value, numbers.Real):
        return f"{float(value):.4g}{unit}"
    if isinstance(value, (np.ndarray, jax.Array)):
        return np.array2string(np.asarray(value), threshold=8)
    return str(value)


@dataclass(frozen=True)
class Samples:
    """Repeated timings of one thing, in seconds (or per item); samples of one ``interleaved`` call
    share a ``paired`` token (sample ``i`` of each: the same round)."""

    name: str
    values: tuple[float, ...]
    source: str
    unit: str = "s"
    paired: str | None = None
    fastest: float = field(init=False)
    slowest: float = field(init=False)
    median: float = field(init=False)
    timed = True

    def __post_init__(self):
        check_figure(self.name, self.source, self.unit)
        try:
            values = tuple(float(v) for v in self.values)
        except TypeError:
            values = ()
        if len(values) < 2 or not all(math.isfinite(v) and v > 0 for v in values):
            raise ValueError(
                f"`values` of {self.name!r} must be a sequence of at least two positive, finite "
                f"timing samples (a spread needs repeats), got {self.values!r:.80}."
            )
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "fastest", min(values))
        object.__setattr__(self, "slowest", max(values))
        object.__setattr__(self, "median", float(np.median(values)))

    def per(self, items: int, name: str | None = None) -> Samples:
        """The same samples divided by ``items`` (seconds per item), still paired."""
        check_positive_int(items, "items")
        values = tuple(v / items for v in self.values)
        source = f"{self.source}, per item ({items} items)"
        return Samples(name or self.name, values, source, self.unit, self.paired)

    def __repr__(self) -> str:
        return (
            f"Samples({self.name}: fastest {format_value(self.fastest, self.unit)}, "
            f"slowest {format_value(self.slowest, self.unit)}, {len(self.values)} samples; "
            f"{self.source})"
        )
