"""Predict, then measure: a learner's committed guess shown beside the measurement.

With no guess (``None``, or the student stub ``...``) the reveal still runs and says "no
prediction made", so "Run All" reaches the end of every notebook.
"""

from __future__ import annotations

import html
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from batchlab._util.format import format_bytes, format_count, format_seconds


def callout(color: str, body: str) -> str:
    """A notebook callout: ``body`` (HTML) beside a bar of ``color``."""
    return f"<div style='border-left:4px solid {color};padding:4px 8px'>{body}</div>"


def _is_number(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _show(value: Any, unit: str) -> str:
    if value is None or isinstance(value, str):
        return "n/a" if value is None else value
    if unit in ("bytes", "seconds"):
        return (format_bytes if unit == "bytes" else format_seconds)(float(value))
    if float(value).is_integer() and abs(value) < 1e15:
        text = f"{int(value):,}"
    else:
        text = format_count(float(value)) if abs(value) >= 1e4 else f"{float(value):.3g}"
    return f"{text} {unit}".strip()


@dataclass(frozen=True)
class Reveal:
    """A committed prediction (``guess``, ``None`` when none was made) beside the value
    ``measured`` in this run, both in ``unit`` (``"bytes"``, ``"seconds"``: human units)."""

    prediction_id: str
    guess: Any
    measured: Any
    unit: str = ""

    @property
    def made(self) -> bool:
        """Whether the learner committed a prediction."""
        return self.guess is not None

    @property
    def ratio(self) -> float | None:
        """``guess / measured`` for numbers (``None`` for choices, no guess or a zero)."""
        if self.made and _is_number(self.guess) and _is_number(self.measured) and self.measured:
            return float(self.guess) / float(self.measured)
        return None

    @property
    def verdict(self) -> str:
        """How far off the guess was, in words computed from the two values."""
        if not self.made:
            return "no prediction made: write your guess in the cell above and run both again"
        if isinstance(self.measured, str):
            right = str(self.guess) == self.measured
            return "right" if right else f"not this time: you chose {self.guess!r}"
        if self.guess == self.measured:
            return "exact"
        r = self.ratio
        if r is None:  # measured is zero, guess is not
            return "off: the measured value is 0"
        if r <= 0:
            return "off: the guess has the wrong sign"
        factor, side = (r, "too high") if r > 1 else (1 / r, "too low")
        if factor <= 1.1:
            return f"close: within 10% ({side})"
        if factor <= 2:
            return f"within 2x ({side} by {factor:.2g}x)"
        return f"off by {factor:.3g}x ({side})"

    def __repr__(self) -> str:
        return (
            f"[{self.prediction_id}] your prediction: {_show(self.guess, self.unit)}"
            f" | measured: {_show(self.measured, self.unit)} | {self.verdict}"
        )

    def _repr_html_(self) -> str:
        color = "#1b7f3b" if self.verdict in ("exact", "right") else "#444"
        color = color if self.made else "#b26a00"
        cells = "".join(
            f"<td style='padding:2px 10px'>{k}<br><b>{html.escape(_show(v, self.unit))}</b></td>"
            for k, v in (("your prediction", self.guess), ("measured", self.measured))
        )
        return callout(
            color,
            f"<b>[{html.escape(self.prediction_id)}]</b><table><tr>{cells}</tr></table>"
            f"<span style='color:{color}'>{html.escape(self.verdict)}</span>",
        )


def reveal(
    prediction_id: str,
    guess: Any,
    *,
    measured: Any,
    unit: str = "",
    choices: Sequence[str] | None = None,
) -> Reveal:
    """Shows a committed prediction beside the measured value and how far off it was.

    Args:
      prediction_id: ``"topic.name"``.
      guess: a number, a string (one of ``choices``), or ``None`` / ``...`` when none was made.
      measured: the value measured in this run (a number, or a string for a choice).
      unit: the unit of both; ``"bytes"`` and ``"seconds"`` print in human units.
      choices: for a choice, the allowed answers.
    """
    if not isinstance(prediction_id, str) or "." not in prediction_id:
        raise ValueError(f"`prediction_id` must look like 'topic.name', got {prediction_id!r}.")
    guess = None if guess is Ellipsis else guess  # the student stub
    if not (_is_number(measured) or isinstance(measured, str)):
        raise TypeError(
            f"`measured` must be a number or a string (a choice), got {type(measured).__name__}."
        )
    if _is_number(measured) and math.isnan(float(measured)):
        raise ValueError(f"`measured` is NaN for {prediction_id!r}: nothing to compare with.")
    if guess is None:
        return Reveal(prediction_id, guess, measured, unit)
    if isinstance(measured, str) and not isinstance(guess, str):
        raise TypeError(
            f"`guess` must be one of the choices (a string) for {prediction_id!r}, got {guess!r}."
        )
    if not isinstance(measured, str) and not _is_number(guess):
        raise TypeError(
            f"`guess` must be a number for {prediction_id!r}, got {guess!r} "
            f"({type(guess).__name__}); write e.g. my_guess = 8."
        )
    if _is_number(guess) and math.isnan(float(guess)):
        raise ValueError("`guess` is NaN: write a number.")
    if choices is not None and guess not in choices:
        raise ValueError(f"`guess` must be one of {list(choices)}, got {guess!r}.")
    return Reveal(prediction_id, guess, measured, unit)
