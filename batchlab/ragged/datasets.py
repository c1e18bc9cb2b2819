"""Ragged data to experiment with: a real shipped dataset and synthetic length generators.

Example:
  >>> data = load_stdlib_functions()
  >>> len(data), int(data.lengths.max())
  (6811, 1601)
  >>> data.decode(0)[:6]
  ['def', '__init__', '(', 'self', ',', '<unk>']
"""

from __future__ import annotations

import math
import os
import zipfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from batchlab._util.checks import (
    check_dtype,
    check_fits_memory,
    check_positive_float,
    check_positive_int,
)
from batchlab.ragged.padding import Ragged

#: the dataset's one copy, inside the package (present in every install)
DATA_DIR = Path(str(resources.files("batchlab.ragged") / "data"))
STDLIB_FILE = "stdlib_functions.npz"
_KEYS = ("tokens", "offsets", "vocab", "names", "source")
_REGENERATE = (
    "regenerate it with: python scripts/make_ragged_dataset.py (from the repository root; it "
    "writes batchlab/ragged/data/), or reinstall batchlab"
)


@dataclass(frozen=True)
class TokenDataset:
    """Ragged token-id sequences with their vocabulary and item names."""

    ragged: Ragged
    vocab: np.ndarray
    names: np.ndarray
    source: str

    @property
    def lengths(self) -> np.ndarray:
        return self.ragged.lengths

    def __len__(self) -> int:
        return len(self.ragged)

    def sequences(self, n: int | None = None) -> list[np.ndarray]:
        """The first ``n`` (default all) sequences as a list of arrays (views)."""
        return [self.ragged.item(i) for i in range(len(self) if n is None else min(n, len(self)))]

    def decode(self, i: int) -> list[str]:
        """The token texts of sequence ``i``."""
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"`i` must be an int (a sequence's index), got {i!r}.")
        if not 0 <= i < len(self):
            raise ValueError(f"`i`={i} is not a sequence index; valid: 0..{len(self) - 1}.")
        ids = np.asarray(self.ragged.item(i))
        bad = (ids < 0) | (ids >= len(self.vocab))
        if bad.any():
            raise ValueError(
                f"sequence {i} holds token id {int(ids[bad][0])}, outside the vocabulary "
                f"0..{len(self.vocab) - 1} (a pad value such as -1 is not a token; numpy would "
                f"read -1 as the last word). Remove pads before decoding."
            )
        return self.vocab[ids].tolist()

    def __repr__(self) -> str:
        lengths = self.lengths
        return (
            f"TokenDataset({len(self)} sequences, {lengths.sum():,} tokens, vocab {len(self.vocab)}, "
            f"lengths median {int(np.median(lengths))} max {lengths.max()}; {self.source})"
        )


def load_stdlib_functions(path: str | Path | None = None) -> TokenDataset:
    """Loads the shipped dataset, checked: one token-id sequence per stdlib function.

    ``path``: the ``.npz`` file (read with ``allow_pickle=False``); default: the package's one
    copy, ``batchlab/ragged/data/stdlib_functions.npz``.
    """
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise TypeError(
            f"`path` must be the .npz file's path (str or Path), got {type(path).__name__} "
            f"{path!r:.40}; or leave path=None for the copy shipped with batchlab."
        )
    path = Path(path) if path is not None else DATA_DIR / STDLIB_FILE
    what = f"The ragged dataset {path.name!r}"
    if not path.is_file():
        raise FileNotFoundError(
            f"{what} is missing (looked in {path.parent.name}/); {_REGENERATE}."
        )
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in _KEYS if k in f.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise ValueError(f"{what} is corrupt ({type(e).__name__}: {e}); {_REGENERATE}.") from None
    missing = [k for k in _KEYS if k not in arrays]
    if missing:
        raise ValueError(f"{what} lacks arrays {missing}; {_REGENERATE}.")
    tokens, offsets, vocab = arrays["tokens"], arrays["offsets"], arrays["vocab"]
    for key in ("tokens", "offsets"):
        if arrays[key].dtype.kind not in "iu":
            raise ValueError(
                f"`path` {path.name!r} holds {key} of dtype {arrays[key].dtype}; {key} must be "
                f"integers (they index the vocabulary): {_REGENERATE}."
            )
    problem = None
    if tokens.ndim != 1:
        problem = f"its tokens have shape {tokens.shape}, not one flat sequence"
    elif offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or offsets[-1] != len(tokens):
        problem = "its offsets do not cover the tokens"
    elif np.any(np.diff(offsets) < 0):
        problem = "its offsets decrease"
    elif len(arrays["names"]) != len(offsets) - 1:
        problem = "it has a different number of names and sequences"
    elif len(tokens) and (int(tokens.max()) >= len(vocab) or int(tokens.min()) < 0):
        problem = "a token id is outside the vocabulary"
    if problem:
        raise ValueError(f"{what} is inconsistent: {problem}; {_REGENERATE}.")
    return TokenDataset(Ragged(tokens, offsets), vocab, arrays["names"], str(arrays["source"]))


def lognormal_lengths(
    n: int,
    *,
    median: float = 32.0,
    sigma: float = 1.0,
    max_length: int | None = None,
    seed: int = 0,
) -> np.ndarray:
    """``n`` int64 lengths, each at least 1, from a log-normal law (most short, a long tail).

    ``median`` is ``exp(mu)``; ``sigma`` the spread of ``log(length)`` (0.5 narrow, 1.5 a
    very long tail); ``max_length`` clips (``None``: no clip); ``seed`` seeds numpy.

    Example:
      >>> lognormal_lengths(5, median=10, seed=0).tolist()
      [11, 9, 19, 11, 6]
    """
    n = check_positive_int(n, "n")
    median, sigma = check_positive_float(median, "median"), check_positive_float(sigma, "sigma")
    max_length = check_positive_int(max_length, "max_length", allow_none=True)
    # float64 draws, their rounding, and the int64 lengths live at once: 24 bytes per item
    check_fits_memory(24 * n, "n", f"{n:,} lengths (float64 draws and int64 lengths)")
    draws = np.random.default_rng(seed).lognormal(np.log(median), sigma, n)
    if max_length:
        draws = np.minimum(draws, max_length)
    elif not np.all(draws < 2**62):  # inf (or a length past int64) would wrap to a negative int
        raise ValueError(
            f"`sigma`={sigma} with median={median} drew a length of {draws.max():.3g}, past what "
            f"int64 holds; pass max_length= (e.g. max_length=4096) or a smaller sigma."
        )
    return np.maximum(np.rint(draws), 1).astype(np.int64)


def zipf_lengths(n: int, *, a: float = 1.5, max_length: int = 1024, seed: int = 0) -> np.ndarray:
    """``n`` int64 lengths in ``[1, max_length]`` from a Zipf law, ``P(k) ~ k**-a``.

    ``a`` > 1; smaller means a heavier tail.

    Example:
      >>> zipf_lengths(6, a=2.0, seed=0).tolist()
      [2, 1, 2, 5, 7, 3]
    """
    n, max_length = check_positive_int(n, "n"), check_positive_int(max_length, "max_length")
    if check_positive_float(a, "a") <= 1:
        raise ValueError(f"`a` must be greater than 1 for a Zipf law, got a={a}; try a=1.5.")
    check_fits_memory(16 * n, "n", f"{n:,} lengths (int64 draws and lengths)")
    return np.minimum(np.random.default_rng(seed).zipf(a, n), max_length).astype(np.int64)


def random_sequences(
    lengths: Any, *, features: tuple[int, ...] = (), dtype: Any = np.float32, seed: int = 0
) -> Ragged:
    """Random normal items with the given lengths, as a :class:`~batchlab.ragged.padding.Ragged`.

    Example:
      >>> r = random_sequences([3, 0, 2], features=(4,))
      >>> r.flat.shape, r.lengths.tolist()
      ((5, 4), [3, 0, 2])
    """
    raw = np.asarray(lengths)
    if raw.size and raw.dtype.kind not in "iu":
        raise TypeError(
            f"`lengths` must be ints (item lengths), got {raw.dtype} {raw.tolist()!r:.60}; "
            f"round them first, e.g. np.round(lengths).astype(int)."
        )
    lengths = raw.astype(np.int64)
    if lengths.ndim != 1 or np.any(lengths < 0):
        raise ValueError(f"`lengths` must be a 1-D list of non-negative ints, got {lengths!r:.80}.")
    features = (features,) if isinstance(features, (int, np.integer)) else tuple(features)
    if any(isinstance(f, bool) or not isinstance(f, (int, np.integer)) or f < 0 for f in features):
        raise ValueError(f"`features` must be a tuple of non-negative ints, got {features!r}.")
    dtype = check_dtype(dtype) or np.dtype(np.float64)  # None: as numpy draws them
    shape = (int(lengths.sum()), *features)
    what = f"{math.prod(shape):,} random values (float64 draws, then {dtype})"
    check_fits_memory(math.prod(shape) * (8 + dtype.itemsize), "lengths", what)
    flat = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return Ragged.from_lengths(flat, lengths)
