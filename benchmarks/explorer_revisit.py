"""How fast does an explorer answer when the learner returns to a setting?

Issue target: a revisit of an already-compiled setting redraws in under
200 ms plus the run time. Measured here, in one run, on the tour's
BatchSizeExplorer with its ipywidgets front end built (so the PNG is really
rendered into the Image widget):

  first visit  : measure (compile + timing) + redraw
  revisit      : cache hit for the measurement; the plot is redrawn because
                 the ring marking the current setting moves
  same setting : cache hit for both (nothing to redraw)

Run: .venv/bin/python benchmarks/explorer_revisit.py
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
from batchlab.widgets import BatchSizeExplorer


def main() -> None:
    report = Report("explorer_revisit")
    sizes = bl.sizes("tour", profile="cpu")
    F = sizes.features
    w = jnp.ones((F, F)) / F
    scores = jax.vmap(lambda x, w: jnp.tanh(x @ w).sum(), in_axes=(0, None))

    def make(b):
        return jnp.ones((b, F)), w

    stops = list(sizes.batch_sizes)
    ex = BatchSizeExplorer(scores, make, stops, max_time=sizes.max_time)
    _ = ex.widget  # build the front end: redraws render PNGs into the Image widget
    first = []
    for b in stops[1:]:
        t0 = time.perf_counter()
        ex.update(batch_size=b)
        first.append(time.perf_counter() - t0)
    revisit, same = [], []
    for _round in range(3):
        for b in stops:
            t0 = time.perf_counter()
            ex.update(batch_size=b)
            revisit.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            ex.update(batch_size=b)
            same.append(time.perf_counter() - t0)
    run = statistics.median(m.median for m in ex.measured.values())
    redrawn = revisit[: len(stops)]  # round 1: every plot must be redrawn (the ring moved)
    cached = revisit[len(stops) :]  # rounds 2-3: the rendered plot is cached as well
    med_revisit = statistics.median(redrawn)
    fmt = bl.format_seconds
    report.line(f"tour explorer, {len(stops)} stops {stops}, features {F}")
    report.line(f"first visit (measure + redraw): median {fmt(statistics.median(first))}")
    report.line(
        f"revisit, plot redrawn (cached measurement): median {fmt(med_revisit)}, max {fmt(max(redrawn))}"
    )
    report.line(f"revisit, plot cached too: median {fmt(statistics.median(cached))}")
    report.line(f"same setting again (nothing to redraw): median {fmt(statistics.median(same))}")
    report.line(f"run time of one batch (median over stops): {fmt(run)}")
    verdict = "PASS" if med_revisit < 0.2 + run else "FAIL"
    report.line(f"target: revisit < 200 ms + run time = {fmt(0.2 + run)}: {verdict}")
    report.line("source: wall clock (time.perf_counter) around explorer.update()")
    report.save()


if __name__ == "__main__":
    main()
