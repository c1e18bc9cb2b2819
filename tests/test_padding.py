"""pad / unpad / Ragged: round trips, masks, lengths, truncation, dtypes, errors."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_close

from batchlab import pad
from batchlab.ragged.padding import Padded, Ragged, as_ragged, unpad


def ragged_lists(n, max_len=9, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(int(k)).astype(dtype) for k in rng.integers(0, max_len, n)]


@pytest.mark.parametrize("n", [1, 3, 17])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int8])
def test_round_trip_mask_and_lengths(n, dtype):
    seqs = ragged_lists(n, dtype=dtype)
    p = pad(seqs)
    lengths = np.array([len(s) for s in seqs])
    assert p.values.dtype == dtype
    assert p.values.shape == (n, max(lengths.max(), 0))
    np.testing.assert_array_equal(p.lengths, lengths)
    np.testing.assert_array_equal(p.mask, np.arange(p.values.shape[1])[None, :] < lengths[:, None])
    for got, want in zip(unpad(p), seqs, strict=False):
        assert_close(got, want)
    assert np.all(p.values[~p.mask] == 0)


@pytest.mark.parametrize("multiple_of, expected", [(1, 7), (4, 8), (7, 7), (16, 16)])
def test_multiple_of(multiple_of, expected):
    p = pad([[1] * 7, [2] * 3], multiple_of=multiple_of)
    assert p.values.shape == (2, expected)


def test_fixed_length_and_pad_value():
    p = pad([[1.0, 2.0], [3.0]], length=5, value=np.nan)
    assert p.values.shape == (2, 5)
    assert np.isnan(p.values[~p.mask]).all()
    assert p.padded_elements == 10 and p.true_elements == 3 and p.waste == pytest.approx(0.7)


def test_ragged_input_matches_list_input():
    seqs = ragged_lists(20)
    r = as_ragged(seqs)
    assert len(r) == 20
    a, b = pad(seqs), pad(r)
    for x, y in zip(a, b, strict=False):
        np.testing.assert_array_equal(x, y)


def test_truncation_only_on_request():
    seqs = [[1, 2, 3, 4], [5], [6, 7, 8]]
    with pytest.raises(ValueError, match=r"would cut 2 of 3 items.*truncate=True"):
        pad(seqs, length=2)
    with pytest.warns(UserWarning, match="truncated 2 of 3 items"):
        p = pad(seqs, length=2, truncate=True)
    assert p.values.tolist() == [[1, 2], [5, 0], [6, 7]]
    assert p.lengths.tolist() == [2, 1, 2]


def test_empty_list_and_empty_sequences():
    p = pad([])
    assert p.values.shape == (0, 0) and p.mask.shape == (0, 0) and p.lengths.shape == (0,)
    assert unpad(p) == []
    assert pad([], length=4).values.shape == (0, 4)
    p = pad([[], [], []])
    assert p.values.shape == (3, 0) and p.lengths.tolist() == [0, 0, 0]
    p = pad([[1, 2], []])  # an empty item keeps the others' dtype
    assert p.values.dtype == np.int64 and p.lengths.tolist() == [2, 0]
    p = pad([np.ones(2, np.float32), []])
    assert p.values.shape == (2, 2) and p.values.dtype == np.float32


def test_dtype_argument():
    p = pad([[1, 2], [3]], dtype=np.float16)
    assert p.values.dtype == np.float16
    _values, mask, lengths = p  # unpacks like a tuple
    assert isinstance(p, Padded) and mask.dtype == bool and lengths.dtype == np.int32


def test_ragged_container():
    r = Ragged.from_lengths(np.arange(6), [2, 0, 4])
    assert r.lengths.tolist() == [2, 0, 4] and r.item(2).tolist() == [2, 3, 4, 5]
    assert len(r) == 3 and len(Ragged.from_lengths(np.zeros(0), [])) == 0


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(length=4, multiple_of=2), ValueError, "either `length`"),
        (dict(length=-1), ValueError, "`length` must be at least 0"),
        (dict(multiple_of=0), ValueError, "`multiple_of` must be at least 1"),
        (dict(length=2.5), TypeError, "`length` must be an int"),
        (dict(value=0.5), ValueError, r"`value`=0.5 cannot be stored in a int64"),
        (dict(value="x"), ValueError, "cannot be stored"),
    ],
)
def test_bad_options(kwargs, error, match):
    with pytest.raises(error, match=match):
        pad([[1, 2, 3], [4]], **kwargs)


@pytest.mark.parametrize(
    "seqs, error, match",
    [
        ("abc", TypeError, "`seqs` must be a list of 1-D sequences.*got str 'abc'"),
        (5, TypeError, "`seqs` must be a list of 1-D sequences.*got int 5"),
        (np.arange(3), TypeError, r"got `seqs\[0\]` of shape \(\)"),
        ([[1, 2], 3], TypeError, r"got `seqs\[1\]` of shape \(\)"),
        ([np.ones(2), np.ones((2, 4))], TypeError, r"got `seqs\[1\]` of shape \(2, 4\)"),
    ],
)
def test_bad_seqs(seqs, error, match):
    with pytest.raises(error, match=match):
        pad(seqs)


def test_2d_array_input_is_rows():
    p = pad(np.arange(6).reshape(2, 3))
    assert p.values.tolist() == [[0, 1, 2], [3, 4, 5]] and p.mask.all()


def test_padded_is_a_pytree_for_jit(maybe_jit):
    import jax.numpy as jnp

    p = pad([[1.0, 2.0], [3.0]])
    out = maybe_jit(lambda q: jnp.sum(q.values * q.mask, axis=1))(p)
    assert_close(np.asarray(out), np.array([3.0, 3.0], np.float32))


def test_large_batch_is_vectorized():
    lengths = np.random.default_rng(0).integers(0, 50, 100_000)
    r = Ragged.from_lengths(np.arange(lengths.sum(), dtype=np.int32), lengths)
    p = pad(r)
    assert p.true_elements == lengths.sum()
    i = 99_999
    np.testing.assert_array_equal(p.values[i, : lengths[i]], r.item(i))
