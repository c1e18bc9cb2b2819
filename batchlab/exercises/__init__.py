"""Exercises with automatic checks: a hint on a wrong answer, never the solution.

A topic module registers ``checker(answer, **context) -> (ok, message)`` with ``@exercise``;
a notebook calls ``exercises.check("tour.predict_bytes", my_answer, **context)``.
"""

from __future__ import annotations

import html
import importlib
import inspect
import pkgutil
import reprlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from batchlab.exercises._reveal import Reveal, callout, reveal

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
    in it is a hint; an unknown id or a ``context`` the checker cannot take is raised."""
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
    try:
        ok, message = checker(answer, **context)
    except Exception as e:
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


__all__ = ["CheckResult", "Reveal", "all_exercises", "check", "exercise", "prompt", "reveal"]
