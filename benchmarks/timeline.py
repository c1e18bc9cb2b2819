"""What a timeline costs: capture, parse and draw of a notebook-sized cell (~10k events).

The cell: an eager loop over N items (one jitted call per item, then one
stack), the kind of cell notebook 03 traces; N is chosen so that the trace
holds about 10k events. Reported separately, best of 3 rounds each:

  cell untraced : the cell's own wall time without the profiler
  cell traced   : the same cell inside the trace (what tracing adds to the code)
  capture       : start_trace + the cell + stop_trace (JAX writes the .json.gz)
  parse         : read the Perfetto JSON, build lanes, spans and the figures
  draw          : Timeline.plot() and render it to PNG (what a notebook displays)

Target: parse + draw < 1 s on CI's CPU for ~10k events.

Run: .venv/bin/python benchmarks/timeline.py   (writes benchmarks/results/timeline.txt)
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import Report

import batchlab as bl
from batchlab._util.plotting import figure_to_png
from batchlab.timeline.model import build_timeline

TARGET_SECONDS = 1.0
EVENTS = 10_000


def main() -> int:
    report = Report("timeline")
    f = jax.jit(lambda x: jnp.tanh(x).sum())

    def cell(xs):
        return jnp.stack([f(x) for x in xs])

    probe = jnp.ones((64, 32))
    cell(probe).block_until_ready()
    with bl.trace() as t:
        cell(probe).block_until_ready()
    per_item = t.result.events / 64
    n = int(EVENTS / per_item)
    xs = jnp.ones((n, 32))
    cell(xs).block_until_ready()
    rows = {"untraced": [], "traced": [], "capture": [], "parse": [], "draw": []}
    for _ in range(3):
        t0 = time.perf_counter()
        cell(xs).block_until_ready()
        rows["untraced"].append(time.perf_counter() - t0)
        with bl.trace(items=n) as t:
            t0 = time.perf_counter()
            cell(xs).block_until_ready()
            rows["traced"].append(time.perf_counter() - t0)
        rows["capture"].append(t.result.capture_seconds)
        t0 = time.perf_counter()
        r = build_timeline(t.result.trace_path, items=n)
        rows["parse"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        figure_to_png(r.plot())
        rows["draw"].append(time.perf_counter() - t0)
    best = {k: min(v) for k, v in rows.items()}
    fmt = bl.format_seconds
    report.line(
        f"cell: eager loop over {n} items of float32[32] (one jitted call each + one stack); "
        f"{os.cpu_count()} cores"
    )
    report.line(
        f"trace: {r.events} events, {len(r.spans)} spans, {len(r.lanes)} lanes, "
        f"{r.dispatches} dispatches ({r.dispatches_per_item:.3f} per item)"
    )
    report.line(
        f"cell untraced {fmt(best['untraced'])}, traced {fmt(best['traced'])} "
        f"(x{best['traced'] / best['untraced']:.2f} under the profiler)"
    )
    report.line(f"capture (start + cell + stop + write): {fmt(best['capture'])}")
    total = best["parse"] + best["draw"]
    report.line(
        f"parse {fmt(best['parse'])} + draw {fmt(best['draw'])} = {fmt(total)} "
        f"(target < {TARGET_SECONDS:g} s: {'PASS' if total < TARGET_SECONDS else 'FAIL'})"
    )
    report.line("best of 3 rounds each, wall clock (time.perf_counter)")
    report.save()
    return 0 if total < TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
