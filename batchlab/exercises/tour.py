"""Exercises for notebooks/00_tour.ipynb: predict memory from shapes."""

from __future__ import annotations

from collections.abc import Callable

from . import exercise


@exercise(
    "tour.predict_bytes",
    "Predict the argument, output and temp bytes XLA plans for the batched scorer "
    "at batch size B, as a dict {'argument': ..., 'output': ..., 'temp': ...}.",
)
def predict_bytes(answer: dict, *, fn: Callable, args: tuple) -> tuple[bool, str]:
    from ..memory import memory_estimate

    if not isinstance(answer, dict) or not {"argument", "output", "temp"} <= set(answer):
        return (
            False,
            "Answer with a dict that has the keys 'argument', 'output' and 'temp' (numbers of bytes).",
        )
    est = memory_estimate(fn, *args)
    wrong = []
    if int(answer["argument"]) != est.argument_bytes:
        wrong.append(
            "argument: count every input the function receives -- the batch x, the shared "
            "weights w and the vector v -- at 4 bytes per float32"
        )
    if int(answer["output"]) != est.output_bytes:
        wrong.append("output: one float32 score per item in the batch")
    if int(answer["temp"]) != est.temp_bytes:
        off = int(answer["temp"]) / est.temp_bytes if est.temp_bytes else float("inf")
        hint = "too high" if off > 1 else "too low"
        wrong.append(
            f"temp ({hint}): which intermediate array of the item function exists for every item "
            "at once before it is reduced to a score?"
        )
    if wrong:
        return False, "Not all figures match the compiled plan. " + "; ".join(wrong) + "."
    return (
        True,
        "All three match XLA's compiled memory analysis: memory follows from shapes and dtypes.",
    )
