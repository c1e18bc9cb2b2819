"""Buckets: boundaries (optimal = brute force), order restored, compile counts, the report."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_close

from batchlab import (
    bucket_batches,
    bucketize,
    count_compiles,
    load_stdlib_functions,
    masked_sum,
    optimal_boundaries,
    padding_report,
)
from batchlab.ragged.boundaries import padded_elements, rule_boundaries


def brute_force(lengths, k):
    u = np.unique(lengths)
    return min(
        padded_elements(lengths, [*list(c), u[-1]])
        for r in range(0, min(k, len(u)))
        for c in itertools.combinations(u[:-1], r)
    )


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_optimal_equals_brute_force(seed, k):
    lengths = np.random.default_rng(seed).integers(1, 40, 25)
    b = optimal_boundaries(lengths, k)
    assert len(b) <= k and b[-1] == lengths.max()
    assert padded_elements(lengths, b) == brute_force(lengths, k)


def test_optimal_never_worse_than_heuristics_on_shipped_data():
    lengths = load_stdlib_functions().lengths
    for k in (2, 4, 8):
        best = padded_elements(lengths, optimal_boundaries(lengths, k))
        assert best <= padded_elements(lengths, rule_boundaries(lengths, "quantile", n_buckets=k))
        assert best <= padded_elements(lengths, rule_boundaries(lengths, "fixed", n_buckets=k))
    assert padded_elements(lengths, optimal_boundaries(lengths, 16)) <= padded_elements(
        lengths, rule_boundaries(lengths, "pow2")
    )


def test_fewer_distinct_lengths_than_buckets():
    assert optimal_boundaries([5, 5, 9], 8).tolist() == [5, 9]
    assert optimal_boundaries([], 3).tolist() == [1]


@pytest.mark.parametrize("n", [1, 7, 50])
def test_bucketize_round_trip_and_order(n):
    rng = np.random.default_rng(n)
    seqs = [rng.standard_normal(int(k)).astype(np.float32) for k in rng.integers(0, 30, n)]
    buckets = bucketize(seqs, n_buckets=3)
    assert sum(len(b.indices) for b in buckets) == n and buckets.n_items == n
    for b in buckets:
        assert b.padded.values.shape[1] == b.boundary
        for row, i in enumerate(b.indices):
            assert_close(b.padded.values[row, : len(seqs[i])], seqs[i])
    sums = buckets.map(lambda p: masked_sum(p.values, p.mask, axis=1))
    assert_close(sums, np.stack([s.sum(0) for s in seqs]).astype(np.float32))
    assert buckets.true_elements == sum(len(s) for s in seqs)


def test_bucketize_fixed_boundaries_skips_empty_buckets():
    b = bucketize([[1] * 3, [2] * 30, [3]], boundaries=[4, 8, 16, 32])
    assert [x.boundary for x in b] == [4, 32] and len(b) == 2
    assert "2 batches of 2 shapes" in repr(b) and "<table" in b._repr_html_()


def test_compilations_equal_non_empty_buckets(maybe_jit):
    rng = np.random.default_rng(0)
    seqs = [np.ones(int(k), np.float32) for k in rng.integers(1, 40, 30)]
    distinct = len({len(s) for s in seqs})

    def total(x):
        return jnp.sum(x, axis=-1)

    raw = jax.jit(lambda x: total(x))
    with count_compiles(match="lambda") as c_raw:
        for s in seqs:
            raw(s)
    assert c_raw.count == distinct
    buckets = bucketize(seqs, n_buckets=4)
    bucketed = jax.jit(lambda v, m: masked_sum(v, m, axis=1))
    with count_compiles(match="lambda") as c_b:
        out = buckets.map(lambda p: bucketed(p.values, p.mask))
    assert c_b.count == len(buckets) <= 4
    assert_close(out, np.array([len(s) for s in seqs], np.float32))


def test_report_on_shipped_data():
    lengths = load_stdlib_functions().lengths
    r = padding_report(lengths, n_buckets=8)
    assert [row.rule for row in r.rows] == ["max", "fixed", "pow2", "quantile", "optimal"]
    assert r["max"].shapes == 1 and r["optimal"].shapes == 8
    assert r["optimal"].padded_elements == min(
        row.padded_elements for row in r.rows if row.shapes <= 8
    )
    assert r["max"].padded_elements == len(lengths) * lengths.max()
    assert 0 < r["optimal"].waste < r["max"].waste < 1
    assert "padded fraction" in repr(r) and "<table" in r._repr_html_()
    assert r.plot() is not None


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: bucketize([[1]]), ValueError, "exactly one of `boundaries`"),
        (lambda: bucketize([[1]], boundaries=[2], n_buckets=2), ValueError, "exactly one of"),
        (
            lambda: bucketize([[1] * 5], boundaries=[2, 4]),
            ValueError,
            "longest item's length 5, got \\[2, 4\\]; add a boundary >= 5",
        ),
        (
            lambda: bucketize([[1]], boundaries=[4, 2]),
            ValueError,
            r"strictly increasing ints.*got \[4, 2\]",
        ),
        (
            lambda: bucketize([[1]], boundaries=[2.5]),
            ValueError,
            r"`boundaries` must be positive, strictly increasing ints.*got \[2\.5\]",
        ),
        (lambda: bucketize([[1]], n_buckets=0), ValueError, "`n_buckets` must be at least 1"),
        (lambda: rule_boundaries([1, 2], "median"), ValueError, "`rule` must be one of"),
        (lambda: padding_report([[1, 2]]), ValueError, "`lengths` must be a 1-D array"),
        (lambda: padding_report([1, 2])["nope"], KeyError, "no rule 'nope'"),
        (
            lambda: bucketize([[1], [2, 3]], n_buckets=2).restore([1]),
            ValueError,
            r"`outputs` must be a list of one array per bucket \(2\).*got \[\(\)\]",
        ),
    ],
)
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_random_batches_recompile_per_bucket_size():
    """The bug `bucket_batches` fixes: per-batch `bucketize` gives a new shape whenever a bucket's item count changes."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 60, 400)
    b = optimal_boundaries(lengths, 4)
    f = jax.jit(lambda v, m: masked_sum(v, m, axis=1))
    shapes = set()
    with count_compiles(match="lambda") as c:
        for _ in range(3):
            idx = rng.choice(len(lengths), 100, replace=False)
            for bk in bucketize([np.ones(int(k), np.float32) for k in lengths[idx]], boundaries=b):
                shapes.add(bk.padded.values.shape)
                f(bk.padded.values, bk.padded.mask)
    assert c.count == len(shapes) > len(b)


@pytest.mark.parametrize("batch_size", [1, 7, 64])
@pytest.mark.parametrize("seed", [None, 0])
def test_bucket_batches_fixed_shapes_and_restore(batch_size, seed):
    rng = np.random.default_rng(1)
    seqs = [rng.standard_normal(int(k)).astype(np.float32) for k in rng.integers(0, 50, 150)]
    batches = bucket_batches(seqs, n_buckets=4, batch_size=batch_size, seed=seed)
    assert all(b.padded.values.shape == (batch_size, b.boundary) for b in batches)
    assert batches.shapes == len({b.boundary for b in batches}) <= 4
    assert sorted(np.concatenate([b.indices for b in batches]).tolist()) == list(range(150))
    for b in batches:  # filler rows are fully masked and hold nothing
        assert (
            not b.padded.mask[len(b.indices) :].any()
            and len(b.padded.lengths) - len(b.indices) < batch_size
        )
    assert batches.true_elements == sum(len(s) for s in seqs)
    sums = batches.map(lambda p: masked_sum(p.values, p.mask, axis=1))
    assert_close(sums, np.array([s.sum() for s in seqs], np.float32))
    assert "rows per batch" in repr(batches)


def test_bucket_batches_epoch_compiles_once_per_bucket():
    data = load_stdlib_functions()
    b = optimal_boundaries(data.lengths, 8)
    batches = bucket_batches(data.ragged, boundaries=b, batch_size=256, seed=0)
    assert len(batches) >= 10
    f = jax.jit(lambda v, m: masked_sum(v > 0, m, axis=1))
    with count_compiles(match="lambda") as c:
        out = batches.map(lambda p: f(p.values, p.mask))
    assert c.count == batches.shapes == 8 < len(batches)
    assert np.array_equal(out, data.lengths)


def test_bucket_batches_shuffles_batch_order():
    seqs = [[1] * k for k in range(1, 41)]
    ordered = bucket_batches(seqs, boundaries=[10, 20, 40], batch_size=3)
    shuffled = bucket_batches(seqs, boundaries=[10, 20, 40], batch_size=3, seed=1)
    assert [b.boundary for b in ordered] == sorted(b.boundary for b in ordered)
    assert [b.boundary for b in shuffled] != [b.boundary for b in ordered]


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(batch_size=0, n_buckets=2), ValueError, "`batch_size` must be at least 1"),
        (dict(batch_size=2.5, n_buckets=2), TypeError, "`batch_size` must be a positive int"),
        (dict(batch_size=2), ValueError, "exactly one of `boundaries`"),
        (
            dict(batch_size=2, tokens_per_batch=8, n_buckets=2),
            ValueError,
            "pass one of `batch_size` .* not both",
        ),
        (
            dict(tokens_per_batch=0, n_buckets=2),
            ValueError,
            "`tokens_per_batch` must be at least 1",
        ),
        (dict(batch_size=2, boundaries=[1]), ValueError, "the longest item's length 2"),
    ],
)
def test_bucket_batches_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        bucket_batches([[1], [2, 3]], **kwargs)


def test_bucket_batches_token_budget():
    rng = np.random.default_rng(4)
    seqs = [np.ones(int(k), np.float32) for k in rng.integers(1, 200, 300)]
    batches = bucket_batches(seqs, boundaries=[10, 50, 200], tokens_per_batch=400, seed=3)
    rows = {b.boundary: b.padded.values.shape[0] for b in batches}
    assert rows == {10: 40, 50: 8, 200: 2}
    assert all(b.padded.values.shape == (rows[b.boundary], b.boundary) for b in batches)
    assert batches.shapes == 3 and batches.true_elements == sum(len(s) for s in seqs)


@pytest.mark.parametrize(
    "answer, ok, hint",
    [
        ({"compiles": "same", "filler_rows": "fewer", "batches": "more"}, True, "Right"),
        (
            {"compiles": "more", "filler_rows": "fewer", "batches": "more"},
            False,
            "What decides a compiled shape",
        ),
        (
            {"compiles": "same", "filler_rows": "more", "batches": "fewer"},
            False,
            "ceil(items / batch_size)",
        ),
        ("same", False, "Answer with a dict"),
    ],
)
def test_batch_size_change_exercise(answer, ok, hint):
    from batchlab import exercises

    # 45 items per bucket: batch_size 64 leaves 19 filler rows per bucket, batch_size 16 leaves 3
    lengths = [3] * 45 + [30] * 45
    r = exercises.check(
        "ragged.batch_size_change", answer, lengths=lengths, boundaries=[10, 40], old=64, new=16
    )
    batches_64 = bucket_batches([[1] * k for k in lengths], boundaries=[10, 40], batch_size=64)
    batches_16 = bucket_batches([[1] * k for k in lengths], boundaries=[10, 40], batch_size=16)
    assert batches_16.filler_rows < batches_64.filler_rows and len(batches_16) > len(batches_64)
    assert r.ok is ok and hint in r.message


def test_restore_checks_rows_per_bucket():
    batches = bucket_batches([[1], [2, 3], [4]], boundaries=[1, 2], batch_size=2)
    with pytest.raises(
        ValueError, match=r"one row per item of its bucket \(\[2, 1\]\).*got \[\(1,\), \(2,\)\]"
    ):
        batches.restore([np.zeros(1), np.zeros(2)])
    # a bucket's filler rows are dropped: bucket 1 holds one item in a 2-row batch
    assert batches.restore([np.array([10, 30]), np.array([20, 0])]).tolist() == [10, 20, 30]


def test_bucket_batches_count_filler_rows_as_padding():
    """Issue 25: filler rows are padding too, on top of what padding_report counts."""
    import batchlab as bl

    rng = np.random.default_rng(3)
    lengths = rng.integers(1, 200, 500)
    seqs = [np.ones(n, np.int32) for n in lengths]
    b8 = bl.optimal_boundaries(lengths, 8)
    bs = bl.bucket_batches(seqs, boundaries=b8, batch_size=64)
    ideal = bl.padding_report(lengths, n_buckets=8)["optimal"]
    filler = sum(b.boundary * (len(b.padded.lengths) - len(b.indices)) for b in bs)
    assert filler > 0 and bs.padded_elements == ideal.padded_elements + filler
    assert bs.ratio > ideal.ratio


@pytest.mark.parametrize("batch_size", [1, 3, 16, 64, 1000])
@pytest.mark.parametrize("n", [0, 1, 37])
def test_padding_report_batches_each_padded_to_their_own_longest(batch_size, n):
    """With batch_size, each bucket's items (input order) go in batches of batch_size, and each
    batch pads to its own longest: counted here item by item, as a loop over the batches would."""
    lengths = np.random.default_rng(n).integers(0, 50, n)
    report = padding_report(lengths, n_buckets=3, batch_size=batch_size)
    for row in report.rows:
        which = np.searchsorted(row.boundaries, lengths)
        padded, shapes = 0, set()
        for k in range(len(row.boundaries)):
            bucket = lengths[which == k]
            for start in range(0, len(bucket), batch_size):
                part = bucket[start : start + batch_size]
                padded += len(part) * int(part.max())
                shapes.add((len(part), int(part.max())))
        assert (row.padded_elements, row.shapes) == (padded, len(shapes)), row.rule
        assert row.true_elements == lengths.sum()
        plain = padding_report(lengths, n_buckets=3)[row.rule]
        assert row.padded_elements <= plain.padded_elements  # a batch's longest <= the boundary
    assert f"batches of {batch_size}, each padded to its longest" in repr(report)


def test_padding_report_by_batch_is_the_common_practice_on_a_small_case():
    lengths = [1, 9, 2, 2, 8, 3]
    r = padding_report(lengths, batch_size=2)["max"]  # one bucket: batches in input order
    assert (r.padded_elements, r.shapes) == (2 * 9 + 2 * 2 + 2 * 8, 3)
    sorted_first = padding_report(sorted(lengths), batch_size=2)["max"]
    assert sorted_first.padded_elements == 2 * 2 + 2 * 3 + 2 * 9 < r.padded_elements
    with pytest.raises(ValueError, match=r"`batch_size` must be at least 1"):
        padding_report(lengths, batch_size=0)


def test_padding_report_counts_what_bucketize_pads():
    import batchlab as bl

    lengths = np.random.default_rng(3).integers(1, 200, 500)
    seqs = [np.ones(n, np.int32) for n in lengths]
    for rule in bl.padding_report(lengths, n_buckets=8).rows:
        bs = bl.bucketize(seqs, boundaries=rule.boundaries)
        assert rule.padded_elements == bs.padded_elements, rule.rule
        assert rule.shapes == bs.shapes


@pytest.mark.parametrize("wrap", [lambda f: f, jax.jit], ids=["plain", "jit"])
def test_map_refuses_per_position_rows_that_match_the_item_count(wrap):
    """Issue 34: a sum over the items (one value per position) is not one output per item,
    even when the bucket's rows equal its boundary."""
    import batchlab as bl

    seqs = [[1], [1, 2], [1, 2, 3], [4, 5, 6], [7, 8, 9]]
    bs = bl.bucketize(seqs, boundaries=[2, 3])
    assert bs.map(wrap(lambda p: p.values.sum(1))).tolist() == [1, 3, 6, 15, 24]
    with pytest.raises(
        ValueError, match=r"`fn` returned shape \(2,\) for 3 rows .*not one output per item"
    ):
        bs.map(wrap(lambda p: p.values.sum(0)))
    with pytest.raises(ValueError, match=r"leading axis does not follow the batch's rows"):
        bs.map(lambda p: np.asarray(p.values).sum(0))  # numpy: not traceable, called instead
    batches = bl.bucket_batches(seqs, boundaries=[2, 3], batch_size=2)
    assert batches.map(lambda p: np.asarray(p.values).sum(1)).tolist() == [1, 3, 6, 15, 24]


def test_bucket_batches_without_a_batch_size_is_bucketize():
    seqs = [[1, 2, 3], [4], [5, 6], [7]]
    whole, bucketed = bucket_batches(seqs, boundaries=[2, 4]), bucketize(seqs, boundaries=[2, 4])
    assert [(b.boundary, b.indices.tolist()) for b in whole] == [(2, [1, 2, 3]), (4, [0])]
    assert [b.indices.tolist() for b in whole] == [b.indices.tolist() for b in bucketed]
    assert whole.filler_rows == 0
