"""Does `measure` time what a careful hand-written loop times, at little cost?

Side by side in one run, on the same jitted ~1 ms function, paired by round (15 rounds,
each runs both timers, the order alternating, so a load burst lands on both alike):
  hand loop : time.perf_counter() around f(x) + block_until_ready, per call (median of 300)
  measure   : batchlab.measure(f, x).median
Targets: the median of the per-round ratios measure / hand loop lies in 0.90 .. 1.10, decided
on its distribution-free interval (bl.claims rules: *inconclusive here* when the interval
straddles a bound); measure's own overhead per timed call (the Python around each call) is
under 5% of a 1 ms call.

Run: .venv/bin/python benchmarks/measure_overhead.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import Report, load, ratio

import batchlab as bl


def make_1ms_function():
    """A matmul chain sized so one call takes about 1 ms on this machine."""
    n = 64
    while True:
        x = jnp.ones((n, n), jnp.float32)
        f = jax.jit(lambda a: jnp.tanh(a @ a) @ a)
        jax.block_until_ready(f(x))
        t0 = time.perf_counter()
        for _ in range(20):
            jax.block_until_ready(f(x))
        per_call = (time.perf_counter() - t0) / 20
        if per_call >= 1e-3 or n >= 2048:
            return f, x, per_call
        n = int(n * 1.25)


def hand_loop(f, x, calls: int) -> list[float]:
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        jax.block_until_ready(f(x))
        times.append(time.perf_counter() - t0)
    return times


def empty_loop_overhead(calls: int, x) -> float:
    """What measure's timing loop costs without any work: block_until_ready on a ready array."""
    t0 = time.perf_counter()
    for _ in range(calls):
        jax.block_until_ready(x)
    return (time.perf_counter() - t0) / calls


def main() -> None:
    report = Report("measure_overhead")
    report.line(load())
    f, x, per_call = make_1ms_function()
    report.line(f"function: tanh(a @ a) @ a on {x.shape}, ~{bl.format_seconds(per_call)} per call")
    timers = {
        "hand loop": lambda: statistics.median(hand_loop(f, x, 300)),
        "measure": lambda: bl.measure(f, x, max_time=0.5).median,
    }
    medians = {k: [] for k in timers}
    for r in range(15):  # paired rounds: both timers in each, the order alternating
        for k in list(timers)[:: 1 if r % 2 else -1]:
            medians[k].append(timers[k]())
    source = (
        "median per call, each timer's own; one round runs both (benchmarks/measure_overhead.py)"
    )
    t = {k: bl.claims.Samples(k, v, source, paired="hand-vs-measure") for k, v in medians.items()}
    rule = bl.claims.all_of(
        bl.claims.ratio_above("measure", "hand loop", 0.9),
        bl.claims.ratio_below("measure", "hand loop", 1.1),
    )
    overhead = empty_loop_overhead(10_000, f(x))
    report.line(
        f"hand loop median {bl.format_seconds(statistics.median(medians['hand loop']))}, "
        f"measure median {bl.format_seconds(statistics.median(medians['measure']))} (medians of 15 rounds)"
    )
    report.line(
        f"measure / hand loop: {ratio(t, 'measure', 'hand loop')}; target 0.90 .. 1.10: "
        f"{rule(t).outcome}"
    )
    report.line(
        f"measure's per-call overhead (block_until_ready + loop, no work): "
        f"{bl.format_seconds(overhead)} = {overhead / per_call:.2%} of the call "
        f"(target < 5%: {'PASS' if overhead / per_call < 0.05 else 'FAIL'})"
    )
    report.line(f"{load()} at the end")
    report.save()


if __name__ == "__main__":
    main()
