"""Loading batches from disk: per item, in bulk, memory-mapped -- next to the machine's ceiling."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from batchlab._util.checks import check_choice, check_dtype, check_int, check_positive_int
from batchlab._util.format import format_bytes

METHODS = ("per_item", "bulk", "mmap")
ORDERS = ("contiguous", "random")
TRANSFERS = ("batch", "item")


@dataclass(frozen=True)
class Dataset:
    """The same items stored two ways: one ``.npy`` per item, and one bulk ``.npy``."""

    directory: Path
    n_items: int
    item_shape: tuple[int, ...]
    dtype: str

    item_bytes: int = field(init=False)
    total_bytes: int = field(init=False)
    bulk_path: Path = field(init=False)

    def __post_init__(self):
        item_bytes = math.prod(self.item_shape) * np.dtype(self.dtype).itemsize
        object.__setattr__(self, "item_bytes", item_bytes)
        object.__setattr__(self, "total_bytes", self.n_items * item_bytes)
        object.__setattr__(self, "bulk_path", self.directory / "bulk.npy")

    def item_path(self, i: int) -> Path:
        return self.directory / "items" / f"{i:06d}.npy"

    def __repr__(self) -> str:  # no absolute path: notebooks store this output
        return (
            f"Dataset({self.n_items} items of {self.dtype}{list(self.item_shape)}, "
            f"{format_bytes(self.item_bytes)} each, {format_bytes(self.total_bytes)} in all; "
            f"{self.n_items} per-item .npy files + one bulk .npy)"
        )


def _check_path(value: Any, name: str) -> Path:
    if not isinstance(value, (str, os.PathLike)):
        got = f"{type(value).__name__} {value!r:.40}"
        raise TypeError(f"`{name}` must be a path (str or Path), got {got}.")
    return Path(value)


def make_dataset(
    directory: str | Path, n_items: int, item_shape: Sequence[int], *, seed: int = 0
) -> Dataset:
    """Writes ``n_items`` random float32 items as per-item files and one bulk file."""
    directory = _check_path(directory, "directory")
    check_positive_int(n_items, "n_items")
    shape = np.array(item_shape, dtype=object)
    if shape.ndim != 1 or not all(isinstance(s, (int, np.integer)) and s >= 0 for s in shape):
        raise ValueError(
            f"`item_shape` must be a tuple of sizes >= 0, e.g. (3,), got {item_shape!r}."
        )
    dataset = Dataset(directory, n_items, tuple(int(s) for s in shape), "float32")
    try:
        (directory / "items").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(
            f"`directory` {directory} cannot hold the dataset ({e.strerror}: {e.filename}); "
            "pass a folder path, e.g. tempfile.mkdtemp()."
        ) from None
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((n_items, *dataset.item_shape)).astype(np.float32)
    np.save(dataset.bulk_path, data, allow_pickle=False)
    for i in range(n_items):
        np.save(dataset.item_path(i), data[i], allow_pickle=False)
    return dataset


def load_npy(
    path: str | Path, *, shape: Sequence[int] | None = None, dtype: Any = None, mmap: bool = False
) -> np.ndarray:
    """Loads one ``.npy`` file (never unpickles), checking ``shape`` and ``dtype`` if given."""
    path, dtype = _check_path(path, "path"), check_dtype(dtype)
    name = np.dtype(dtype).name if dtype is not None else "any dtype"
    want = name + (str(list(shape)) if shape is not None else "")
    if not path.is_file():
        raise FileNotFoundError(
            f"`path` {path} is not a file; expected a .npy file of {want}. "
            "Regenerate the data with batchlab.loading.make_dataset(...)."
        )
    try:
        array = np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None)
    except (ValueError, OSError, EOFError) as e:
        array = e
    if not isinstance(array, np.ndarray):  # numpy's refusal, or an .npz archive
        failed = isinstance(array, BaseException)
        if not failed:
            array.close()
        raise ValueError(
            f"`path` {path} is no plain .npy array (np.load {'raised' if failed else 'returned'} "
            f"{type(array).__name__}); expected {want}. batchlab never unpickles (a pickle can run "
            "code): save plain arrays with np.save(path, np.asarray(x, dtype=...))."
        ) from (array if failed else None)
    wrong = [f"`shape`={tuple(shape)}"] if shape is not None and tuple(shape) != array.shape else []
    wrong += [f"`dtype`={name}"] if dtype is not None and array.dtype != dtype else []
    if wrong:
        raise ValueError(
            f"`path` {path} holds {array.dtype.name}{list(array.shape)}; expected {want}: "
            f"{' and '.join(wrong)} does not match the file. Pass what it holds (None: any), "
            "or regenerate the data with batchlab.loading.make_dataset(...)."
        )
    return array


def batch_indices(n_items: int, batch_size: int, *, order: str = "contiguous") -> list[np.ndarray]:
    """Item indices of every batch, the remainder last; ``"random"``: one fixed permutation."""
    check_int(n_items, "n_items")
    check_positive_int(batch_size, "batch_size")
    check_choice(order, "order", ORDERS)
    index = np.arange(n_items)
    if order == "random":
        index = np.random.default_rng(0).permutation(n_items)
    return [index[i : i + batch_size] for i in range(0, n_items, batch_size)]


def iter_batches(
    dataset: Dataset,
    batch_size: int,
    *,
    method: str = "bulk",
    order: str = "contiguous",
    transfer: str = "batch",
) -> Iterator[jax.Array]:
    """Yields the dataset as device batches (the remainder last), loaded one way.

    ``method``: one file per item, the bulk file read whole, or it memory-mapped (only the
    rows a batch needs are read); ``transfer``: one ``device_put`` per batch or per item.
    """
    if not isinstance(dataset, Dataset):
        raise TypeError(
            f"`dataset` must be a Dataset from make_dataset(...), got {type(dataset).__name__} "
            f"{dataset!r:.40}."
        )
    check_choice(method, "method", METHODS)
    check_choice(transfer, "transfer", TRANSFERS)
    batches = batch_indices(dataset.n_items, batch_size, order=order)
    item = dict(shape=dataset.item_shape, dtype=dataset.dtype)
    if method != "per_item":
        bulk = dict(item, shape=(dataset.n_items, *dataset.item_shape))
        source = load_npy(dataset.bulk_path, mmap=method == "mmap", **bulk)
    for number, idx in enumerate(batches):
        with jax.profiler.TraceAnnotation(f"load batch {number}"):
            if method == "per_item":
                rows = [load_npy(dataset.item_path(int(i)), **item) for i in idx]
            elif order == "contiguous":
                rows = source[int(idx[0]) : int(idx[-1]) + 1]  # a slice: no gather
            else:
                rows = source[idx]  # a gather from all over the array/file
            if transfer == "batch":
                out = jax.device_put(np.asarray(rows))  # a list: stacked
            else:
                out = jnp.stack([jax.device_put(np.asarray(r)) for r in rows])
        yield out
