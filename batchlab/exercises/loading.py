"""Exercises for notebooks 10 (data loading) and 11 (scaling out)."""

from __future__ import annotations

from typing import Any

import numpy as np

from batchlab.exercises import DIRECTIONS, exercise
from batchlab.timeline.capture import trace

#: (batches, load seconds, compute seconds): load-bound, compute-bound, balanced, one batch
PIPELINES = [(10, 1.0, 1.0), (10, 2.0, 0.5), (10, 0.25, 3.0), (1, 1.0, 1.0), (12, 0.5, 0.5)]


@exercise("loading.pipeline_time", "pipeline_seconds(n, load, compute, prefetch), exactly.")
def pipeline_time(answer: Any) -> tuple[bool, str]:
    for n, load, compute in PIPELINES:
        case = f"load={load} and compute={compute}"
        serial = float(answer(n, load, compute, False))
        if not np.isclose(serial, n * (load + compute), rtol=1e-6):
            return False, (
                f"Serial, with {case}: nothing overlaps, so each batch waits for its load and "
                f"then its compute. You gave {serial:g}."
            )
        ahead = float(answer(n, load, compute, True))
        want = load + (n - 1) * max(load, compute) + compute
        if not np.isclose(ahead, want, rtol=1e-6):
            return False, (
                f"With prefetch, {case}: the two run at the same time (which sets the pace?), "
                f"but count the start-up, as the task says. You gave {ahead:g}."
            )
    return True, "Right for every case. Compare its speed-up for 12 batches with the loops'."


@exercise("loading.shuffled_slices", "shuffled_batches(n_items, batch_size, seed): slices.")
def shuffled_slices(answer: Any) -> tuple[bool, str]:
    for n, b in [(10, 3), (9, 3), (0, 4), (2, 5), (64, 4)]:
        got, case = [tuple(np.asarray(x).tolist()) for x in answer(n, b, 0)], f"For {n=}, {b=}"
        if sorted(i for x in got for i in x) != list(range(n)) or not all(got):
            return False, f"{case}: every item once, no empty batch; and the remainder n % b?"
        if set(got) != {tuple(range(i, min(i + b, n))) for i in range(0, n, b)}:
            return False, f"{case}: each batch is a slice, neighbours from a multiple of b."
    orders = [[int(np.asarray(x)[0]) for x in answer(64, 4, s)] for s in (0, 1, 0)]
    if orders[0] == sorted(orders[0]) or orders[0] == orders[1] or orders[0] != orders[2]:
        return False, "The batches' order must be random: new for a new seed, same for the same."
    return True, "Right for every case, including the remainder and an empty dataset."


@exercise("loading.sync_less", "Sync every 4th step: {'loop': ..., 'overlap': ...}.")
def sync_less(answer: Any, *, reference: Any) -> tuple[bool, str]:
    """Traces ``reference`` (reads every loss) and the learner's loop, alternately, twice each;
    the mean overlap shares apart by 0.1 (or twice a loop's own spread) decide the direction."""
    if not isinstance(answer, dict) or not callable(answer.get("loop")):
        return False, "Answer {'loop': the function itself (no parentheses), 'overlap': ...}."
    if answer.get("overlap") not in DIRECTIONS:
        return False, f"answer['overlap'] must be one of {DIRECTIONS}, got {answer['overlap']!r}."
    shares: dict[str, list[float]] = {"reference": [], "yours": []}
    losses: dict[str, list[float]] = {}
    for _ in range(2):  # alternately: a burst of load on the host touches both loops
        for name, loop in (("reference", reference), ("yours", answer["loop"])):
            with trace(label=name) as t:
                losses[name] = [float(x) for x in loop()]
            shares[name].append(t.result.overlap_share)  # a share in [0, 1]
    got, want = losses["yours"], losses["reference"]
    if len(got) != len(want) or not np.allclose(got, want, rtol=1e-4):
        return False, (
            f"Your loop returned {len(got)} losses; the loop that syncs every step returns "
            f"{len(want)}, and they should be the same numbers in the same order."
        )
    tolerance = max(0.1, 2 * max(max(v) - min(v) for v in shares.values()))
    if tolerance > 0.3:  # the same loop traced twice reads too differently to grade a direction
        return False, "This run cannot grade it: a loop's two traces differ by over 0.15. Retry."
    d = float(np.mean(shares["yours"]) - np.mean(shares["reference"]))
    if answer["overlap"] != ("grows" if d > tolerance else "shrinks" if d < -tolerance else "same"):
        return False, (
            "Not yet. Look at the two timelines: while the main thread waits for a loss "
            "(grey), can the next 'load batch' span run? And between two waits?"
        )
    return True, "Right, as traced now (your loop and the reference, twice each). Now say why."


@exercise("scaling.bigger_weights", "8x weights: dict(direction=..., ratio=...).")
def bigger_weights(
    answer: Any, *, batch_bytes: int, weight_bytes: int, n_devices: int, old_ratio: float
) -> tuple[bool, str]:
    if not isinstance(answer, dict) or answer.keys() != {"direction", "ratio"}:
        return False, "Answer with dict(direction='rises' | 'falls' | 'stays', ratio=<a number>)."
    # per device: the batch's share (1/n of it) plus a whole copy of the weights
    want = (batch_bytes + weight_bytes) / (batch_bytes / n_devices + weight_bytes)
    if answer["direction"] != ("falls" if want < old_ratio else "rises"):
        return False, (
            "Not that direction ('rises', 'falls' or 'stays'?). Per device, the arguments are the "
            "device's share of the batch plus what every device holds whole: which grew?"
        )
    if not abs(float(answer["ratio"]) / want - 1) < 0.15:
        return False, (
            f"The direction is right, but {answer['ratio']:.2f} is not what the compiled memory "
            "analysis gives: measure it, as the task says."
        )
    return True, "Right, direction and size. Now say why in one sentence."
