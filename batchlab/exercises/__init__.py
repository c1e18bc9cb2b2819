"""Exercises with automatic checks (a hint on a wrong answer, never the solution) and
predictions revealed beside the measurement.

A topic module registers ``checker(answer, **context) -> (ok, message)`` with ``@exercise``;
a notebook calls ``exercises.check("tour.predict_bytes", my_answer, **context)``.
"""

from __future__ import annotations

import functools
import html
import importlib
import inspect
import math
import numbers
import pkgutil
import reprlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from batchlab._util.format import format_bytes, format_count, format_seconds

Checker = Callable[..., "tuple[bool, str]"]

_REGISTRY: dict[str, tuple[Checker, str]] = {}


def exercise(exercise_id: str, prompt: str) -> Callable[[Checker], Checker]:
    """Decorator registering ``checker`` under ``exercise_id`` ("topic.name")."""
    if "." not in exercise_id:
        raise ValueError(f"`exercise_id` must look like 'topic.name', got {exercise_id!r}.")

    def register(checker: Checker) -> Checker:
        _REGISTRY[exercise_id] = (checker, prompt)
        return checker

    return register


def all_exercises() -> list[str]:
    """Ids of every exercise in every topic submodule."""
    for m in pkgutil.iter_modules(__path__):
        if not m.name.startswith("_"):
            importlib.import_module(f"{__name__}.{m.name}")
    return sorted(_REGISTRY)


def _lookup(exercise_id: str) -> tuple[Checker, str]:
    if exercise_id not in _REGISTRY and exercise_id not in all_exercises():
        raise KeyError(f"No exercise {exercise_id!r}; known exercises: {sorted(_REGISTRY)}.")
    return _REGISTRY[exercise_id]


def prompt(exercise_id: str) -> str:
    """The task text of one exercise (``KeyError`` for an unknown id)."""
    return _lookup(exercise_id)[1]


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one :func:`check`: ``ok`` and a message (hint or praise)."""

    exercise_id: str
    ok: bool
    message: str

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return f"[{self.exercise_id}] {'correct' if self.ok else 'not yet'}: {self.message}"

    def _repr_html_(self) -> str:
        color, mark = (
            ("#1b7f3b", "&#10004; correct") if self.ok else ("#b26a00", "&#10007; not yet")
        )
        text = f"[{html.escape(self.exercise_id)}] {html.escape(self.message)}"
        return callout(color, f"<b style='color:{color}'>{mark}</b> {text}")


def check(exercise_id: str, answer: Any, **context: Any) -> CheckResult:
    """Checks a learner's answer (truthy when correct): a wrong one, the stub ``...`` or an error
    in it is a hint; an unknown id, a ``context`` the checker cannot take, or an error raised
    before a function answer ran (the notebook's context) is raised."""
    checker, _ = _lookup(exercise_id)
    try:
        inspect.signature(checker).bind(answer, **context)
    except TypeError as e:
        raise TypeError(
            f"check({exercise_id!r}, answer, ...) got the context {sorted(context)}: {e}; pass "
            "each input the exercise needs as a keyword, e.g. check(id, answer, x=x)."
        ) from None
    if _unanswered(answer):
        stub = "No answer yet: replace every ... with your answer and run again."
        return CheckResult(exercise_id, False, stub)
    ran: list[bool] = []  # a function answer notes that it ran: before, an error is not its own
    given = answer
    if inspect.isfunction(answer):

        @functools.wraps(answer)
        def given(*args: Any, **kwargs: Any) -> Any:
            ran.append(True)
            return answer(*args, **kwargs)

    try:
        ok, message = checker(given, **context)
    except Exception as e:
        if given is not answer and not ran:
            e.add_note(
                f"check({exercise_id!r}, ...): raised by the check's context "
                f"({', '.join(sorted(context))}) before your answer ran: not your answer's error."
            )
            raise
        first = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        given = ", ".join(f"{n}={_describe(v)}" for n, v in context.items())
        how = "the check called it with" if callable(answer) else "checked with"
        called = f" ({how} {given})" if given else ""
        return CheckResult(exercise_id, False, f"Your answer raised {first}{called}")
    return CheckResult(exercise_id, bool(ok), message)


def _describe(value: Any) -> str:
    """``float32[4, 3]`` for arrays, a function's name, else the type and a short repr."""
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if isinstance(shape, tuple) and dtype is not None:
        return f"{dtype}{list(shape)}"
    if isinstance(value, (int, float, complex, bool)):
        return repr(value)
    if callable(value):  # no address: stored notebook outputs stay stable
        return f"function {getattr(value, '__name__', type(value).__name__)}"
    return f"{type(value).__name__} {reprlib.repr(value)}"


def _unanswered(answer: Any) -> bool:
    """True for ``...`` (the student stub) or a dict/list/tuple still holding one."""
    if isinstance(answer, dict):
        answer = list(answer.values())
    if isinstance(answer, (list, tuple)):
        return any(map(_unanswered, answer))
    return answer is Ellipsis or answer is NotImplemented


def choose(answer: Any, truth: str, choices: Sequence[str], right: str, wrong: str) -> tuple:
    """A choice's grade: ``right`` for ``truth``, ``wrong`` (a hint) for another choice."""
    if answer not in choices:
        return False, f"Answer with one of {tuple(choices)}, got {answer!r}."
    return (True, right) if answer == truth else (False, wrong)


DIRECTIONS = ("shrinks", "same", "grows")


def direction(new: float, old: float, tolerance: float = 0.05, words=DIRECTIONS) -> str:
    """``words[2]`` when ``new`` exceeds ``old`` by over ``tolerance`` of it, ``words[0]`` below."""
    margin = tolerance * abs(old)
    return words[2] if new > old + margin else words[0] if new < old - margin else words[1]


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

    @property
    def made(self) -> bool:
        """Whether a prediction was committed."""
        return self.guess is not None

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


__all__ = ["CheckResult", "Reveal", "all_exercises", "check", "exercise", "prompt", "reveal"]
