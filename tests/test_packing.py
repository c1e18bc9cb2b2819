"""Packing: segment reductions equal the per-item reference and the masked ones; one compile per fixed shape."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_close

from batchlab import count_compiles, masked_max, masked_mean, masked_softmax, masked_sum, pack, pad
from batchlab.ragged import (
    mean_pool,
    mean_pool_reference,
    packed_max,
    packed_mean,
    packed_mean_pool,
    packed_softmax,
    packed_sum,
    unpack,
)
from batchlab.ragged.padding import as_ragged


def ragged(n, features=(), seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 9, n)
    if n:
        lengths[0] = 0  # always one empty item
    return [rng.standard_normal((int(k), *features)).astype(np.float32) for k in lengths]


def _ref(seqs, fn, empty, features=()):
    rows = [fn(s) if len(s) else np.full(features, empty, np.float32) for s in seqs]
    return np.stack(rows).astype(np.float32) if rows else np.zeros((0, *features), np.float32)


@pytest.mark.parametrize("n", [0, 1, 33])
@pytest.mark.parametrize("features", [(), (3,)])
@pytest.mark.parametrize("tail", [0, 5])
def test_reductions_match_per_item_numpy(n, features, tail, maybe_jit):
    seqs = ragged(n, features)
    total = sum(len(s) for s in seqs) + tail
    p = pack(seqs, total_length=total, value=1e4)  # a leaking tail would show
    assert p.values.shape[0] == total and p.lengths.tolist() == [len(s) for s in seqs]
    if n == 0:  # an empty list carries no feature shape: nothing more to reduce
        assert packed_sum(p.values, p).shape == (0,)
        return
    assert_close(maybe_jit(packed_sum)(p.values, p), _ref(seqs, lambda s: s.sum(0), 0.0, features))
    assert_close(
        maybe_jit(packed_mean)(p.values, p), _ref(seqs, lambda s: s.mean(0), 0.0, features)
    )
    assert_close(
        maybe_jit(packed_max)(p.values, p), _ref(seqs, lambda s: s.max(0), -np.inf, features)
    )
    sm = np.asarray(maybe_jit(packed_softmax)(p.values, p))
    for s, item in zip(seqs, unpack(p._replace(values=sm)), strict=True):
        if len(s):
            e = np.exp(s - s.max(0))
            assert_close(item, (e / e.sum(0)).astype(np.float32))
    assert np.all(sm[total - tail :] == 0)


@pytest.mark.parametrize("n", [1, 20])
def test_packed_equals_masked_item_for_item(n):
    """The one empty-item convention: padded-and-masked and packed give the same numbers."""
    seqs = ragged(n, (2,), seed=3)
    padded, packed = pad(seqs, value=7.0), pack(seqs, max_items=n + 2)
    x, m = jnp.asarray(padded.values), jnp.asarray(padded.mask)
    assert_close(packed_sum(packed.values, packed)[:n], masked_sum(x, m, axis=1))
    assert_close(packed_mean(packed.values, packed)[:n], masked_mean(x, m, axis=1))
    assert_close(packed_max(packed.values, packed)[:n], masked_max(x, m, axis=1))
    sm = masked_softmax(x, m, axis=1)
    flat = np.concatenate([np.asarray(sm[i, : len(s)]) for i, s in enumerate(seqs)])
    assert_close(packed_softmax(packed.values, packed), flat)
    # the unused slots up to max_items are empty items too
    assert np.asarray(packed_mean(packed.values, packed))[n:].tolist() == [[0.0, 0.0]] * 2


def test_mean_pool_packed_matches_reference_and_padded():
    rng = np.random.default_rng(1)
    table = rng.normal(size=(13, 4)).astype(np.float32)
    seqs = [rng.integers(1, 13, k) for k in (5, 0, 1, 12, 3)]
    expected = mean_pool_reference(as_ragged(seqs), table)
    p = pack(seqs, total_length=30)
    assert_close(jax.jit(packed_mean_pool)(p, table), expected)
    padded = pad(seqs)
    assert_close(jax.jit(mean_pool)(padded.values, padded.mask, table), expected)


def test_fixed_total_length_compiles_once():
    rng = np.random.default_rng(2)
    table = jnp.asarray(rng.normal(size=(50, 4)).astype(np.float32))
    f = jax.jit(lambda p, t: packed_mean_pool(p, t))
    batches = [[rng.integers(1, 50, k) for k in rng.integers(1, 30, 16)] for _ in range(4)]
    with count_compiles(match="lambda") as fixed:
        for b in batches:
            f(pack(b, total_length=480, max_items=16), table)
    with count_compiles(match="lambda") as free:
        for b in batches:
            f(pack(b), table)  # total length differs per batch: a new shape each time
    assert fixed.count == 1
    assert free.count == len({sum(len(s) for s in b) for b in batches}) > 1


def test_gradients_finite_and_zero_on_the_tail():
    seqs = ragged(6)
    p = pack(seqs, total_length=sum(len(s) for s in seqs) + 4, value=np.inf)

    def loss(x):
        parts = [packed_mean(x, p), packed_max(x, p), packed_softmax(x, p)]
        return sum(jnp.sum(jnp.where(jnp.isfinite(v), v, 0.0) ** 2) for v in parts)

    g = np.asarray(jax.grad(loss)(jnp.where(jnp.isfinite(p.values), p.values, 0.0)))
    assert np.all(np.isfinite(g)) and np.all(g[-4:] == 0)


def test_round_trip_and_report():
    seqs = [[1, 2, 3], [], [4]]
    p = pack(seqs, total_length=6, max_items=4)
    assert [s.tolist() for s in unpack(p)] == [[1, 2, 3], [], [4], []]
    assert p.segment_ids.tolist() == [0, 0, 0, 2, 4, 4]
    assert (p.padded_elements, p.true_elements, p.num_segments) == (6, 4, 4)
    assert p.waste == pytest.approx(1 / 3)
    assert "padding" in repr(p) and "<table" in p._repr_html_()
    empty = pack([])
    assert empty.values.shape == (0,) and empty.lengths.shape == (0,) and empty.waste == 0.0


def test_integer_values():
    p = pack([[1, 5], [], [3]])
    assert packed_sum(p.values, p).tolist() == [6, 0, 3]
    top = np.asarray(packed_max(p.values, p))
    assert top.tolist()[1] == np.iinfo(top.dtype).min
    assert packed_mean(p.values, p).dtype == jnp.float32


@pytest.mark.parametrize(
    "call, error, match",
    [
        (
            lambda: pack([[1, 2], [3]], total_length=2),
            ValueError,
            r"hold 3 elements.*total_length >= 3",
        ),
        (lambda: pack([[1], [2]], max_items=1), ValueError, r"2 items but `max_items`=1"),
        (lambda: pack([[1]], total_length=2.0), TypeError, "`total_length` must be an int"),
        (lambda: pack([[1]], max_items=-1), ValueError, "`max_items` must be at least 0"),
        (lambda: pack([[1]], value=0.5), ValueError, "cannot be stored"),
        (lambda: pack("abc"), TypeError, "`seqs` must be a list of sequences"),
        (
            lambda: packed_sum(np.ones(3), pack([[1.0, 2.0]])),
            ValueError,
            r"`x` has shape \(3,\) but the packed batch has 2 positions",
        ),
    ],
)
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize(
    "answer, ok, hint",
    [
        ((4 * 200 / 60, 235 / 35), True, "padding multiplies"),
        ((9.0, 5.0), True, "padding multiplies"),  # within 2x: the order of magnitude counts
        ((1.2, 235 / 35), False, "padded factor is off"),
        ((4 * 200 / 60, 20.0), False, "packed factor is off"),
        ((-1, 2), False, "positive"),
        ("big", False, "pair of numbers"),
    ],
)
def test_long_item_exercise(answer, ok, hint):
    from batchlab import exercises

    r = exercises.check("ragged.long_item", answer, lengths=[5, 10, 20], extra=200)
    assert r.ok is ok and hint in r.message
    assert "13.3" not in r.message and "6.7" not in r.message  # hints never give the number


def test_padding_explorer_pack_strategy_and_bad_strategy():
    from batchlab import Ragged
    from batchlab.widgets import PaddingExplorer

    data = Ragged.from_lengths(np.arange(30) % 7, [1, 4, 0, 25])
    ex = PaddingExplorer(data, vocab=7, features=3, sizes=(4, 8), repeat=3)
    packed = ex.update(strategy="pack")
    padded = ex.update(strategy="max")
    assert packed.correct == padded.correct == 1.0
    assert packed.padded_elements == 30 < padded.padded_elements == 4 * 25
    assert packed.flops < padded.flops
    with pytest.raises(
        ValueError, match=r"`strategy` must be one of \['max', 'multiple', 'fixed', 'pack'\]"
    ):
        ex.update(strategy="nope")
    assert ex.figure() is not None
