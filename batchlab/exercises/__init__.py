"""Exercises with automatic checks: a hint on a wrong answer, never the solution.

Each notebook's exercises live in a submodule named for its topic
(``batchlab.exercises.tour``, ...). An exercise is a function
``checker(answer, **context) -> (ok, message)`` registered under an id;
learners call :func:`check` from the notebook::

    from batchlab import exercises
    exercises.check("tour.predict_bytes", my_answer)

A wrong answer gets a hint that points at the concept, computed from the
learner's own answer where possible; the expected value is never printed.

In notebooks, a solution sits between ``# BEGIN SOLUTION`` and
``# END SOLUTION`` lines; ``python scripts/workshop.py`` builds student
copies with those lines replaced by a stub.
"""

from __future__ import annotations

import ast
import html
import importlib
import inspect
import linecache
import pkgutil
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from batchlab.exercises._reveal import Reveal as Reveal
from batchlab.exercises._reveal import reveal as reveal

Checker = Callable[..., "tuple[bool, str]"]

_REGISTRY: dict[str, tuple[Checker, str]] = {}


def _topics() -> list[str]:
    """Every topic submodule in this package (found, not listed by hand)."""
    return [m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")]


def exercise(exercise_id: str, prompt: str) -> Callable[[Checker], Checker]:
    """Decorator registering ``checker`` under ``exercise_id`` ("topic.name")."""
    if "." not in exercise_id:
        raise ValueError(f"`exercise_id` must look like 'topic.name', got {exercise_id!r}.")

    def register(checker: Checker) -> Checker:
        _REGISTRY[exercise_id] = (checker, prompt)
        return checker

    return register


def _load(exercise_id: str) -> None:
    if not isinstance(exercise_id, str):
        raise TypeError(
            f"`exercise_id` must be a string like 'tour.predict_bytes', got "
            f"{type(exercise_id).__name__} {exercise_id!r}."
        )
    topic = exercise_id.split(".", 1)[0]
    if exercise_id not in _REGISTRY:
        module = f"{__name__}.{topic}"
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name != module:  # the topic exists but needs something missing: say so
                raise


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one :func:`check`: ``ok`` and a message (hint or praise)."""

    exercise_id: str
    ok: bool
    message: str

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        mark = "correct" if self.ok else "not yet"
        return f"[{self.exercise_id}] {mark}: {self.message}"

    def _repr_html_(self) -> str:
        color, mark = (
            ("#1b7f3b", "&#10004; correct") if self.ok else ("#b26a00", "&#10007; not yet")
        )
        return (
            f"<div style='border-left:4px solid {color};padding:4px 8px'><b style='color:{color}'>"
            f"{mark}</b> [{html.escape(self.exercise_id)}] {html.escape(self.message)}</div>"
        )


def check(exercise_id: str, answer: Any, **context: Any) -> CheckResult:
    """Checks a learner's answer to one exercise.

    Args:
      exercise_id: the exercise, e.g. ``"tour.predict_bytes"``.
      answer: what the learner computed or wrote (a number, a function, ...).
      **context: anything the checker needs from the notebook (inputs).

    Returns:
      A :class:`CheckResult`; truthy when correct. Never raises for a wrong
      answer: errors inside the learner's code become hints.

    An error inside the check is told apart by where it arose: in the
    learner's function, or in an expression of the checker that uses the
    answer (or a value computed from it), it is a hint ("Your answer raised
    ..."); in an expression that uses only the notebook's context, it is the
    notebook's error, raised with the context arguments named; in neither,
    it is the checker's own bug.

    Raises:
      KeyError: unknown ``exercise_id`` (the message lists the known ones).
      TypeError: ``context`` lacks an input the exercise needs (a notebook bug,
        not a wrong answer; the message names what to pass).
      TypeError, ValueError: the context is wrong (the checker failed on it,
        not on the answer; the message names the context arguments).
      RuntimeError: the checker itself failed (a bug in the exercise).

    Example:
      >>> @exercise("demo.square", "Write f(x) = x squared.")
      ... def square(answer, *, x):
      ...     return (answer(x) == x * x, "Correct." if answer(x) == x * x else "Multiply x by itself.")
      >>> check("demo.square", lambda x: x + x, x=3)
      [demo.square] not yet: Multiply x by itself.
      >>> check("demo.square", lambda x: 1 / 0, x=3)
      [demo.square] not yet: Your answer raised ZeroDivisionError: division by zero (the check called it with x=3)
      >>> check("demo.square", ..., x=3).ok
      False
    """
    _load(exercise_id)
    if exercise_id not in _REGISTRY:
        all_exercises()
        raise KeyError(f"No exercise {exercise_id!r}; known exercises: {sorted(_REGISTRY)}.")
    checker, _ = _REGISTRY[exercise_id]
    _check_context(exercise_id, checker, answer, context)
    if _unanswered(answer):
        return CheckResult(
            exercise_id, False, "No answer yet: replace every ... with your answer and run again."
        )
    try:
        ok, message = checker(answer, **context)
    except Exception as e:
        culprit, names = _culprit(e, checker, answer)
        first = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        spread = _var_keyword(checker)
        names = [n for n in names if n not in spread] + (
            sorted(context) if spread & set(names) else []
        )
        given = ", ".join(
            f"{n}={_describe(context[n])}" if n in context else f"{n} (not passed)" for n in names
        )
        if culprit == "answer":  # the learner's function (or value) failed: that is a hint too
            called = f" (the check called it with {given})" if given and callable(answer) else ""
            return CheckResult(exercise_id, False, f"Your answer raised {first}{called}")
        if culprit == "context":
            cls = TypeError if isinstance(e, TypeError) else ValueError
            raise cls(
                f"check({exercise_id!r}, ...) could not use the notebook's context, so your answer "
                f"was not checked (this is not about your answer): working with {given} raised "
                f"{first.rstrip('.')}. Check what the notebook passes as "
                f"{', '.join(f'`{n}`' for n in names)}: re-run the cells that define "
                f"{' and '.join(names)} (in order, unchanged), then this check."
            ) from e
        raise RuntimeError(
            f"check({exercise_id!r}, ...) failed inside the exercise's own checker, not in your "
            f"answer or the notebook's context: {first.rstrip('.')}. This is a bug in batchlab.exercises "
            f"(topic {exercise_id.split('.', 1)[0]!r}); please report it with this message."
        ) from e
    return CheckResult(exercise_id, bool(ok), message)


def _var_keyword(checker: Checker) -> set[str]:
    """The name of the checker's ``**context`` parameter, if it has one."""
    try:
        parameters = inspect.signature(checker).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {p.name for p in parameters if p.kind is p.VAR_KEYWORD}


def _describe(value: Any) -> str:
    """A short description of a context value: ``float32[4, 3]`` for arrays, else type and repr."""
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if isinstance(shape, tuple) and dtype is not None:
        return f"{dtype}{list(shape)}"
    if isinstance(value, (int, float, complex, bool)):
        return repr(value)
    if callable(value):  # no address: stored notebook outputs stay stable
        return f"function {getattr(value, '__name__', type(value).__name__)}"
    text = repr(value)
    return f"{type(value).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"


def _culprit(error: BaseException, checker: Checker, answer: Any) -> tuple[str, list[str]]:
    """Whose failure ``error`` is: ``"answer"``, ``"context"`` (with the names) or ``"checker"``.

    The learner's: the traceback runs through the answer's own code, or the checker's failing
    expression uses the answer (or a variable computed from it). The notebook's: that
    expression uses only context arguments (or variables computed from them). The
    checker's: neither. When it cannot tell (no source, no frame), the learner's, as before.
    """
    code = getattr(inspect.unwrap(checker), "__code__", None)
    try:
        params = list(inspect.signature(checker).parameters)
        source = textwrap.dedent(inspect.getsource(inspect.unwrap(checker)))
        tree = ast.parse(source)
    except (TypeError, ValueError, OSError, SyntaxError):
        return "answer", []
    answer_codes = {
        getattr(f, "__code__", None)
        for f in (answer, getattr(answer, "__wrapped__", None), vars(type(answer)).get("__call__"))
    } - {None}
    failing, in_answer = None, False
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code in answer_codes:
            in_answer = True
            break
        if tb.tb_frame.f_code is code:
            failing = tb
        tb = tb.tb_next
    used = _names_at(failing, code) if failing is not None and params else None
    if used is None:
        return "answer", []
    taint = _taint(tree, params[0], set(params[1:]))
    context = [n for n in params[1:] if n in used or n in _sources(taint, used)]
    if in_answer or params[0] in used:  # the answer was called (or used) right there
        return "answer", context
    if any("answer" in taint.get(n, ()) for n in used):  # a value computed from the answer
        return "answer", []
    return ("context", context) if context else ("checker", [])


def _names_at(tb: Any, code: Any) -> set[str] | None:
    """The names in the checker's expression that was running when ``tb`` was raised."""
    positions = list(code.co_positions())
    index = tb.tb_lasti // 2
    if not 0 <= index < len(positions) or None in positions[index]:
        return None
    lineno, end_lineno, col, end_col = positions[index]
    lines = linecache.getlines(code.co_filename)[lineno - 1 : end_lineno]
    if not lines:
        return None
    lines[-1] = lines[-1][:end_col]
    lines[0] = lines[0][col:]
    text = "".join(lines)
    try:
        return {
            n.id for n in ast.walk(ast.parse(text.strip(), mode="eval")) if isinstance(n, ast.Name)
        }
    except SyntaxError:
        return set(re.findall(r"\b[A-Za-z_]\w*\b", text))


def _taint(tree: ast.AST, answer: str, context: set[str]) -> dict[str, set[str]]:
    """Which of ``answer`` and the context names every local variable is computed from."""
    taint: dict[str, set[str]] = {answer: {"answer"}, **{n: {n} for n in context}}
    flows = []  # (targets, sources) of every assignment-like statement
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            flows.append((targets, node.value))
        elif isinstance(node, (ast.For, ast.comprehension)):
            flows.append(([node.target], node.iter))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            flows.append(([node.optional_vars], node.context_expr))
    changed = True
    while changed:
        changed = False
        for targets, value in flows:
            if value is None:
                continue
            came = set().union(
                *(taint.get(n.id, set()) for n in ast.walk(value) if isinstance(n, ast.Name))
            )
            for target in targets:
                for n in ast.walk(target):
                    if isinstance(n, ast.Name) and not came <= taint.setdefault(n.id, set()):
                        taint[n.id] |= came
                        changed = True
    return taint


def _sources(taint: dict[str, set[str]], used: set[str]) -> set[str]:
    return set().union(*(taint.get(n, set()) for n in used)) - {"answer"}


def _unanswered(answer: Any) -> bool:
    """True for ``...`` (the student stub) or a dict/list/tuple still holding one."""
    if answer is Ellipsis or answer is NotImplemented:
        return True
    if isinstance(answer, dict):
        return any(_unanswered(v) for v in answer.values())
    if isinstance(answer, (list, tuple)):
        return any(_unanswered(v) for v in answer)
    return False


def _check_context(
    exercise_id: str, checker: Checker, answer: Any, context: dict[str, Any]
) -> None:
    """Raises ``TypeError`` (for the notebook's author) when ``check`` lacks what the checker needs."""
    try:
        signature = inspect.signature(checker)
    except (TypeError, ValueError):  # a builtin or C function: nothing to check
        return
    try:
        signature.bind(answer, **context)
    except TypeError as e:
        needed = [
            n
            for n, p in list(signature.parameters.items())[1:]
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        ]
        raise TypeError(
            f"check({exercise_id!r}, ...) was called with context {sorted(context)}, but this exercise "
            f"needs {needed} ({e}); call check({exercise_id!r}, answer, "
            + ", ".join(f"{n}=..." for n in needed)
            + ")."
        ) from None


def prompt(exercise_id: str) -> str:
    """The task text of one exercise.

    Raises:
      KeyError: unknown ``exercise_id``.
    """
    _load(exercise_id)
    if exercise_id not in _REGISTRY:
        raise KeyError(f"No exercise {exercise_id!r}; known exercises: {all_exercises()}.")
    return _REGISTRY[exercise_id][1]


def all_exercises() -> list[str]:
    """Ids of every exercise in every topic."""
    for topic in _topics():
        _load(f"{topic}.")
    return sorted(_REGISTRY)
