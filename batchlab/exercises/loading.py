"""Exercises for notebooks 10 (data loading) and 11 (scaling out)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import exercise


@exercise(
    "loading.pipeline_time",
    "Write pipeline_seconds(n, load, compute, prefetch) -> seconds for n batches, each taking "
    "`load` s to load and `compute` s to compute, run serially or with prefetch (ignore the "
    "first batch's start-up).",
)
def pipeline_time(answer: Any) -> tuple[bool, str]:
    cases = [(10, 1.0, 1.0), (10, 2.0, 0.5), (10, 0.25, 3.0), (1, 1.0, 1.0)]
    for n, load, compute in cases:
        serial = float(answer(n, load, compute, False))
        if not np.isclose(serial, n * (load + compute), rtol=1e-6):
            return False, (
                f"Serial, with load={load} and compute={compute}: nothing overlaps, so each "
                f"batch waits for its load and then its compute. You gave {serial:g}."
            )
        ahead = float(answer(n, load, compute, True))
        if not np.isclose(ahead, n * max(load, compute), rtol=1e-6):
            return False, (
                f"With prefetch, load={load}, compute={compute}: the two run at the same time, "
                f"so which one sets the pace? You gave {ahead:g}."
            )
    return (
        True,
        "Right: serial n(L + C), prefetch about n max(L, C), so at most 2x, reached when L = C.",
    )


@exercise(
    "loading.all_batches",
    "Write batches(n_items, batch_size) -> list of index arrays covering every item once, "
    "in order, none dropped.",
)
def all_batches(answer: Any) -> tuple[bool, str]:
    for n, b in [(10, 3), (9, 3), (0, 4), (2, 5)]:
        got = [np.asarray(x).tolist() for x in answer(n, b)]
        flat = [i for x in got for i in x]
        if flat != list(range(n)):
            missing = sorted(set(range(n)) - set(flat))
            return False, (
                f"For n_items={n}, batch_size={b} the batches hold {len(flat)} indices; "
                f"missing {missing[:5]}. What happens to the remainder n % batch_size?"
            )
        if any(len(x) > b or len(x) == 0 for x in got):
            return (
                False,
                f"For n_items={n}, batch_size={b} a batch is empty or larger than batch_size.",
            )
    return True, "Right: the last batch is smaller, and no item is silently dropped."


@exercise(
    "loading.padding_rows",
    "Write padding_rows(n_items, n_devices) -> how many padding rows shard_batch adds so that "
    "every device holds the same number of rows.",
)
def padding_rows(answer: Any) -> tuple[bool, str]:
    for n, d in [(13, 8), (16, 8), (1, 8), (0, 4), (7, 3), (9, 1)]:
        got = int(answer(n, d))
        want = -n % d
        if got != want:
            return False, (
                f"For {n} items on {d} devices you gave {got}: after padding, {n} + padding "
                f"must be a multiple of {d}, and padding must be as small as possible."
            )
    return True, "Right: (-n) % d rows, at most d - 1, and the mask marks them False."


DIRECTIONS = ("shrinks", "same", "grows")


def _direction(new: float, old: float, tolerance: float = 0.1) -> str:
    """``"grows"``, ``"same"`` or ``"shrinks"``: ``new`` against ``old``, within ``tolerance``.

    Example:
      >>> _direction(1.3, 1.9), _direction(1.95, 1.9), _direction(2.5, 1.9)
      ('shrinks', 'same', 'grows')
    """
    r = new / old
    return "grows" if r > 1 + tolerance else "shrinks" if r < 1 - tolerance else "same"


@exercise(
    "loading.slow_loader",
    "Make the loader three times slower than the compute (wait = 3 x compute per batch). "
    "Against the loop that syncs every step, does the speed-up of the loop that does not sync, "
    "and of prefetch (syncing every step), grow, stay the same or shrink? Answer "
    "{'no_sync': ..., 'prefetch': ...} with 'grows', 'same' or 'shrinks', then say why.",
)
def slow_loader(answer: Any, *, baseline: Any, measure_slow: Any) -> tuple[bool, str]:
    """Measures the slow-loader setting (``measure_slow()``) against ``baseline`` (L = C).

    Example:
      >>> from batchlab.prefetch_compare import PrefetchComparison
      >>> at_c = PrefetchComparison(12, 2.0, 1.1, 1.1, 1.1, 2)      # L = C
      >>> at_3c = PrefetchComparison(12, 4.0, 3.05, 3.05, 3.0, 2)   # L = 3C
      >>> slow_loader({"no_sync": "shrinks", "prefetch": "shrinks"},
      ...             baseline=at_c, measure_slow=lambda: at_3c)[0]
      True
      >>> slow_loader({"no_sync": "grows", "prefetch": "shrinks"},
      ...             baseline=at_c, measure_slow=lambda: at_3c)[1][:18]
      'Not yet (no_sync).'
    """
    if not isinstance(answer, dict) or not {"no_sync", "prefetch"} <= set(answer):
        return False, "Answer with a dict {'no_sync': ..., 'prefetch': ...}."
    bad = [k for k in ("no_sync", "prefetch") if answer[k] not in DIRECTIONS]
    if bad:
        return False, f"Each value must be one of {DIRECTIONS}; check {bad}."
    slow = measure_slow()
    truth = {
        "no_sync": _direction(slow.async_speedup, baseline.async_speedup),
        "prefetch": _direction(slow.speedup_when_syncing, baseline.speedup_when_syncing),
    }
    wrong = [k for k in truth if answer[k] != truth[k]]
    if wrong:
        return False, (
            f"Not yet ({', '.join(wrong)}). Write the time of n batches for each loop with "
            "L = 3C: the loop that waits pays n(L + C), the overlapped loops about n max(L, C). "
            "Which of L and C sets the pace now, and how much of it can overlap hide?"
        )
    # the praise names no direction and no number: stored outputs must not give it away
    return True, (
        "Right, as measured in this run. Now say why from n(L + C) against n max(L, C): "
        "overlap can hide at most the shorter of the two."
    )
