"""Reliability (issue 24, outside runs/): raw errors from below the kit become the kit's own,
raised before any work, and silent wrong results fail loudly or give the right numbers.

Also: masked reductions with masks that broadcast, as attention masks do (issue 25), against a
float64 numpy reference.
"""

from __future__ import annotations

import os

import jax.numpy as jnp
import numpy as np
import pytest
from conftest import tolerance

import batchlab
from batchlab import exercises, loading
from batchlab.exercises import check, exercise
from batchlab.ragged import (
    masked_max,
    masked_mean,
    masked_softmax,
    masked_sum,
)
from batchlab.widgets import BroadcastExplorer

# ------------------------------------------------------------- raw errors from below the kit


@pytest.mark.parametrize(("value", "shown"), [(5, "5"), ((5, 1), r"\(5, 1\)"), (None, "None")])
def test_explorer_update_with_a_non_text_shape_names_it(value, shown):
    ex = BroadcastExplorer("(5,)", "(5, 1)")
    with pytest.raises(
        TypeError, match=rf"`a` must be a shape like \(4, 1\), typed as text .*got {shown}\."
    ):
        ex.update(a=value)
    assert ex.params["a"] == "(5,)"  # the last good setting is kept
    with pytest.raises(ValueError, match=r"`b` must be a shape like \(4, 1\).*got '\(True,\)'"):
        ex.update(b="(True,)")


def test_loader_dtype_numpy_does_not_know(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros(3))
    with pytest.raises(TypeError, match=r"`dtype` must be a dtype .*'flaot32'.*Did you mean"):
        loading.load_npy(tmp_path / "x.npy", dtype="flaot32")
    with pytest.raises(TypeError, match=r"`dtype` must be a dtype .*got 'nope'"):
        loading.load_npy(tmp_path / "x.npy", dtype="nope")


def test_dataset_folder_that_is_a_file(tmp_path):
    a_file = tmp_path / "afile"
    a_file.write_text("")
    with pytest.raises(ValueError, match=r"`directory` .*afile cannot hold the dataset"):
        loading.make_dataset(a_file, 2, (3,))
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "items").write_text("")
    with pytest.raises(ValueError, match=r"`directory` .*d cannot hold the dataset .*items"):
        loading.make_dataset(tmp_path / "d", 2, (3,))
    assert sorted(os.listdir(tmp_path / "d")) == ["items"]  # nothing written
    dataset = loading.Dataset(a_file, 2, (3,), "float32")
    with pytest.raises(FileNotFoundError, match=r"`path` .*afile/bulk\.npy is not a file"):
        next(loading.iter_batches(dataset, 2))


def test_masked_max_of_ints_with_an_empty_row():
    x = jnp.array([[1, 2], [3, 4]], jnp.int32)
    mask = jnp.array([[True, False], [False, False]])
    assert masked_max(x, mask).tolist() == [1, jnp.iinfo(jnp.int32).min]
    assert masked_max(x, mask, empty=-1).tolist() == [1, -1]
    assert masked_max(x, mask, empty=3.0).tolist() == [1, 3]
    for empty in (-jnp.inf, float("nan"), 1.5, 2**40):
        with pytest.raises(ValueError, match=r"`empty`=.* cannot be stored in x's dtype int32"):
            masked_max(x, mask, empty=empty)
    with pytest.raises(ValueError, match=r"`empty`=2 cannot be stored in x's dtype bool"):
        masked_max(x > 1, mask, empty=2)
    assert masked_max(x.astype(jnp.float32), mask, empty=-jnp.inf).tolist() == [1.0, -np.inf]


# ------------------------------------------------------------------------- silent results


def test_restore_refuses_per_position_rows():
    seqs = [[1, 2, 3], [4], [5, 6]]
    bs = batchlab.bucketize(seqs, boundaries=[2, 4])
    assert bs.restore([b.padded.lengths for b in bs]).tolist() == [3, 1, 2]
    per_position = [b.padded.values.reshape(-1) for b in bs]
    with pytest.raises(
        ValueError, match=r"one row per item of its bucket \(\[2, 1\]\).*got \[\(4,\), \(4,\)\]"
    ):
        bs.restore(per_position)
    real_positions = [b.padded.values[b.padded.mask] for b in bs]
    with pytest.raises(ValueError, match=r"one row per item .*got \[\(3,\), \(3,\)\]. Reduce over"):
        bs.restore(real_positions)
    with pytest.raises(ValueError, match=r"and one row shape, got \[\(2, 2\), \(1, 4\)\]"):
        bs.restore([b.padded.values for b in bs])
    with pytest.raises(ValueError, match=r"one row per item .*got \[\(\), \(\)\]"):
        bs.restore([b.padded.values.sum() for b in bs])
    with pytest.raises(TypeError, match=r"`outputs` must be a list .*got generator"):
        bs.restore(b.padded.lengths for b in bs)
    # fixed-shape batches: filler rows in the output (or already dropped) are both fine
    bb = batchlab.bucket_batches(
        [[1], [2, 3], [4], [5], [6, 7, 8]], boundaries=[1, 4], batch_size=2
    )
    assert bb.restore([b.padded.lengths for b in bb]).tolist() == [1, 2, 1, 1, 3]
    kept = [b.padded.lengths[: len(b.indices)] for b in bb]
    assert bb.restore(kept).tolist() == [1, 2, 1, 1, 3]


@exercise("reliability.mean", "Write mean(x, mask).")
def _mean_checker(answer, *, x, mask):
    got = answer(x, mask)
    expected = jnp.sum(jnp.where(mask, x, 0)) / jnp.sum(mask)
    return bool(jnp.allclose(got, expected)), "checked"


@exercise("reliability.bytes", "How many bytes does fn's argument take?")
def _bytes_checker(answer, *, fn, args):
    planned = batchlab.memory_estimate(fn, *args).argument_bytes
    return int(answer) == planned, "checked"


@exercise("reliability.spread", "n + 1?")
def _spread_checker(answer, **context):
    return context["n"] + 1 == answer, "checked"


@exercise("reliability.buggy", "Anything.")
def _buggy_checker(answer, *, x):
    table = {}
    return table["missing"], "never"


X, MASK = jnp.array([1.0, 2.0, 100.0]), jnp.array([True, True, False])


def test_an_error_while_checking_is_a_hint_naming_the_inputs():
    # the learner's: their function raised, or their value broke the checker
    r = check("reliability.mean", lambda x, m: 1 / 0, x=X, mask=MASK)
    assert not r.ok and r.message == (
        "Your answer raised ZeroDivisionError: division by zero "
        "(the check called it with x=float32[3], mask=bool[3])"
    )
    r = check("reliability.bytes", "twelve", fn=lambda x: x, args=(X,))
    assert not r.ok and r.message.startswith("Your answer raised ValueError: invalid literal")
    r = check("reliability.mean", lambda x, m: "abc", x=X, mask=MASK)  # a value from the answer
    assert not r.ok and r.message.startswith("Your answer raised TypeError")
    assert check("reliability.bytes", 12, fn=lambda x: x, args=(X,)).ok
    # a wrong context, or the checker's own bug: a hint naming the inputs, never a raise
    r = check("reliability.bytes", 12, fn=lambda x: x, args=None)
    assert not r.ok and r.message.startswith("Your answer raised TypeError")
    assert r.message.endswith("(checked with fn=function <lambda>, args=NoneType None)")
    r = check("reliability.buggy", 1, x=1)
    assert not r.ok and r.message == "Your answer raised KeyError: 'missing' (checked with x=1)"
    assert "reliability.mean" in exercises.all_exercises()


# --------------------------------------------------- masks that broadcast (issue 25)


def _reference(x, mask, axis, reduction):
    """float64 per-row numpy reference; empty rows follow the kit's convention."""
    x64 = np.moveaxis(np.asarray(x, np.float64), axis, -1)
    m = np.moveaxis(np.broadcast_to(mask, x.shape), axis, -1)
    out = np.zeros(x64.shape if reduction == "softmax" else x64.shape[:-1])
    for idx in np.ndindex(*x64.shape[:-1]):
        row = x64[idx][m[idx]]
        if reduction == "sum":
            out[idx] = row.sum()
        elif reduction == "mean":
            out[idx] = row.mean() if row.size else 0.0
        elif reduction == "max":
            out[idx] = row.max() if row.size else -np.inf
        else:
            e = np.where(m[idx], np.exp(x64[idx] - (row.max() if row.size else 0)), 0.0)
            out[idx] = e / e.sum() if row.size else e
    return np.moveaxis(out, -1, axis) if reduction == "softmax" else out


REDUCTIONS = {
    "sum": masked_sum,
    "mean": masked_mean,
    "max": masked_max,
    "softmax": masked_softmax,
}


@pytest.mark.parametrize("reduction", sorted(REDUCTIONS))
@pytest.mark.parametrize(
    ("x_shape", "mask_shape", "axis"),
    [
        ((3, 4, 5), (3, 1, 5), 2),  # attention: (batch, 1, length) for (batch, heads, length)
        ((3, 4, 5), (3, 4, 5), 2),  # the full shape, as before
        ((2, 3, 4, 5), (2, 1, 1, 5), 3),  # (batch, 1, 1, keys) for (batch, heads, queries, keys)
        ((3, 5, 2), (3, 5), 1),  # leading axes, as before
        ((3, 5, 2), (3, 1), 1),  # leading axes, shared along the sequence: all-or-nothing rows
    ],
)
def test_masks_that_broadcast_match_a_float64_reference(
    reduction, x_shape, mask_shape, axis, maybe_jit
):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape).astype(np.float32)
    mask = rng.random(mask_shape) < 0.6
    mask[0] = False  # an empty row (every row of item 0)
    padded_mask = mask.reshape(mask.shape + (1,) * (x.ndim - mask.ndim))
    fn = maybe_jit(lambda x, m: REDUCTIONS[reduction](x, m, axis=axis))
    got = np.asarray(fn(jnp.asarray(x), jnp.asarray(mask)))
    want = _reference(x, padded_mask, axis, reduction)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, **tolerance(np.float32))


@pytest.mark.parametrize("mask_shape", [(3, 2, 5), (2, 1, 5), (3, 4, 5, 1)])
def test_masks_that_do_not_broadcast_are_refused(mask_shape):
    x = jnp.ones((3, 4, 5))
    with pytest.raises(
        ValueError, match=r"`mask` must be boolean, of x's shape .*size 1 on an axis it shares"
    ):
        masked_mean(x, jnp.ones(mask_shape, bool), axis=2)
