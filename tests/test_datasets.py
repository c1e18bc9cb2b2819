"""The shipped ragged dataset."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import batchlab
from batchlab import load_stdlib_functions
from batchlab.ragged import datasets
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
    assert len(data) == 6811
    assert data.lengths.min() >= 1 and data.lengths.max() == 1601
    assert data.vocab[0] == "<pad>" and "PSF License" in data.source
    assert data.ragged.flat.dtype == np.uint16 and not np.any(
        data.ragged.flat == 0
    )  # no <pad> inside
    assert data.vocab[data.ragged.item(0)[0]] == "def"
    assert len(data.sequences(3)) == 3 and "6811 sequences" in repr(data)
    assert np.percentile(data.lengths, 99) > 5 * np.median(data.lengths)  # a real long tail


def test_missing_file_says_how_to_regenerate(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path)
    with pytest.raises(FileNotFoundError, match=r"make_ragged_dataset\.py"):
        load_stdlib_functions()


@pytest.mark.parametrize("damage", ["truncated", "no vocab"])
def test_corrupt_file_says_how_to_regenerate(tmp_path, monkeypatch, damage):
    bad = tmp_path / STDLIB_FILE
    if damage == "truncated":
        bad.write_bytes((DATA_DIR / STDLIB_FILE).read_bytes()[:1000])
    else:
        with np.load(DATA_DIR / STDLIB_FILE, allow_pickle=False) as f:
            np.savez(bad, **{k: f[k] for k in f.files if k != "vocab"})
    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path)
    with pytest.raises(ValueError, match=r"corrupt.*make_ragged_dataset.py"):
        load_stdlib_functions()
