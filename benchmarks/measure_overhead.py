"""Does `measure` time what a careful hand-written loop times, at little cost?

Side by side in one run, on the same jitted ~1 ms function:
  hand loop : time.perf_counter() around f(x) + block_until_ready, per call
  measure   : batchlab.measure(f, x)
Targets: medians agree within 10%; measure's own overhead per timed call
(the Python around each call) is under 5% of a 1 ms call.

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
from _report import Report

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
    f, x, per_call = make_1ms_function()
    report.line(f"function: tanh(a @ a) @ a on {x.shape}, ~{bl.format_seconds(per_call)} per call")
    rounds = []
    for r in range(3):  # interleave to share the machine's noise fairly
        hand = statistics.median(hand_loop(f, x, 300))
        m = bl.measure(f, x, max_time=1.0)
        rounds.append((hand, m.median))
        report.line(
            f"round {r}: hand loop median {bl.format_seconds(hand)}, "
            f"measure median {bl.format_seconds(m.median)} ({m.runs} samples x {m.number})"
        )
    hand = statistics.median(h for h, _ in rounds)
    meas = statistics.median(mm for _, mm in rounds)
    ratio = meas / hand
    overhead = empty_loop_overhead(10_000, f(x))
    report.line(
        f"median ratio measure / hand loop: {ratio:.3f}  (target 0.90 .. 1.10: "
        f"{'PASS' if 0.9 <= ratio <= 1.1 else 'FAIL'})"
    )
    report.line(
        f"measure's per-call overhead (block_until_ready + loop, no work): "
        f"{bl.format_seconds(overhead)} = {overhead / per_call:.2%} of the call "
        f"(target < 5%: {'PASS' if overhead / per_call < 0.05 else 'FAIL'})"
    )
    report.save()


if __name__ == "__main__":
    main()
