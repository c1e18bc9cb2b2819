"""The exercise engine: hints on wrong answers, never the solution; stubs and learner errors are hints."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import pytest

from batchlab import exercises
from batchlab.exercises import CheckResult, check, exercise


@exercise("testing.masked_mean", "Write masked_mean(x, mask): the mean of x where mask is True.")
def _masked_mean(answer, *, x, mask):
    got = answer(x, mask)
    expected = jnp.sum(jnp.where(mask, x, 0)) / jnp.sum(mask)
    if jnp.allclose(got, expected):
        return True, "Correct: padded entries no longer count."
    if jnp.allclose(got, jnp.mean(x)):
        return (
            False,
            "That is the mean over every entry, padding included; divide by the number of real entries.",
        )
    return (
        False,
        "Not the masked mean yet: sum only the real entries, then divide by how many there are.",
    )


@exercise("testing.needs_x", "Any answer.")
def _needs_x(answer, *, x):
    return True, "fine"


@exercise("testing.context_first", "Write f(x) -> x.")
def _context_first(answer, *, make):
    x = make()  # the notebook's context runs first
    return bool(answer(x) == x), "fine"


X = jnp.array([1.0, 2.0, 3.0, 100.0])
MASK = jnp.array([True, True, True, False])


def test_correct_answer():
    r = check("testing.masked_mean", lambda x, m: jnp.sum(x * m) / jnp.sum(m), x=X, mask=MASK)
    assert r.ok and bool(r) and "Correct" in r.message


@pytest.mark.parametrize("stub", [..., NotImplemented, {"argument": ..., "output": 4}, [1, ...]])
def test_unanswered_stub_is_a_hint(stub):
    r = check("testing.masked_mean", stub, x=X, mask=MASK)
    assert not r.ok and r.message.startswith("No answer yet")


def test_wrong_answer_gets_hint_not_solution():
    r = check("testing.masked_mean", lambda x, m: jnp.mean(x), x=X, mask=MASK)
    assert not r.ok and "padding included" in r.message
    assert "2.0" not in r.message  # the expected value


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (lambda x, m: x.sum() / 0 if isinstance(x, int) else 1 / 0, "ZeroDivisionError"),
        (lambda x: x, "TypeError"),  # wrong signature
        (lambda x, m: jnp.ones(3) + jnp.ones(4), "TypeError"),  # a shape error inside JAX
        (lambda x, m: x[m.astype(int) + 10].undefined, "AttributeError"),
    ],
)
def test_errors_in_the_learners_function_become_hints(answer, error):
    r = check("testing.masked_mean", answer, x=X, mask=MASK)
    assert not r.ok
    assert r.message.startswith(f"Your answer raised {error}")
    assert "Traceback" not in r.message and "\n" not in r.message


def test_an_error_of_the_notebooks_context_is_raised_not_blamed_on_the_answer():
    def broken_context():
        raise ZeroDivisionError("the notebook's own cell")

    with pytest.raises(ZeroDivisionError, match="the notebook's own cell") as info:
        check("testing.context_first", lambda x: x, make=broken_context)
    assert "before your answer ran: not your answer's error" in "".join(info.value.__notes__)
    # once the answer runs, its errors are hints
    r = check("testing.context_first", lambda x: x / 0, make=lambda: 1)
    assert not r.ok and r.message.startswith("Your answer raised ZeroDivisionError")


def test_repr_and_html():
    ok = CheckResult("a.b", True, "well done")
    bad = CheckResult("a.b", False, "x < y & z")
    assert repr(ok) == "[a.b] correct: well done"
    assert "not yet" in bad._repr_html_() and "x &lt; y &amp; z" in bad._repr_html_()


def test_unknown_exercise():
    with pytest.raises(KeyError, match=r"No exercise 'nope\.nothing'; known exercises"):
        check("nope.nothing", 1)
    with pytest.raises(KeyError, match=r"No exercise 'nope\.nothing'"):
        exercises.prompt("nope.nothing")


def test_bad_id():
    with pytest.raises(ValueError, match=r"`exercise_id` must look like 'topic\.name'"):
        exercise("nodot", "prompt")


def test_missing_context_is_a_notebook_bug_not_a_hint():
    with pytest.raises(
        TypeError,
        # Python's own signature-bind text: 3.12 says "required keyword-only argument"
        match=r"check\('testing.needs_x', answer, ...\) got the context \[\]: missing a required "
        r"(keyword-only )?argument: 'x'; pass each input the exercise needs as a keyword",
    ):
        check("testing.needs_x", 1)


def test_prompt():
    assert exercises.prompt("testing.masked_mean").startswith("Write masked_mean")


# ------------------------------------------------------------------ the kit's own exercises
def topic_exercises() -> list[str]:
    """The kit's own exercises: every one a topic module registers (whatever its id's prefix)."""
    ids = exercises.all_exercises()
    return [
        e for e in ids if exercises._REGISTRY[e][0].__module__.startswith("batchlab.exercises.")
    ]


def test_every_topic_exercise_has_a_prompt_and_accepts_the_stub():
    ids = topic_exercises()
    assert {"tour.predict_bytes", "faults.double_budget", "scaling.bigger_weights"} <= set(ids)
    for exercise_id in ids:
        assert exercises.prompt(exercise_id).strip()
        checker, _ = exercises._REGISTRY[exercise_id]
        import inspect

        params = list(inspect.signature(checker).parameters.values())[1:]
        context = {p.name: None for p in params if p.default is p.empty and p.kind != p.VAR_KEYWORD}
        r = check(exercise_id, ..., **context)
        assert not r.ok and r.message.startswith("No answer yet"), exercise_id


def tour_context(b=8, f=16):
    w = jnp.ones((f, f), jnp.float32)
    v = jnp.ones((f,), jnp.float32)
    fn = jax.vmap(lambda x, w, v: jnp.tanh(x @ w) @ v, in_axes=(0, None, None))
    return dict(fn=fn, args=(jnp.ones((b, f), jnp.float32), w, v))


@pytest.mark.parametrize(
    "answer",
    [
        {"argument": 1, "output": 2, "temp": 3},
        {"argument": 8 * 16 * 4, "output": 8 * 4, "temp": 1},
        {"argument": 0, "output": 8 * 4, "temp": 10**9},
        {"argument": 8 * 16 * 4 + 16 * 16 * 4 + 16 * 4, "output": 0, "temp": 8 * 16 * 4},
    ],
)
def test_tour_hints_never_reveal_the_figures(answer):
    expected = {"argument": 8 * 16 * 4 + 16 * 16 * 4 + 16 * 4, "output": 8 * 4, "temp": 8 * 16 * 4}
    r = check("tour.predict_bytes", answer, **tour_context())
    assert not r.ok
    numbers = set(re.findall(r"(?<![A-Za-z])\d+", r.message))  # not the 32 of float32
    for key, value in expected.items():
        if answer[key] != value:
            assert str(value) not in numbers, f"hint reveals the {key} bytes: {r.message}"


def test_tour_accepts_the_solution_and_rejects_a_wrong_shape():
    right = {"argument": 8 * 16 * 4 + 16 * 16 * 4 + 16 * 4, "output": 8 * 4, "temp": 8 * 16 * 4}
    assert check("tour.predict_bytes", right, **tour_context()).ok
    r = check("tour.predict_bytes", [1, 2, 3], **tour_context())
    assert not r.ok and "dict" in r.message
