"""The kit's one sampler: round-robin, so a load burst slows a whole round and its ratio cancels
it."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping
from typing import Any

import jax

from batchlab._util.checks import check_int, check_positive_float, check_positive_int
from batchlab.measuring.samples import Samples
from batchlab.measuring.timing import autorange, sample

SOURCE = "interleaved wall clock around jax.block_until_ready, paired by round"
_pairing = itertools.count()


def interleaved(
    candidates: Mapping[str, Callable[[], Any]],
    *,
    rounds: int = 15,
    passes: int = 3,
    max_seconds: float = 5.0,
    min_sample_time: float = 0.002,
    source: str = SOURCE,
) -> dict[str, Samples]:
    """Times zero-argument callables round-robin: ``{label: Samples}`` paired by round.

    A round keeps each candidate's fastest of ``passes`` samples of ``min_sample_time``;
    ``rounds`` rounds (15: a 96% interval) or fewer once ``max_seconds`` is spent.
    """
    if not isinstance(candidates, Mapping) or not all(
        isinstance(k, str) and callable(v) for k, v in candidates.items()
    ):
        raise TypeError(
            "`candidates` must be a dict of label -> zero-argument callable, e.g. "
            "{'vmap': lambda: f_vmap(xs), 'loop': lambda: f_loop(xs)}."
        )
    if len(candidates) < 2:
        raise ValueError(
            f"`candidates` has {len(candidates)} entry; interleaving compares two or more "
            "(time one with bl.measure)."
        )
    rounds = check_int(rounds, "rounds", 2)  # a spread needs repeats
    passes = check_positive_int(passes, "passes")
    check_positive_float(max_seconds, "max_seconds")
    check_positive_float(min_sample_time, "min_sample_time")
    labels = list(candidates)
    for label in labels:
        jax.block_until_ready(candidates[label]())
    number = {label: autorange(candidates[label], min_sample_time) for label in labels}
    times: dict[str, list[float]] = {label: [] for label in labels}
    start, turn = time.perf_counter(), 0
    for r in range(rounds):
        best = dict.fromkeys(labels, float("inf"))
        for _ in range(passes):
            for label in labels[turn:] + labels[:turn]:
                best[label] = min(best[label], sample(candidates[label], number[label]))
            turn = (turn + 1) % len(labels)
        for label in labels:
            times[label].append(best[label])
        if r >= 1 and time.perf_counter() - start > max_seconds:
            break
    token = f"interleaved-{next(_pairing)}"
    return {label: Samples(label, times[label], source, paired=token) for label in labels}
