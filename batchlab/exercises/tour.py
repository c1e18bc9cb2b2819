"""Exercises for notebooks/00_tour.ipynb: predict memory from shapes, then change a dtype."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from batchlab.exercises import DIRECTIONS, direction, exercise
from batchlab.measuring.memory import memory_estimate


@exercise("tour.predict_bytes", "Bytes XLA plans for the scorer's arguments and output (a dict).")
def predict_bytes(answer: dict, *, fn: Callable, args: tuple) -> tuple[bool, str]:
    if not isinstance(answer, dict) or not {"argument", "output"} <= set(answer):
        return False, "Answer with a dict with the keys 'argument' and 'output' (in bytes)."
    est = memory_estimate(fn, *args)
    if (int(answer["argument"]), int(answer["output"])) == (est.argument_bytes, est.output_bytes):
        return True, "Both match XLA's compiled memory analysis."
    return False, (
        "Not all figures match the compiled plan: the arguments are every input (the batch x, the "
        "shared weights w, the vector v) at 4 bytes per float32; the output one score per item."
    )


@exercise("tour.change_dtype", "Another dtype: argument and temp bytes shrink, same or grow?")
def change_dtype(answer: Any, *, fn: Callable, args: tuple, dtype: Any) -> tuple[bool, str]:
    keys = ("argument", "temp")
    if not isinstance(answer, dict) or any(answer.get(k) not in DIRECTIONS for k in keys):
        return False, f"A dict {{'argument': ..., 'temp': ...}}: each must be one of {DIRECTIONS}."
    old = memory_estimate(fn, *args)
    new = memory_estimate(fn, *(jnp.asarray(a).astype(dtype) for a in args))
    name = np.dtype(dtype).name
    if answer["argument"] != direction(new.argument_bytes, old.argument_bytes):
        return False, f"Not yet. How many bytes does one {name} element take, against float32's 4?"
    if answer["temp"] != direction(new.temp_bytes, old.temp_bytes):
        return False, (
            f"Not yet. Run bl.buffer_assignment(fn, *args) with the {name} inputs and read the "
            f"dtype of every value in the temp allocation: is the arithmetic done in {name}?"
        )
    return True, f"Right on both (measured on {jax.default_backend()}). Now say why."
