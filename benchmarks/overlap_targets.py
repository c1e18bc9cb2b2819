"""The overlap and prefetch timing targets that tests used to assert, side by side in one run.

A busy machine stretches compute, sleeps and thread wake-ups differently, so
these ratios are not test assertions (the tests check what causality fixes:
structure, counts, ordering; see tests/test_timeline.py and tests/test_prefetch.py).
Here they are measured on whatever machine runs this, each beside the others
from the same run, with the load average printed:

  T1. timeline overlap share, loader = compute time, 6 batches (profiler trace):
      a loop that blocks every step < 0.05; one that reads the loss (float) < 0.05;
      batchlab.prefetch > 0.3; a loop that does not sync (asynchronous dispatch) > 0.3.
  P1. compare_prefetch, a sleeping loader and a sleeping (Python) step, 20 ms each:
      prefetch vs the best serial loop > 1.2x and vs the syncing serial loop > 1.2x
      (ideal 2n/(n+1) = 1.7x; a Python step does not dispatch asynchronously).
  P2. compare_prefetch, a jitted step of ~1 GFLOP, loader = compute time: share of the
      hideable time hidden > 0.4 by the serial loop without sync and by prefetch when
      syncing every step (ideal 1.0).
P1 and P2 are decided on compare_prefetch's paired rounds (6; bl.measuring.interleaved): P1's
ratios by the bl.claims ratio rules, P2's shares per round (PrefetchComparison.hidden_share of
each round), each a median with its distribution-free interval; a target that the interval
straddles reads "inconclusive here", and only "does not hold" fails the run. T1's shares are
each read from one trace of one pipeline (no timing compared across candidates).

Run: .venv/bin/python benchmarks/overlap_targets.py   (writes benchmarks/results/overlap_targets.txt)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import Report, load, verdict
from prefetch_pipelines import PrefetchComparison, compare_prefetch

import batchlab as bl
from batchlab.claims.rules import median_interval


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def timeline_overlap(report: Report) -> bool:
    w = jax.random.normal(jax.random.key(0), (448, 448)) / 21
    heavy = jax.jit(lambda x: jnp.tanh(jnp.tanh(x @ w) @ w).sum())
    x = jnp.ones((448, 448))
    heavy(x).block_until_ready()
    t0 = time.perf_counter()
    for _ in range(5):
        heavy(x).block_until_ready()
    wait = (time.perf_counter() - t0) / 5

    def load(i):
        with jax.profiler.TraceAnnotation(f"load batch {i}"):
            time.sleep(wait)
            return np.ones((448, 448), np.float32)

    def run(mode: str, n: int = 6):
        with bl.trace(label=mode) as t:
            if mode == "prefetch":
                for b in bl.prefetch(load(i) for i in range(n)):
                    jax.block_until_ready(heavy(b))
            else:
                out = None
                for i in range(n):
                    out = heavy(load(i))
                    if mode == "blocking":
                        jax.block_until_ready(out)
                    elif mode == "float":
                        float(out)
                jax.block_until_ready(out)
        return t.result.overlap_share

    shares = {m: run(m) for m in ("blocking", "float", "prefetch", "no sync")}
    ok = (
        shares["blocking"] < 0.05
        and shares["float"] < 0.05
        and shares["prefetch"] > 0.3
        and shares["no sync"] > 0.3
    )
    report.line(f"T1. compute per batch {bl.format_seconds(wait)} (= the loader's wait)")
    report.line(
        "    overlap share: "
        + ", ".join(f"{k} {v:.2f}" for k, v in shares.items())
        + f"  (targets: blocking, float < 0.05; prefetch, no sync > 0.3): {_verdict(ok)}"
    )
    return ok


def sleeping_prefetch(report: Report) -> bool:
    def batches():
        for _ in range(6):
            time.sleep(0.02)
            yield np.ones(8)

    def step(b):
        time.sleep(0.02)
        return jnp.sum(b)

    c = compare_prefetch(batches, step, repeat=6)
    best_serial = min(("serial, sync every step", "serial, no sync"), key=lambda k: c.seconds[k])
    best_prefetch = min(
        ("prefetch, sync every step", "prefetch, no sync"), key=lambda k: c.seconds[k]
    )
    rules = {
        "prefetch vs best serial": bl.claims.ratio_above(best_serial, best_prefetch, 1.2),
        "when syncing": bl.claims.ratio_above(
            "serial, sync every step", "prefetch, sync every step", 1.2
        ),
    }
    report.line(f"P1. {c!r}")
    report.line(
        f"    best passes: prefetch vs best serial {c.speedup:.2f}x, when syncing "
        f"{c.speedup_when_syncing:.2f}x (ideal 1.7x); targets > 1.2x on the paired rounds:"
    )
    outcomes = []
    for name, rule in rules.items():
        outcomes.append(rule(c.samples).outcome)
        report.line(f"    {name}: {verdict(rule, c.samples)}")
    return "does not hold" not in outcomes


def hidden_per_round(c: PrefetchComparison, load_seconds: float) -> dict[str, list[float]]:
    """``{pipeline: [share hidden in round i]}``: hidden_share of each paired round."""
    rounds = zip(*(c.samples[k].values for k in c.seconds), strict=True)
    shares = [PrefetchComparison(c.batches, *r, c.size).hidden_share(load_seconds) for r in rounds]
    return {k: [s[k] for s in shares] for k in shares[0]}


def share_above(shares: list[float], threshold: float) -> str:
    """``holds: 0.62 (0.51..0.70, median of 6 paired rounds) > 0.4``, or inconclusive here."""
    interval = median_interval(shares)
    if interval is None:
        return f"inconclusive here: {len(shares)} paired rounds, 6 needed"
    est, lo, hi = interval
    outcome = (
        "holds" if lo > threshold else "does not hold" if hi <= threshold else "inconclusive here"
    )
    return f"{outcome}: {est:.2f} ({lo:.2f}..{hi:.2f}, median of {len(shares)} paired rounds) > {threshold}"


def jax_step_hidden(report: Report) -> bool:
    n = 640
    w = jnp.ones((n, n)) / n
    step = jax.jit(lambda b: jnp.tanh(jnp.tanh(b @ w) @ w).sum())
    step(jnp.ones((n, n))).block_until_ready()
    t0 = time.perf_counter()
    for _ in range(3):
        step(jnp.ones((n, n))).block_until_ready()
    wait = (time.perf_counter() - t0) / 3

    def batches():
        for _ in range(8):
            time.sleep(wait)
            yield np.ones((n, n), np.float32)

    c = compare_prefetch(batches, step, repeat=6)
    hidden = c.hidden_share(wait)
    per_round = hidden_per_round(c, wait)
    report.line(f"P2. compute per batch {bl.format_seconds(wait)}; {c!r}")
    report.line(
        "    hidden share (best passes): "
        + ", ".join(f"{k} {v:.2f}" for k, v in hidden.items())
        + "; ideal 1.0; targets > 0.4 on the paired rounds:"
    )
    outcomes = []
    for name in ("serial, no sync", "prefetch, sync every step"):
        outcomes.append(share_above(per_round[name], 0.4))
        report.line(f"    {name}: {outcomes[-1]}")
    return not any(o.startswith("does not hold") for o in outcomes)


def main() -> int:
    report = Report("overlap_targets")
    report.line(f"{load()} at start")
    results = [timeline_overlap(report), sleeping_prefetch(report), jax_step_hidden(report)]
    report.line(
        "6 interleaved rounds of one pass of each pipeline (P1, P2); one traced pass each (T1); "
        f"wall clock; {load()} at the end"
    )
    report.save()
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
