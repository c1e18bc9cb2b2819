"""Padding and bucketing: vectorized numpy against a plain Python reference, and the padding targets.

Side by side in one run, interleaved (bl.measuring.interleaved, paired by round; a ratio is the
median of the per-round ratios with its distribution-free interval):
  pad        : batchlab.pad on 100k sequences (list of arrays, and Ragged) vs a Python loop
               that writes each item into a preallocated array (the usual hand-written pad)
  bucketize  : batchlab.bucketize(n_buckets=8) vs a Python loop that assigns each item to its
               bucket and pads per bucket the same way
  shipped    : on the shipped data, padded elements per strategy (counted) and compilations ==
               non-empty buckets (count_compiles)
  layouts    : mean pooling of 256 functions (notebook 04's subset): pad-to-max + mask, 8 optimal
               buckets, packed (segment_sum); flops (cost_analysis) and wall-clock medians, all
               exact against the per-item reference. Target: packed >= 3x faster than pad-to-max.
  epoch      : 2048 functions (notebook 05's subset), 8 boundaries: per-batch bucketize of 4 random
               512-item batches vs fixed-shape bucket_batches (tokens_per_batch=8192). Target: the
               fixed-shape epoch compiles at most once per bucket; per-batch buckets compile more.

Run: .venv/bin/python benchmarks/padding.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import Report, load, ratio, timed, verdict

import batchlab as bl

N = 100_000


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
    draws = np.random.default_rng(0).lognormal(np.log(32), 0.8, N)  # median 32, a long tail
    lengths = np.maximum(np.rint(np.minimum(draws, 512)), 1).astype(np.int64)
    ragged = bl.Ragged.from_lengths(np.arange(lengths.sum(), dtype=np.int32) % 30000, lengths)
    seqs = [ragged.item(i) for i in range(N)]
    rep.line(f"{load()} at start")
    rep.line(
        f"{N:,} sequences, log-normal lengths (median 32, max {lengths.max()}), {lengths.sum():,} int32 tokens"
    )

    t = timed(
        {
            "python": lambda: python_pad(seqs),
            "list": lambda: bl.pad(seqs),
            "ragged": lambda: bl.pad(ragged),
        },
        one_call=True,
    )
    ref, t_list, t_ragged = (t[k].fastest for k in ("python", "list", "ragged"))
    v, m = python_pad(seqs)
    p = bl.pad(ragged)
    assert np.array_equal(v, p.values) and np.array_equal(m, p.mask)
    rep.line(
        f"pad       python loop {ref * 1e3:8.1f} ms | bl.pad(list) {t_list * 1e3:7.1f} ms | "
        f"bl.pad(Ragged) {t_ragged * 1e3:7.1f} ms (fastest of 6 interleaved rounds)"
    )
    rep.line(
        f"  python / bl.pad(list) {ratio(t, 'python', 'list')}; "
        f"python / bl.pad(Ragged) {ratio(t, 'python', 'ragged')}"
    )

    boundaries = bl.optimal_boundaries(lengths, 8)
    t = timed(
        {
            "python": lambda: python_bucketize(seqs, boundaries.tolist()),
            "list": lambda: bl.bucketize(seqs, boundaries=boundaries),
            "ragged": lambda: bl.bucketize(ragged, boundaries=boundaries),
            "optimal": lambda: bl.optimal_boundaries(lengths, 8),
        },
        one_call=True,
    )
    ref, t_list, t_ragged, t_opt = (t[k].fastest for k in ("python", "list", "ragged", "optimal"))
    rep.line(
        f"bucketize python loop {ref * 1e3:8.1f} ms | bl.bucketize(list) {t_list * 1e3:7.1f} ms | "
        f"(Ragged) {t_ragged * 1e3:7.1f} ms (fastest of 6 interleaved rounds)"
    )
    rep.line(
        f"  python / bl.bucketize(list) {ratio(t, 'python', 'list')}; "
        f"python / bl.bucketize(Ragged) {ratio(t, 'python', 'ragged')}"
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
            f"  {row.rule:9s} {row.padded_elements:>11,} padded = {row.ratio:5.2f}x ragged, {row.shapes} shapes"
        )

    buckets = bl.bucketize(data.ragged, n_buckets=8)
    f = jax.jit(lambda v, m: bl.masked_sum(v > 0, m, axis=1))
    with bl.count_compiles(match="lambda") as c:
        out = buckets.map(lambda p: f(p.values, p.mask))
    assert np.array_equal(out, data.lengths)
    rep.line(
        f"  compilations {c.count} == non-empty buckets {len(buckets)}: {c.count == len(buckets)}"
    )
    layouts(rep, data)
    epoch(rep, data)
    rep.line(f"{load()} at the end")
    rep.line(
        f"written to {rep.save().relative_to(Path.cwd()) if rep.save().is_relative_to(Path.cwd()) else rep.save()}"
    )


def layouts(rep: Report, data) -> None:
    rng = np.random.default_rng(0)
    pick = np.sort(rng.choice(len(data), 256, replace=False))
    subset = bl.Ragged.from_lengths(
        np.concatenate([data.ragged.item(i) for i in pick]), data.lengths[pick]
    )
    table = jax.random.normal(jax.random.key(0), (len(data.vocab), 16))
    reference = bl.ragged.mean_pool_reference(subset, table)
    padded, packed = bl.pad(subset), bl.pack(subset)
    buckets = bl.bucketize(subset, n_buckets=8)
    arrays = [(b.padded.values, b.padded.mask) for b in buckets]

    def bucket_pool(arrays, t):
        return [bl.ragged.mean_pool(v, m, t) for v, m in arrays]

    runs = {
        "pad to max": (
            jax.jit(bl.ragged.mean_pool),
            (padded.values, padded.mask, table),
            np.asarray,
        ),
        "8 buckets": (jax.jit(bucket_pool), (arrays, table), buckets.restore),
        "packed": (jax.jit(bl.ragged.packed_mean_pool), (packed, table), np.asarray),
    }
    rep.line(
        f"layouts: mean pooling of {len(subset)} functions ({subset.lengths.sum():,} tokens, 16 features)"
    )
    flops = {}
    for name, (fn, args, finish) in runs.items():
        cost = fn.lower(*args).compile().cost_analysis()
        flops[name] = (cost[0] if isinstance(cost, list) else cost).get("flops", float("nan"))
        assert np.allclose(finish(fn(*args)), reference, rtol=1e-4, atol=1e-5), name
    t = timed(
        {name: (lambda fn=fn, args=args: fn(*args)) for name, (fn, args, _) in runs.items()},
        rounds=15,
    )
    for name, s in t.items():
        med = float(np.median(s.values))
        rep.line(
            f"  {name:10s} {flops[name] / 1e6:6.2f} M flops  {med * 1e3:7.3f} ms "
            f"({s.fastest * 1e3:.3f}..{s.slowest * 1e3:.3f})  exact"
        )
    rep.line(
        f"  pad to max / packed {ratio(t, 'pad to max', 'packed')}; "
        f"pad to max / 8 buckets {ratio(t, 'pad to max', '8 buckets')}"
    )
    rep.line(
        "  target packed >= 3x faster than pad-to-max (pad to max / packed > 3x): "
        + verdict(bl.claims.ratio_above("pad to max", "packed", 3.0), t)
    )


def epoch(rep: Report, data) -> None:
    lengths = data.lengths
    b8 = bl.optimal_boundaries(lengths, 8)
    pick = np.sort(np.random.default_rng(1).choice(len(data), 2048, replace=False))
    subset = bl.Ragged.from_lengths(
        np.concatenate([data.ragged.item(i) for i in pick]), lengths[pick]
    )
    table = jax.random.normal(jax.random.key(0), (len(data.vocab), 16))
    order = np.random.default_rng(2).permutation(len(subset))

    def fresh():
        def pool(v, m, t):
            return bl.ragged.mean_pool(v, m, t)

        return jax.jit(pool)

    naive_fn, fixed_fn = fresh(), fresh()
    with bl.count_compiles(match="pool") as naive:
        for k in range(0, len(order), 512):
            for bk in bl.bucketize([subset.item(i) for i in order[k : k + 512]], boundaries=b8):
                naive_fn(bk.padded.values, bk.padded.mask, table)
    batches = bl.bucket_batches(subset, boundaries=b8, tokens_per_batch=8192, seed=0)
    with bl.count_compiles(match="pool") as fixed:
        for bk in batches:
            fixed_fn(bk.padded.values, bk.padded.mask, table)
    ok = fixed.count <= len(b8) < naive.count and len(batches) >= 10
    rep.line(
        f"epoch of {len(subset)} functions, 8 boundaries: per-batch bucketize (4 x 512 items) "
        f"{naive.count} compilations ({naive.seconds:.2f} s); bucket_batches {len(batches)} batches "
        f"{fixed.count} compilations ({fixed.seconds:.2f} s)"
    )
    rep.line(f"  target fixed-shape epoch <= 1 compile per bucket: {'MET' if ok else 'NOT MET'}")


if __name__ == "__main__":
    main()
