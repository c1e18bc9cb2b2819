"""Predict, then measure: a learner's committed guess shown beside the measurement."""

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
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and not math.isnan(x)


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
    """A committed ``guess`` (``None``: none made) beside the value ``measured``, in ``unit``."""

    prediction_id: str
    guess: Any
    measured: Any
    unit: str = ""

    made = property(lambda self: self.guess is not None)  # whether a prediction was committed

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
        if not self.measured:
            return "off: the measured value is 0"
        r = float(self.guess) / float(self.measured)
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
    """Shows a committed prediction (a number, or a string among ``choices``; ``None`` or
    ``...``: none made) beside the value ``measured`` in this run ("topic.name" names it)."""
    if not isinstance(prediction_id, str) or "." not in prediction_id:
        raise ValueError(f"`prediction_id` must look like 'topic.name', got {prediction_id!r}.")
    choice = isinstance(measured, str)
    if not (choice or _is_number(measured)):
        raise (ValueError if isinstance(measured, numbers.Real) else TypeError)(
            f"`measured` must be a number (not NaN) or a string (a choice), got {measured!r}."
        )
    guess = None if guess is Ellipsis else guess  # the student stub
    allowed = choices if choices is not None else [guess] if isinstance(guess, str) else []
    if guess is not None and (guess not in allowed if choice else not _is_number(guess)):
        want = f"one of the choices {list(choices or ['(strings)'])}" if choice else "a number"
        same_type = isinstance(guess, str) == choice and not isinstance(guess, bool)
        raise (ValueError if same_type else TypeError)(
            f"`guess` must be {want} for {prediction_id!r}, got {guess!r}."
        )
    return Reveal(prediction_id, guess, measured, unit)
