"""The notebook-11 exercise: direction and size of the argument ratio with larger replicated weights."""

from __future__ import annotations

import pytest

from batchlab import exercises

# notebook 11's figures: a 1024 x 64 float32 batch, weights 8x (64 x 256 + 256) float32, 8 devices
CONTEXT = dict(batch_bytes=1024 * 64 * 4, weight_bytes=8 * (64 * 256 + 256) * 4, n_devices=8)
CONTEXT["old_ratio"] = 3.31
RIGHT = (CONTEXT["batch_bytes"] + CONTEXT["weight_bytes"]) / (
    CONTEXT["batch_bytes"] / 8 + CONTEXT["weight_bytes"]
)


def test_right_answer_passes_without_giving_the_number():
    result = exercises.check(
        "scaling.bigger_weights", dict(direction="falls", ratio=RIGHT * 1.05), **CONTEXT
    )
    assert result.ok and f"{RIGHT:.2f}" not in result.message


@pytest.mark.parametrize(
    "answer, hint",
    [
        (dict(direction="rises", ratio=RIGHT), "Not that direction"),
        (dict(direction="falls", ratio=3.31), "is not what the compiled memory analysis gives"),
        (dict(direction="down", ratio=RIGHT), "Not that direction ('rises', 'falls' or 'stays'?)"),
        (dict(direction="falls", ratio="small"), "Your answer raised ValueError"),
        (1.4, "Answer with dict"),
        (..., "No answer yet"),
    ],
)
def test_wrong_answers_get_a_hint_not_the_answer(answer, hint):
    result = exercises.check("scaling.bigger_weights", answer, **CONTEXT)
    assert not result.ok and hint in result.message and f"{RIGHT:.2f}" not in result.message
