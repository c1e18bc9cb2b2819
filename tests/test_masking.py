"""Masked reductions: equal to per-item numpy on random ragged data, documented empty rows, finite gradients."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_close

from batchlab import masked_max, masked_mean, masked_softmax, masked_sum, pad
from batchlab.ragged.padding import Padded


def ragged_batch(n, features=(), dtype=np.float32, seed=0, garbage=1e4):
    """Random ragged items (some empty) padded with a huge value, so pads that leak in show."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 8, n)
    lengths[0] = 0  # always one fully masked row
    seqs = [rng.standard_normal((int(k), *features)).astype(dtype) for k in lengths]
    values = np.full((n, 9, *features), garbage, dtype)
    for i, s in enumerate(seqs):
        values[i, : len(s)] = s
    return seqs, Padded(values, np.arange(9) < lengths[:, None], lengths.astype(np.int32))


def _ref(seqs, fn, empty, features=()):
    return np.stack([fn(s) if len(s) else np.full(features, empty) for s in seqs])


def _softmax(s):
    e = np.exp(s - s.max(0))
    return e / e.sum(0)


@pytest.mark.parametrize("n", [1, 33])
@pytest.mark.parametrize("features", [(), (3,)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reductions_match_per_item_numpy(n, features, dtype, maybe_jit):
    if dtype == np.float64 and not jax.config.jax_enable_x64:
        dtype = np.float32
    seqs, p = ragged_batch(n, features, dtype)
    x, m = jnp.asarray(p.values), jnp.asarray(p.mask)
    assert_close(
        maybe_jit(lambda x, m: masked_sum(x, m, axis=1))(x, m),
        _ref(seqs, lambda s: s.sum(0), 0.0, features).astype(dtype),
    )
    assert_close(
        maybe_jit(lambda x, m: masked_mean(x, m, axis=1))(x, m),
        _ref(seqs, lambda s: s.mean(0), 0.0, features).astype(dtype),
    )
    assert_close(
        maybe_jit(lambda x, m: masked_max(x, m, axis=1))(x, m),
        _ref(seqs, lambda s: s.max(0), -np.inf, features).astype(dtype),
    )
    sm = maybe_jit(lambda x, m: masked_softmax(x, m, axis=1))(x, m)
    for i, s in enumerate(seqs):
        if len(s):
            assert_close(sm[i, : len(s)], _softmax(s).astype(dtype))
        assert np.all(np.asarray(sm[i, len(s) :]) == 0)


def test_empty_rows_documented_values():
    x = jnp.full((2, 3), 7.0)
    m = jnp.array([[False] * 3, [True, False, False]])
    assert masked_sum(x, m).tolist() == [0.0, 7.0]
    assert masked_mean(x, m).tolist() == [0.0, 7.0]  # the kit's one convention
    assert masked_mean(x, m, empty=-np.inf).tolist() == [-np.inf, 7.0]
    assert masked_max(x, m).tolist() == [-np.inf, 7.0]
    assert masked_max(x, m, empty=-1.0).tolist() == [-1.0, 7.0]
    assert masked_softmax(x, m).tolist() == [[0.0] * 3, [1.0, 0.0, 0.0]]


@pytest.mark.parametrize(
    "fn",
    [
        masked_sum,
        masked_mean,
        masked_max,
        masked_softmax,
        lambda x, m: masked_mean(x, m, empty=0.0),
    ],
)
def test_gradients_finite_and_zero_at_pads(fn, maybe_jit):
    _, p = ragged_batch(6, garbage=np.inf)  # even inf in the pads must not leak
    x, m = jnp.asarray(p.values), jnp.asarray(p.mask)

    def loss(x):
        y = fn(x, m)
        return jnp.sum(jnp.where(jnp.isfinite(y), y, 0.0) ** 2)

    g = maybe_jit(jax.grad(loss))(x)
    assert np.all(np.isfinite(np.asarray(g)))
    assert np.all(np.asarray(g)[~p.mask] == 0)


def test_integer_inputs():
    x = jnp.array([[1, 2, 3], [4, 5, 6]], dtype=jnp.int32)
    m = jnp.array([[True, True, False], [False, False, False]])
    assert masked_sum(x, m).tolist() == [3, 0]
    assert masked_mean(x, m, empty=0.0).tolist() == [1.5, 0.0]
    assert masked_max(x, m).tolist() == [2, np.iinfo(np.int32).min]
    assert masked_softmax(x, m).dtype == jnp.float32


def test_mask_of_leading_axes_and_negative_axis():
    x = jnp.arange(12.0).reshape(2, 3, 2)
    m = jnp.array([[True, True, False], [True, False, False]])
    assert masked_sum(x, m, axis=1).tolist() == [[2.0, 4.0], [6.0, 7.0]]
    assert masked_sum(x, m, axis=-1).tolist() == masked_sum(x, m, axis=1).tolist()


def test_under_vmap():
    _, p = ragged_batch(5)
    out = jax.vmap(lambda v, m: masked_mean(v, m, axis=0, empty=0.0))(
        jnp.asarray(p.values), jnp.asarray(p.mask)
    )
    assert_close(out, masked_mean(p.values, p.mask, axis=1, empty=0.0))


@pytest.mark.parametrize(
    "mask, axis, error, match",
    [
        (np.ones((2, 3), np.int32), 1, TypeError, r"`mask` must be boolean.*got int32\(2, 3\)"),
        (np.ones((3, 2), bool), 1, ValueError, r"got bool\(3, 2\) for x \(2, 3\)"),
        (np.ones((2, 3, 1), bool), 1, ValueError, r"got bool\(2, 3, 1\) for x"),
        (np.ones((2,), bool), 1, ValueError, r"`axis` must be one int, an axis of `mask`.*axis=1"),
        (np.ones((2, 3), bool), (0, 1), TypeError, r"`axis` must be one int.*axis=\(0, 1\)"),
    ],
)
def test_errors(mask, axis, error, match):
    with pytest.raises(error, match=match):
        masked_mean(jnp.ones((2, 3)), mask, axis=axis)


@pytest.mark.parametrize("lengths", [[3, 0, 5, 1], [1], [7, 7], [0, 0]])
def test_mean_pool_matches_the_per_item_reference(lengths):
    from batchlab.ragged import mean_pool, mean_pool_reference
    from batchlab.ragged.padding import as_ragged

    rng = np.random.default_rng(0)
    table = rng.normal(size=(11, 4)).astype(np.float32)
    seqs = [rng.integers(0, 11, n) for n in lengths]
    expected = np.stack([table[s].mean(0) if len(s) else np.zeros(4, np.float32) for s in seqs])
    padded = pad(seqs)
    got = np.asarray(jax.jit(mean_pool)(padded.values, padded.mask, table))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        mean_pool_reference(as_ragged(seqs), table), expected, rtol=1e-5, atol=1e-6
    )


def test_zero_length_axis():
    """A batch whose every item is empty pads to length 0: every reduction still has its empty value."""
    x, m = jnp.zeros((2, 0)), jnp.zeros((2, 0), bool)
    assert masked_sum(x, m, axis=1).tolist() == [0.0, 0.0]
    assert masked_mean(x, m, axis=1).tolist() == [0.0, 0.0]
    assert masked_max(x, m, axis=1).tolist() == [-np.inf, -np.inf]
    assert masked_softmax(x, m, axis=1).shape == (2, 0)


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16, jnp.int8, jnp.uint8, jnp.bool_])
def test_dtypes_and_values_follow_jaxs_own_reductions(dtype):
    """With nothing masked, each reduction gives what JAX's plain one gives, in its dtype
    (float16 stays float16; integers become float for mean and softmax)."""
    x = jnp.asarray(np.arange(12).reshape(3, 4) % 5, dtype)
    m = jnp.ones((3, 4), bool)
    xf = x if jnp.issubdtype(dtype, jnp.inexact) else x.astype(jnp.float32)
    pairs = {
        "sum": (masked_sum(x, m, axis=1), jnp.sum(x, axis=1)),
        "max": (masked_max(x, m, axis=1), jnp.max(x, axis=1)),
        "mean": (masked_mean(x, m, axis=1), jnp.mean(x, axis=1)),
        "softmax": (masked_softmax(x, m, axis=1), jax.nn.softmax(xf, axis=1)),
    }
    for name, (got, want) in pairs.items():
        assert got.dtype == want.dtype, name
        np.testing.assert_allclose(np.float32(got), np.float32(want), rtol=1e-2, err_msg=name)
    empty = m.at[0].set(False)  # a typed `empty` still gives x's dtype
    assert masked_mean(x, empty, axis=1, empty=np.float32(1)).dtype == jnp.mean(x, axis=1).dtype
    if jnp.issubdtype(dtype, jnp.inexact):
        assert masked_max(x, empty, axis=1, empty=np.float32(1)).dtype == dtype


def test_a_bool_max_of_an_all_false_item_is_false():
    x, m = jnp.array([[False, False], [False, True]]), jnp.array([[True, True], [True, True]])
    assert masked_max(x, m, axis=1).tolist() == [False, True]


def test_softmax_shifts_each_row_by_its_own_max():
    """Rows far apart in scale: a shared shift would underflow the small row to 0, no shift
    would overflow exp(1000) to inf."""
    x = jnp.array([[0.0, 0.0, 5.0], [1000.0, 1000.0, 2000.0]])
    m = jnp.array([[True, True, False], [True, True, False]])
    np.testing.assert_allclose(masked_softmax(x, m, axis=1), [[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]])


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: masked_sum("abc", jnp.ones(3, bool)), TypeError, r"^`x` must be a numeric"),
        (lambda: masked_sum(jnp.ones(3), "abc"), TypeError, r"^`mask` must be a numeric"),
        (lambda: masked_mean(jnp.ones(3), jnp.ones(3, bool), empty="0"), TypeError, r"`empty`"),
        (
            lambda: masked_max(jnp.ones(3, jnp.int8), jnp.ones(3, bool), empty=300),
            ValueError,
            r"`empty`",
        ),
    ],
)
def test_bad_x_mask_and_empty_are_named(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_the_reference_of_no_items_is_an_empty_table_of_its_dtype():
    from batchlab.ragged import mean_pool_reference
    from batchlab.ragged.padding import as_ragged

    out = mean_pool_reference(as_ragged([]), np.ones((5, 3), np.float16))
    assert out.shape == (0, 3) and out.dtype == np.float16


def test_a_mask_shared_along_an_axis_and_a_mask_of_rows_over_axis_0():
    x = jnp.arange(24.0).reshape(2, 4, 3)  # (batch, heads, seq): one mask for every head
    m = jnp.array([[[True, True, False]], [[True, False, False]]])  # (batch, 1, seq)
    expected = np.where(np.broadcast_to(m, x.shape), x, 0).sum(2)
    np.testing.assert_array_equal(masked_sum(x, m, axis=2), expected)
    y, rows = jnp.arange(12.0).reshape(3, 4), jnp.array([True, False, True])
    np.testing.assert_array_equal(masked_sum(y, rows, axis=0), y[0] + y[2])
