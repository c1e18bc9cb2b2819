"""Exercises for notebook 11 (scaling out across devices and processes)."""

from __future__ import annotations

from typing import Any

from batchlab.exercises import exercise

_DIRECTIONS = ("rises", "falls", "stays")


@exercise(
    "scaling.bigger_weights",
    "Make the replicated weights 8x larger (hidden 256 -> 2048) and measure again on 1 and 8 "
    "devices. Does the argument-memory ratio (1 device / 8 devices) rise, fall or stay, and "
    "what is it now? Answer dict(direction=..., ratio=...).",
)
def bigger_weights(
    answer: Any, *, batch_bytes: int, weight_bytes: int, n_devices: int, old_ratio: float
) -> tuple[bool, str]:
    if not isinstance(answer, dict) or set(answer) != {"direction", "ratio"}:
        return False, "Answer with dict(direction='rises' | 'falls' | 'stays', ratio=<a number>)."
    direction, ratio = answer["direction"], answer["ratio"]
    if direction not in _DIRECTIONS:
        return False, f"`direction` must be one of {_DIRECTIONS}, got {direction!r}."
    # per device: the batch's share (1/n of it) plus a whole copy of the weights
    want = (batch_bytes + weight_bytes) / (batch_bytes / n_devices + weight_bytes)
    want_direction = "falls" if want < old_ratio else "rises"
    if direction != want_direction:
        return False, (
            "Not that direction. Per device, the arguments are the device's share of the batch "
            "plus what every device holds whole. Which of the two did you make larger?"
        )
    try:
        ratio = float(ratio)
    except (TypeError, ValueError):
        return False, f"`ratio` must be a number (your measured ratio), got {ratio!r}."
    if not abs(ratio / want - 1) < 0.15:
        return False, (
            f"The direction is right, but {ratio:.2f} is not what the compiled memory analysis "
            "gives. Measure it: argument bytes on 1 device divided by those on 8, with the new "
            "weights replicated."
        )
    return True, (
        "Right, direction and size. Now say why in one sentence, in terms of what the mesh "
        "splits and what it copies."
    )
