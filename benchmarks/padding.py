"""Padding and bucketing: vectorized numpy against a plain Python reference, and the padding targets.

Side by side in one run:
  pad        : batchlab.pad on 100k sequences (list of arrays, and Ragged) vs a Python loop
               that writes each item into a preallocated array (the usual hand-written pad)
  bucketize  : batchlab.bucketize(n_buckets=8) vs a Python loop that assigns each item to its
               bucket and pads per bucket the same way
  targets    : on the shipped data, optimal 8 buckets vs the ragged minimum (target <= 1.15x),
               pad-to-max for comparison, compilations == non-empty buckets (count_compiles)

Run: .venv/bin/python benchmarks/padding.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import Report

import batchlab as bl

N = 100_000


def best_of(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def python_pad(seqs):
    longest = max(len(s) for s in seqs)
    values = np.zeros((len(seqs), longest), dtype=seqs[0].dtype)
    mask = np.zeros((len(seqs), longest), dtype=bool)
    for i, s in enumerate(seqs):
        values[i, : len(s)] = s
        mask[i, : len(s)] = True
    return values, mask


def python_bucketize(seqs, boundaries):
    groups = {}
    for i, s in enumerate(seqs):
        for b in boundaries:
            if len(s) <= b:
                groups.setdefault(b, []).append(i)
                break
    out = {}
    for b, idx in groups.items():
        values = np.zeros((len(idx), b), dtype=seqs[0].dtype)
        mask = np.zeros((len(idx), b), dtype=bool)
        for row, i in enumerate(idx):
            values[row, : len(seqs[i])] = seqs[i]
            mask[row, : len(seqs[i])] = True
        out[b] = (values, mask, idx)
    return out


def main() -> None:
    rep = Report("padding")
    lengths = bl.lognormal_lengths(N, median=32, sigma=0.8, max_length=512, seed=0)
    ragged = bl.Ragged.from_lengths(np.arange(lengths.sum(), dtype=np.int32) % 30000, lengths)
    seqs = [ragged.item(i) for i in range(N)]
    rep.line(
        f"{N:,} sequences, log-normal lengths (median 32, max {lengths.max()}), {lengths.sum():,} int32 tokens"
    )

    ref = best_of(lambda: python_pad(seqs))
    t_list = best_of(lambda: bl.pad(seqs))
    t_ragged = best_of(lambda: bl.pad(ragged))
    v, m = python_pad(seqs)
    p = bl.pad(ragged)
    assert np.array_equal(v, p.values) and np.array_equal(m, p.mask)
    rep.line(
        f"pad       python loop {ref * 1e3:8.1f} ms | bl.pad(list) {t_list * 1e3:7.1f} ms "
        f"({ref / t_list:5.1f}x faster) | bl.pad(Ragged) {t_ragged * 1e3:7.1f} ms ({ref / t_ragged:5.1f}x faster)"
    )

    boundaries = bl.optimal_boundaries(lengths, 8)
    ref = best_of(lambda: python_bucketize(seqs, boundaries.tolist()))
    t_list = best_of(lambda: bl.bucketize(seqs, boundaries=boundaries))
    t_ragged = best_of(lambda: bl.bucketize(ragged, boundaries=boundaries))
    t_opt = best_of(lambda: bl.optimal_boundaries(lengths, 8))
    rep.line(
        f"bucketize python loop {ref * 1e3:8.1f} ms | bl.bucketize(list) {t_list * 1e3:7.1f} ms "
        f"({ref / t_list:5.1f}x faster) | (Ragged) {t_ragged * 1e3:7.1f} ms ({ref / t_ragged:5.1f}x faster)"
    )
    rep.line(
        f"optimal_boundaries(8) on {len(np.unique(lengths))} distinct lengths: {t_opt * 1e3:.1f} ms"
    )

    data = bl.load_stdlib_functions()
    r = bl.padding_report(data.lengths, n_buckets=8)
    rep.line(
        f"shipped data ({len(data):,} functions, ragged minimum {data.lengths.sum():,} tokens):"
    )
    for row in r.rows:
        rep.line(
            f"  {row.strategy:9s} {row.padded_elements:>11,} padded = {row.ratio:5.2f}x ragged, {row.shapes} shapes"
        )
    target = r["optimal"].ratio <= 1.15
    k16 = bl.padding_report(data.lengths, "optimal", n_buckets=16)["optimal"]
    rep.line(
        f"  target optimal-8 <= 1.15x: {'MET' if target else 'NOT MET'} ({r['optimal'].ratio:.2f}x); "
        f"16 buckets give {k16.ratio:.2f}x"
    )

    buckets = bl.bucketize(data.ragged, n_buckets=8)
    f = jax.jit(lambda v, m: bl.masked_sum(v > 0, m, axis=1))
    with bl.count_compiles(match="lambda") as c:
        out = buckets.map(lambda p: f(p.values, p.mask))
    assert np.array_equal(out, data.lengths)
    rep.line(
        f"  compilations {c.count} == non-empty buckets {len(buckets)}: {c.count == len(buckets)}"
    )
    rep.line(
        f"written to {rep.save().relative_to(Path.cwd()) if rep.save().is_relative_to(Path.cwd()) else rep.save()}"
    )


if __name__ == "__main__":
    main()
