"""The notebook-12 exercise: the direction of vmap's / lax.map's plan ratio with a wider MLP."""

from __future__ import annotations

import pytest

from batchlab import exercises

FALLS = dict(old_ratio=2.96, new_ratio=2.4)


def test_right_answer_passes_without_giving_the_direction():
    result = exercises.check("advisor.wider_mlp", "falls", **FALLS)
    assert result.ok and "falls" not in result.message and "2.4" not in result.message


@pytest.mark.parametrize(
    ("answer", "context", "hint"),
    [
        ("rises", FALLS, "Not that direction"),
        ("stays", FALLS, "Not that direction"),
        ("falls", dict(old_ratio=2.0, new_ratio=2.5), "Not that direction"),
        ("down", FALLS, "Answer with one of"),
        (2.4, FALLS, "Answer with one of"),
        (None, FALLS, ""),
        (..., FALLS, "No answer yet"),
    ],
)
def test_wrong_answers_get_a_hint_not_the_answer(answer, context, hint):
    result = exercises.check("advisor.wider_mlp", answer, **context)
    assert not result.ok and hint in result.message
    assert "falls" not in result.message.replace("'falls'", "")


def test_a_change_within_two_percent_stays():
    assert exercises.check("advisor.wider_mlp", "stays", old_ratio=2.0, new_ratio=2.03).ok
    assert exercises.check("advisor.wider_mlp", "rises", old_ratio=2.0, new_ratio=2.5).ok
