"""Exercises of notebooks 00-02: right answers pass, hints and praise never give the answer away."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from batchlab import backend_facts, memory_estimate
from batchlab.exercises import check, direction


def scorer_context(b=8, f=16):
    w = jnp.ones((f, f), jnp.float32) / f
    v = jnp.ones((f,), jnp.float32)
    fn = jax.vmap(lambda x, w, v: jnp.tanh(x @ w) @ v, in_axes=(0, None, None))
    return dict(fn=fn, args=(jnp.ones((b, f), jnp.float32), w, v))


def test_predict_bytes_needs_only_argument_and_output():
    right = {"argument": 8 * 16 * 4 + 16 * 16 * 4 + 16 * 4, "output": 8 * 4}
    assert check("tour.predict_bytes", right, **scorer_context()).ok
    r = check("tour.predict_bytes", {"argument": 1}, **scorer_context())
    assert not r.ok and "'argument' and 'output'" in r.message


def measured_directions(dtype):
    ctx = scorer_context(b=64)
    old = memory_estimate(ctx["fn"], *ctx["args"])
    new = memory_estimate(ctx["fn"], *(a.astype(dtype) for a in ctx["args"]))
    return {
        "argument": direction(new.argument_bytes, old.argument_bytes),
        "temp": direction(new.temp_bytes, old.temp_bytes),
    }


@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float16])
def test_change_dtype_follows_the_measurement(dtype):
    truth = measured_directions(dtype)
    assert truth["argument"] == "shrinks"  # half the bytes per element, on every backend
    ctx = dict(scorer_context(b=64), dtype=dtype)
    r = check("tour.change_dtype", truth, **ctx)
    assert r.ok
    for word in ("shrinks", "same", "grows"):  # the praise names no direction
        assert word not in r.message
    wrong = dict(truth, temp="same" if truth["temp"] != "same" else "grows")
    r = check("tour.change_dtype", wrong, **ctx)
    assert not r.ok and "buffer_assignment" in r.message and truth["temp"] not in r.message


def test_change_dtype_on_cpu_temp_grows():
    """The surprise notebook 00 asks about: XLA:CPU computes a bf16 dot in float32."""
    if backend_facts().fuses_temporaries:
        pytest.skip(
            "XLA:CPU plans the temporaries; a backend that fuses them plans none in either dtype"
        )
    assert measured_directions(jnp.bfloat16) == {"argument": "shrinks", "temp": "grows"}


def test_change_dtype_bad_answers():
    ctx = dict(scorer_context(), dtype=jnp.bfloat16)
    assert "dict" in check("tour.change_dtype", "grows", **ctx).message
    assert (
        "must be one of"
        in check("tour.change_dtype", {"argument": "less", "temp": "grows"}, **ctx).message
    )


def test_direction():
    assert [
        direction(2, 1),
        direction(1.02, 1),
        direction(0.5, 1),
        direction(0, 0),
        direction(3, 0),
    ] == [
        "grows",
        "same",
        "shrinks",
        "same",
        "grows",
    ]


def test_praise_does_not_print_the_answer():
    assert "(4, 3)" not in check("axes.item_shape", (4, 3)).message
    assert "(8, 5, 3)" not in check("broadcasting.predict_shape", (8, 5, 3)).message


def predict(x, w):
    return x @ w


#: what notebook 01 passes (its x and w have these shapes)
NOTEBOOK_CONTEXT = {
    "axes.columns_batch": dict(fn=predict, x=jnp.ones((3, 5)), w=jnp.ones((3, 2))),
    "axes.non_square": dict(fn=predict, x=jnp.ones((3, 4)), w=jnp.ones((4,))),
}


@pytest.mark.parametrize(
    "answer, ok, hint",
    [
        ({"in_axes": (1, None), "out_axes": -1}, True, "Right"),
        ({"in_axes": (1, None), "out_axes": 1}, True, "Right"),
        ({"in_axes": (1, None), "out_axes": 0}, False, "out_axes says where"),
        ({"in_axes": (0, None), "out_axes": -1}, False, "which axes hold the items"),
        ({"in_axes": (1, 0), "out_axes": -1}, False, "vmap would refuse it"),
        ({"in_axes": 1}, False, "Answer with a dict"),
    ],
)
def test_columns_batch(answer, ok, hint):
    r = check("axes.columns_batch", answer, fn=predict, x=jnp.ones((3, 5)), w=jnp.ones((3, 2)))
    assert r.ok == ok and hint in r.message
    assert "(1, None)" not in r.message


def test_non_square_follows_jax():
    x, w = jnp.ones((3, 4)), jnp.ones((4,))
    assert check("axes.non_square", "error", fn=predict, x=x, w=w).ok
    r = check("axes.non_square", "wrong answer", fn=predict, x=x, w=w)
    assert not r.ok and "jax.vmap" in r.message
    # back to the square case of the notebook: the wrong axis gives a wrong answer, no error
    xs, ws = (
        jax.random.normal(jax.random.key(2), (3, 3)),
        jax.random.normal(jax.random.key(3), (3,)),
    )
    assert check("axes.non_square", "wrong answer", fn=predict, x=xs, w=ws).ok
    assert "one of" in check("axes.non_square", "crash", fn=predict, x=x, w=w).message


def test_batch_of_one():
    assert check("broadcasting.batch_of_one", "right answer", n=1).ok
    assert check("broadcasting.batch_of_one", "wrong answer", n=6).ok
    r = check("broadcasting.batch_of_one", "wrong answer", n=1)
    assert not r.ok and "how many pairs" in r.message
    assert "one of" in check("broadcasting.batch_of_one", "fine", n=1).message


@pytest.mark.parametrize(
    "exercise_id, context",
    [
        ("tour.change_dtype", dict(scorer_context(), dtype=jnp.bfloat16)),
        ("axes.columns_batch", NOTEBOOK_CONTEXT["axes.columns_batch"]),
        ("axes.non_square", NOTEBOOK_CONTEXT["axes.non_square"]),
        ("broadcasting.batch_of_one", {"n": 1}),
    ],
)
def test_student_stub_says_no_answer_yet(exercise_id, context):
    r = check(exercise_id, ..., **context)
    assert not r.ok and r.message.startswith("No answer yet")


@pytest.mark.parametrize(
    "exercise_id, answer, ok, start",
    [  # the checkers' former doctests
        ("axes.item_shape", (4, 3), True, "Right: vmap"),
        ("axes.item_shape", (6, 3), False, "vmap removes exactly the axis in_axes names"),
        ("axes.columns_batch", {"in_axes": (1, None), "out_axes": -1}, True, "Right"),
        (
            "axes.columns_batch",
            {"in_axes": (0, None), "out_axes": 0},
            False,
            "vmap would refuse it",
        ),
        ("axes.non_square", "error", True, "Right"),
        ("axes.non_square", "wrong answer", False, "Not this time"),
        ("broadcasting.predict_shape", (8, 5, 3), True, "Right"),
        ("broadcasting.predict_shape", (8, 5), False, "The result has as many axes"),
        ("broadcasting.residual", lambda pred, y: pred[:, 0] - y, True, "Right"),
        ("broadcasting.residual", lambda pred, y: pred - y, False, "Your result has shape (6, 6)"),
    ],
)
def test_checkers_with_the_notebooks_context(exercise_id, answer, ok, start):
    r = check(exercise_id, answer, **NOTEBOOK_CONTEXT.get(exercise_id, {}))
    assert r.ok is ok and r.message.startswith(start), r.message
