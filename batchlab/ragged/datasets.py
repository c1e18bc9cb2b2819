"""Ragged data to experiment with: a real shipped dataset and a synthetic length generator."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from batchlab._util.checks import check_fits_memory, check_positive_float, check_positive_int
from batchlab.ragged.padding import Ragged

DATA_DIR = Path(str(resources.files("batchlab.ragged") / "data"))
STDLIB_FILE = "stdlib_functions.npz"


@dataclass(frozen=True)
class TokenDataset:
    """Ragged token-id sequences with their vocabulary."""

    ragged: Ragged
    vocab: np.ndarray
    source: str

    @property
    def lengths(self) -> np.ndarray:
        return self.ragged.lengths

    def __len__(self) -> int:
        return len(self.ragged)

    def sequences(self, n: int) -> list[np.ndarray]:
        """The first ``n`` sequences as a list of arrays (views)."""
        return [self.ragged.item(i) for i in range(min(n, len(self)))]

    def __repr__(self) -> str:
        lengths = self.lengths
        return (
            f"TokenDataset({len(self)} sequences, {lengths.sum():,} tokens, vocab {len(self.vocab)}, "
            f"lengths median {int(np.median(lengths))} max {lengths.max()}; {self.source})"
        )


def load_stdlib_functions() -> TokenDataset:
    """Loads the shipped dataset (``batchlab/ragged/data/``): one token-id sequence per stdlib
    function."""
    path = DATA_DIR / STDLIB_FILE
    try:
        with np.load(path, allow_pickle=False) as f:
            tokens, offsets, vocab, source = (
                f[k] for k in ("tokens", "offsets", "vocab", "source")
            )
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as e:
        error = FileNotFoundError if isinstance(e, FileNotFoundError) else ValueError
        raise error(
            f"The ragged dataset {path.name!r} is missing or corrupt ({type(e).__name__}: {e}); "
            "regenerate it with: python scripts/make_ragged_dataset.py (from the repository "
            "root; it writes batchlab/ragged/data/), or reinstall batchlab."
        ) from None
    return TokenDataset(Ragged(tokens, offsets), vocab, str(source))


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
    very long tail); ``max_length`` clips.
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
