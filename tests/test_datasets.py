"""The shipped ragged dataset and the synthetic length generators."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import batchlab
from batchlab import load_stdlib_functions
from batchlab.ragged import lognormal_lengths, random_sequences, zipf_lengths
from batchlab.ragged.datasets import DATA_DIR, STDLIB_FILE


def test_the_dataset_is_stored_once():
    """The package copy is the only one: no second copy under data/ or elsewhere in the repository."""
    root = Path(batchlab.__file__).resolve().parent.parent
    copies = [
        p for p in root.rglob(STDLIB_FILE) if ".venv" not in p.parts and "build" not in p.parts
    ]
    assert copies == [DATA_DIR / STDLIB_FILE], copies


def test_the_loader_reads_the_package_copy():
    assert DATA_DIR.is_relative_to(Path(batchlab.__file__).parent)


def test_shipped_dataset_is_consistent():
    data = load_stdlib_functions()
    assert len(data) == 6811 == len(data.names)
    assert data.lengths.min() >= 1 and data.lengths.max() == 1601
    assert data.vocab[0] == "<pad>" and "PSF License" in data.source
    assert data.ragged.flat.dtype == np.uint16 and not np.any(
        data.ragged.flat == 0
    )  # no <pad> inside
    assert data.decode(0)[0] == "def"
    assert len(data.sequences(3)) == 3 and "6811 sequences" in repr(data)
    assert np.percentile(data.lengths, 99) > 5 * np.median(data.lengths)  # a real long tail


def test_missing_file_says_how_to_regenerate(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"make_ragged_dataset\.py"):
        load_stdlib_functions(tmp_path / "nope.npz")


def test_corrupt_file_says_how_to_regenerate(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes((DATA_DIR / STDLIB_FILE).read_bytes()[:1000])
    with pytest.raises(ValueError, match=r"corrupt.*make_ragged_dataset.py"):
        load_stdlib_functions(bad)


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda a: a.pop("vocab"), r"lacks arrays \['vocab'\]"),
        (lambda a: a.update(offsets=a["offsets"][:-1]), "offsets do not cover"),
        (lambda a: a.update(offsets=a["offsets"][::-1].copy() * 0), "offsets do not cover"),
        (lambda a: a.update(names=a["names"][:3]), "number of names"),
        (lambda a: a.update(vocab=a["vocab"][:10]), "outside the vocabulary"),
    ],
)
def test_inconsistent_file(tmp_path, change, match):
    with np.load(DATA_DIR / STDLIB_FILE, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    change(arrays)
    path = tmp_path / "x.npz"
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match=match):
        load_stdlib_functions(path)


def test_decreasing_offsets(tmp_path):
    with np.load(DATA_DIR / STDLIB_FILE, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    arrays["offsets"] = arrays["offsets"].copy()
    arrays["offsets"][1] = arrays["offsets"][2] + 1
    np.savez(tmp_path / "x.npz", **arrays)
    with pytest.raises(ValueError, match="offsets decrease"):
        load_stdlib_functions(tmp_path / "x.npz")


@pytest.mark.parametrize("n", [1, 1000])
def test_generators_seeded_and_in_range(n):
    a = lognormal_lengths(n, median=20, sigma=1.0, max_length=100, seed=3)
    assert a.shape == (n,) and a.min() >= 1 and a.max() <= 100
    assert np.array_equal(a, lognormal_lengths(n, median=20, sigma=1.0, max_length=100, seed=3))
    z = zipf_lengths(n, a=1.5, max_length=64, seed=3)
    assert z.min() >= 1 and z.max() <= 64
    r = random_sequences(a, features=(2,))
    assert r.flat.shape == (a.sum(), 2) and np.array_equal(r.lengths, a)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: lognormal_lengths(0), ValueError, "`n` must be at least 1"),
        (lambda: lognormal_lengths(5, sigma=0), ValueError, "`sigma` must be positive"),
        (lambda: zipf_lengths(5, a=1.0), ValueError, "`a` must be greater than 1"),
        (lambda: zipf_lengths(5, max_length=2.5), TypeError, "`max_length` must be a positive int"),
        (
            lambda: random_sequences([3, -1]),
            ValueError,
            "`lengths` must be a 1-D list of non-negative",
        ),
    ],
)
def test_generator_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
