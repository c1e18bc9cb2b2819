"""What a timeline costs: capture, parse and draw of a notebook-sized cell (~10k events).

The cell: an eager loop over N items (one jitted call per item, then one
stack), the kind of cell notebook 03 traces; N is chosen so that the trace
holds about 10k events. Reported separately:

  cell untraced : the cell's own wall time without the profiler, and
  captured      : start_trace + the cell + stop_trace (JAX writes the .json.gz),
                  the two interleaved (bl.measuring.interleaved, paired by round)
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
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import Report, timed

import batchlab as bl
from batchlab._util.plotting import figure_to_png
from batchlab.timeline.model import build_timeline
from batchlab.timeline.parse import read_events

TARGET_SECONDS = 1.0
EVENTS = 10_000


def parse_and_draw(path, n: int) -> tuple:
    """The two phases of one display of a trace, best of 3 each: (timeline, parse s, draw s)."""
    parse, draw = float("inf"), float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        r = build_timeline(path, items=n)
        parse = min(parse, time.perf_counter() - t0)
        t0 = time.perf_counter()
        figure_to_png(r.plot())
        draw = min(draw, time.perf_counter() - t0)
    return r, parse, draw


def main() -> int:
    report = Report("timeline")
    f = jax.jit(lambda x: jnp.tanh(x).sum())

    def cell(xs):
        return jnp.stack([f(x) for x in xs])

    probe = jnp.ones((64, 32))
    cell(probe).block_until_ready()
    with bl.trace() as t:
        cell(probe).block_until_ready()
    per_item = len(read_events(t.result.trace_path)) / 64
    n = int(EVENTS / per_item)
    xs = jnp.ones((n, 32))
    cell(xs).block_until_ready()
    traces, captures = [], []

    def captured() -> None:
        t0 = time.perf_counter()
        with bl.trace(items=n) as tr:
            cell(xs).block_until_ready()
        captures.append(time.perf_counter() - t0)  # start + cell + stop + write + parse
        traces.append(tr.result)

    t = timed(
        {"untraced": lambda: cell(xs).block_until_ready(), "captured": captured}, one_call=True
    )
    ratios = [c / u for c, u in zip(t["captured"].values, t["untraced"].values, strict=True)]
    capture = min(captures)
    r, parse, draw = parse_and_draw(traces[-1].trace_path, n)
    fmt = bl.format_seconds
    report.line(
        f"cell: eager loop over {n} items of float32[32] (one jitted call each + one stack); "
        f"{os.cpu_count()} cores"
    )
    report.line(
        f"trace: {len(read_events(r.trace_path))} events, {len(r.spans)} spans, {len(r.lanes)} lanes, "
        f"{r.dispatches} dispatches ({r.dispatches_per_item:.3f} per item)"
    )
    report.line(
        f"cell untraced {fmt(t['untraced'].fastest)}, inside a capture {fmt(t['captured'].fastest)} "
        f"(x{float(np.median(ratios)):.2f}, median of {len(ratios)} paired rounds, "
        "bl.measuring.interleaved)"
    )
    report.line(
        f"capture (start + cell + stop + write + parse), perf_counter around it: {fmt(capture)}"
    )
    total = parse + draw
    report.line(
        f"parse {fmt(parse)} + draw {fmt(draw)} = {fmt(total)} "
        f"(target < {TARGET_SECONDS:g} s: {'PASS' if total < TARGET_SECONDS else 'FAIL'}; best of 3)"
    )
    report.save()
    return 0 if total < TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
