"""Exercises for notebook 12 (the advisor on your own function)."""

from __future__ import annotations

from typing import Any

from batchlab.exercises import exercise

_DIRECTIONS = ("rises", "falls", "stays")


@exercise(
    "advisor.wider_mlp",
    "Double the MLP's hidden width (256 -> 512; the same 64 inputs, 8 outputs, 512 items, "
    "chunk 16). Does the planned-peak ratio vmap / lax.map chunk 16 rise, fall or stay? "
    "Answer with one word: 'rises', 'falls' or 'stays'.",
)
def wider_mlp(answer: Any, *, old_ratio: float, new_ratio: float) -> tuple[bool, str]:
    if answer not in _DIRECTIONS:
        return False, f"Answer with one of {_DIRECTIONS} (a string), got {answer!r}."
    change = new_ratio / old_ratio - 1
    want = "stays" if abs(change) < 0.02 else "rises" if change > 0 else "falls"
    if answer == want:
        return True, (
            "Right. Now say why in one sentence: which part of the plan both programs hold "
            "whole, which part only vmap holds for every item, and how each grows with the width."
        )
    return False, (
        "Not that direction. Split each plan in two: what every program holds once, whatever "
        "the batch (the weights), and what vmap holds per item but lax.map only per chunk "
        "(the hidden activations). Which of the two grows faster when the width doubles?"
    )
