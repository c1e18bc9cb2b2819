"""Ragged data to experiment with: a real dataset shipped with the kit."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from batchlab.ragged.padding import Ragged

DATA_DIR = Path(str(resources.files("batchlab.ragged") / "data"))
STDLIB_FILE = "stdlib_functions.npz"


@dataclass(frozen=True)
class TokenDataset(Ragged):
    """Ragged token-id sequences with their vocabulary (``ragged``: the plain :class:`Ragged`)."""

    vocab: np.ndarray
    source: str

    @property
    def ragged(self) -> Ragged:
        """The same items as a plain :class:`Ragged` (no vocabulary)."""
        return Ragged(self.flat, self.offsets)

    def sequences(self, n: int) -> list[np.ndarray]:
        """The first ``n`` sequences as a list of arrays (views)."""
        return [self.item(i) for i in range(min(n, len(self)))]

    def __repr__(self) -> str:
        lengths, vocab = self.lengths, len(self.vocab)
        return (
            f"TokenDataset({len(self)} sequences, {lengths.sum():,} tokens, vocab {vocab}, "
            f"lengths median {int(np.median(lengths))} max {lengths.max()}; {self.source})"
        )


def load_stdlib_functions() -> TokenDataset:
    """Loads the shipped dataset (``batchlab/ragged/data/``): one token-id sequence per stdlib
    function.

    Returns:
      A :class:`TokenDataset`: a :class:`Ragged` of token ids with its ``vocab`` and ``source``.

    Raises:
      FileNotFoundError: the dataset file is missing.
      ValueError: it is corrupt (``scripts/make_ragged_dataset.py`` regenerates it).
    """
    path, keys = DATA_DIR / STDLIB_FILE, ("tokens", "offsets", "vocab", "source")
    try:
        with np.load(path, allow_pickle=False) as f:
            tokens, offsets, vocab, source = (f[k] for k in keys)
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as e:
        error = FileNotFoundError if isinstance(e, FileNotFoundError) else ValueError
        raise error(
            f"The ragged dataset {path.name!r} is missing or corrupt ({type(e).__name__}: {e}); "
            "regenerate it with: python scripts/make_ragged_dataset.py (from the repository "
            "root; it writes batchlab/ragged/data/), or reinstall batchlab."
        ) from None
    return TokenDataset(tokens, offsets, vocab, str(source))
