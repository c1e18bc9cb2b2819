"""Loading batches from disk: per item, in bulk, memory-mapped -- next to the machine's ceiling."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from batchlab._util.checks import check_choice, check_dtype, check_positive_int
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

    @property
    def item_bytes(self) -> int:
        return int(np.prod(self.item_shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize

    @property
    def total_bytes(self) -> int:
        return self.n_items * self.item_bytes

    @property
    def bulk_path(self) -> Path:
        return self.directory / "bulk.npy"

    def item_path(self, i: int) -> Path:
        return self.directory / "items" / f"{i:06d}.npy"

    def __repr__(self) -> str:  # no absolute path: notebooks store this output
        return (
            f"Dataset({self.n_items} items of {self.dtype}{list(self.item_shape)}, "
            f"{format_bytes(self.item_bytes)} each, {format_bytes(self.total_bytes)} in all; "
            f"{self.n_items} per-item .npy files + one bulk .npy)"
        )


def _check_path(value: Any, name: str, what: str) -> None:
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(
            f"`{name}` must be a {what} path (str or Path), got {type(value).__name__} "
            f"{value!r:.40}" + ("; e.g. tempfile.mkdtemp()." if what == "folder" else ".")
        )


def _not_a_folder(name: str, directory: Path, *folders: Path) -> None:
    for folder in (directory, *folders):
        if folder.exists() and not folder.is_dir():
            raise ValueError(
                f"{name} {directory} cannot hold the dataset: {folder} is a file, not a folder. "
                "Pass a folder path (e.g. tempfile.mkdtemp()), or move that file away."
            )


def make_dataset(
    directory: str | Path, n_items: int, item_shape: Sequence[int], *, seed: int = 0
) -> Dataset:
    """Writes ``n_items`` random float32 items as per-item files and as one bulk file in
    ``directory`` (created if missing; use a temporary one).

    Example:
      >>> import tempfile
      >>> make_dataset(tempfile.mkdtemp(), 4, (3,))
      Dataset(4 items of float32[3], 12 B each, 48 B in all; 4 per-item .npy files + one bulk .npy)
    """
    _check_path(directory, "directory", "folder")
    check_positive_int(n_items, "n_items")
    if isinstance(item_shape, (int, np.integer)) or not hasattr(item_shape, "__iter__"):
        raise TypeError(
            f"`item_shape` must be a tuple of sizes, e.g. ({item_shape!r},), got {item_shape!r}."
        )
    item_shape = tuple(int(s) for s in item_shape)
    if any(s < 0 for s in item_shape):
        raise ValueError(f"`item_shape` must hold sizes >= 0, got item_shape={item_shape}.")
    directory = Path(directory)
    _not_a_folder("`directory`", directory, directory / "items")
    (directory / "items").mkdir(parents=True, exist_ok=True)
    data = np.random.default_rng(seed).standard_normal((n_items, *item_shape)).astype(np.float32)
    dataset = Dataset(directory, n_items, item_shape, "float32")
    np.save(dataset.bulk_path, data, allow_pickle=False)
    for i in range(n_items):
        np.save(dataset.item_path(i), data[i], allow_pickle=False)
    return dataset


def load_npy(
    path: str | Path, *, shape: Sequence[int] | None = None, dtype: Any = None, mmap: bool = False
) -> np.ndarray:
    """Loads one ``.npy`` file safely: no pickles, and the ``shape`` and ``dtype`` checked
    (``None``: any); ``mmap`` memory-maps it read-only.

    Example:
      >>> import tempfile, os
      >>> p = os.path.join(tempfile.mkdtemp(), "x.npy"); np.save(p, np.zeros((2, 3)))
      >>> load_npy(p, shape=(2, 3), dtype="float64").sum()
      np.float64(0.0)
    """
    _check_path(path, "path", "file")
    dtype, path = check_dtype(dtype), Path(path)
    want = (
        f"{np.dtype(dtype).name if dtype is not None else 'any dtype'}"
        f"{list(shape) if shape is not None else ' of any shape'}"
    )
    if not path.is_file():
        raise FileNotFoundError(
            f"`path` {path} does not exist (or is not a file); expected a .npy file holding {want}. "
            "Check the directory, or regenerate the data with batchlab.loading.make_dataset(...)."
        )
    with open(path, "rb") as f:
        magic = f.read(6)
    if magic != b"\x93NUMPY":
        if magic[:1] == b"\x80":
            kind = "a pickle"
        elif magic[:2] == b"PK":
            kind = "an .npz archive (a zip of arrays)"
        else:
            kind = f"corrupt or another format (it starts with {magic!r}, not the .npy magic bytes)"
        raise ValueError(
            f"`path` {path} is {kind}, not a .npy file; expected {want}. batchlab reads "
            "plain .npy files only and never unpickles. Save with np.save(path, array)."
        )
    try:
        array = np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None)
    except (ValueError, OSError, EOFError) as e:
        if "pickle" in str(e) or "Object arrays" in str(e):
            raise ValueError(
                f"`path` {path} holds pickled Python objects (an object array); batchlab refuses "
                "pickles (allow_pickle=False) because unpickling can run arbitrary code. Save plain "
                f"arrays instead: np.save(path, np.asarray(x, dtype=...)). Expected {want}."
            ) from e
        raise ValueError(
            f"`path` {path} is corrupt or truncated ({e}); expected a .npy file holding {want}. "
            "Regenerate it with np.save(path, array)."
        ) from e
    if shape is not None and tuple(array.shape) != tuple(shape):
        raise ValueError(
            f"`path` {path} holds an array of shape {list(array.shape)}, expected {want}. "
            "Was it written for a different dataset?"
        )
    if dtype is not None and array.dtype != np.dtype(dtype):
        raise ValueError(
            f"`path` {path} holds dtype {array.dtype.name}, expected {want}. "
            "Convert when saving: np.save(path, x.astype(dtype))."
        )
    return array


def batch_indices(n_items: int, batch_size: int, *, order: str = "contiguous") -> list[np.ndarray]:
    """Item indices of every batch; the last batch keeps the remainder (nothing dropped).

    ``order="random"`` is one fixed permutation (``numpy.random.default_rng(0)``).

    Example:
      >>> [b.tolist() for b in batch_indices(5, 2)]
      [[0, 1], [2, 3], [4]]
    """
    if isinstance(n_items, bool) or not isinstance(n_items, (int, np.integer)) or n_items < 0:
        raise ValueError(f"`n_items` must be an int >= 0, got n_items={n_items!r}.")
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
    """Yields the dataset as device batches, loaded one way; the remainder is the last batch.

    Args:
      method: ``"per_item"`` (one file per item), ``"bulk"`` (one file read whole) or
        ``"mmap"`` (the bulk file memory-mapped: only the rows a batch needs are read).
      order: ``"contiguous"`` or ``"random"`` (see :func:`batch_indices`).
      transfer: ``"batch"`` (one ``device_put`` per batch) or ``"item"`` (one per item,
        then one ``jnp.stack``), to the default device.
    """
    if not isinstance(dataset, Dataset):
        raise TypeError(
            f"`dataset` must be a Dataset from make_dataset(...), got {type(dataset).__name__} "
            f"{dataset!r:.40}."
        )
    check_choice(method, "method", METHODS)
    check_choice(transfer, "transfer", TRANSFERS)
    _not_a_folder("`dataset`'s directory", dataset.directory)
    batches = batch_indices(dataset.n_items, batch_size, order=order)
    item = dict(shape=dataset.item_shape, dtype=dataset.dtype)
    if method != "per_item":
        shape = (dataset.n_items, *dataset.item_shape)
        source = load_npy(
            dataset.bulk_path, mmap=method == "mmap", shape=shape, dtype=dataset.dtype
        )
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
