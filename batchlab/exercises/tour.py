"""Exercises for notebooks/00_tour.ipynb: predict memory from shapes, then change a dtype."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from batchlab.exercises import DIRECTIONS, direction, exercise
from batchlab.measuring.memory import memory_estimate


@exercise(
    "tour.predict_bytes",
    "Predict the argument and output bytes XLA plans for the batched scorer "
    "at batch size B, as a dict {'argument': ..., 'output': ...}.",
)
def predict_bytes(answer: dict, *, fn: Callable, args: tuple) -> tuple[bool, str]:
    if not isinstance(answer, dict) or not {"argument", "output"} <= set(answer):
        return False, "Answer with a dict with the keys 'argument' and 'output' (in bytes)."
    est = memory_estimate(fn, *args)
    wrong = []
    if int(answer["argument"]) != est.argument_bytes:
        wrong.append(
            "argument: count every input the function receives -- the batch x, the shared "
            "weights w and the vector v -- at 4 bytes per float32"
        )
    if int(answer["output"]) != est.output_bytes:
        wrong.append("output: one float32 score per item in the batch")
    if wrong:
        return False, "Not all figures match the compiled plan. " + "; ".join(wrong) + "."
    return True, "Both match XLA's compiled memory analysis."


@exercise(
    "tour.change_dtype",
    "Change the scorer's inputs from float32 to another dtype (e.g. bfloat16). For the "
    "argument and the temp bytes, say 'shrinks', 'same' or 'grows', as a dict "
    "{'argument': ..., 'temp': ...}, then explain why.",
)
def change_dtype(answer: Any, *, fn: Callable, args: tuple, dtype: Any) -> tuple[bool, str]:
    keys = ("argument", "temp")
    if not isinstance(answer, dict) or any(answer.get(k) not in DIRECTIONS for k in keys):
        return False, f"A dict {{'argument': ..., 'temp': ...}}: each must be one of {DIRECTIONS}."
    old = memory_estimate(fn, *args)
    new = memory_estimate(fn, *(jnp.asarray(a).astype(dtype) for a in args))
    name = np.dtype(dtype).name
    hints = []
    if answer["argument"] != direction(new.argument_bytes, old.argument_bytes):
        hints.append(f"argument: how many bytes does one {name} element take, against float32's 4?")
    if answer["temp"] != direction(new.temp_bytes, old.temp_bytes):
        hints.append(
            f"temp: run bl.buffer_assignment(fn, *args) with the {name} inputs and read the "
            f"dtype of every value in the temp allocation: is the arithmetic done in {name}?"
        )
    if hints:
        return False, "Not yet. " + " ".join(hints)
    return True, f"Right on both (measured on {jax.default_backend()}). Now say why."
