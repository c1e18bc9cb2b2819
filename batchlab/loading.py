"""Loading batches from disk: per item, in bulk, memory-mapped -- next to the machine's ceiling.

Seed 004 (pitfall 4) says inefficient loading hurts and that bulk loading
and good access patterns help. This module lets a notebook measure it:

* **method** -- ``"per_item"`` opens one ``.npy`` file per item;
  ``"bulk"`` reads one ``.npy`` whole and slices it; ``"mmap"``
  memory-maps that file and slices it per batch (only touched pages load).
* **order** -- ``"contiguous"`` batches are neighbouring rows;
  ``"random"`` batches gather rows from all over the file.
* **transfer** -- ``"batch"``: one ``jax.device_put`` per batch;
  ``"item"``: one per item, then ``jnp.stack`` on the device.

Every figure is items/s and bytes/s (wall clock, ``time.perf_counter``),
and :func:`measure_ceiling` measures, in the same run, what this machine
can do at best with the same bytes: a plain ``np.copy`` in memory and a
sequential read of the file. Loaders never unpickle (``allow_pickle=False``)
and name the file and what was expected when one is missing, corrupt or of
the wrong shape.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._checks import check_positive_int
from ._format import format_bytes, format_count, html_table

METHODS = ("per_item", "bulk", "mmap")
ORDERS = ("contiguous", "random")
TRANSFERS = ("batch", "item")


def format_rate(bytes_per_s: float) -> str:
    """Bytes per second in decimal units, as disk and network figures are quoted.

    Example:
      >>> format_rate(2.5e9)
      '2.50 GB/s'
    """
    return f"{format_count(bytes_per_s)}B/s"


def _check_choice(value: Any, name: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ValueError(f"`{name}` must be one of {list(choices)}, got {name}={value!r}.")
    return value


@dataclass(frozen=True)
class Dataset:
    """The same items stored two ways: one ``.npy`` per item, and one bulk ``.npy``.

    ``directory`` holds ``bulk.npy`` (shape ``(n_items, *item_shape)``) and
    ``items/000000.npy`` ... (shape ``item_shape`` each).
    """

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


def make_dataset(
    directory: str | Path,
    n_items: int,
    item_shape: Sequence[int],
    *,
    dtype: str = "float32",
    seed: int = 0,
) -> Dataset:
    """Writes ``n_items`` random items as per-item files and as one bulk file.

    Args:
      directory: where to write (created if missing); use a temporary directory.
      n_items: number of items (rows).
      item_shape: shape of one item, e.g. ``(256,)``.
      dtype: numpy dtype name.
      seed: seed of the ``numpy.random.default_rng`` that draws the values.

    Returns:
      A :class:`Dataset`.

    Raises:
      ValueError: ``n_items`` below 1 or a negative ``item_shape`` entry.

    Example:
      >>> import tempfile
      >>> d = make_dataset(tempfile.mkdtemp(), 4, (3,))
      >>> d
      Dataset(4 items of float32[3], 12 B each, 48 B in all; 4 per-item .npy files + one bulk .npy)
      >>> load_npy(d.item_path(2), shape=(3,), dtype="float32").shape
      (3,)
    """
    check_positive_int(n_items, "n_items")
    item_shape = tuple(int(s) for s in item_shape)
    if any(s < 0 for s in item_shape):
        raise ValueError(f"`item_shape` must hold sizes >= 0, got item_shape={item_shape}.")
    directory = Path(directory)
    (directory / "items").mkdir(parents=True, exist_ok=True)
    data = np.random.default_rng(seed).standard_normal((n_items, *item_shape)).astype(dtype)
    dataset = Dataset(directory, n_items, item_shape, np.dtype(dtype).name)
    np.save(dataset.bulk_path, data, allow_pickle=False)
    for i in range(n_items):
        np.save(dataset.item_path(i), data[i], allow_pickle=False)
    return dataset


def load_npy(
    path: str | Path, *, shape: Sequence[int] | None = None, dtype: Any = None, mmap: bool = False
) -> np.ndarray:
    """Loads one ``.npy`` file safely: no pickles, and the shape and dtype checked.

    Args:
      path: the file.
      shape: the expected shape (``None``: any).
      dtype: the expected dtype (``None``: any).
      mmap: memory-map read-only instead of reading the whole file.

    Returns:
      The array (a read-only ``np.memmap`` when ``mmap``).

    Raises:
      FileNotFoundError: the file does not exist.
      ValueError: the file holds a pickle or object array, is not a valid
        ``.npy`` file (corrupt, truncated), or its shape or dtype differ.

    Example:
      >>> import tempfile, os
      >>> p = os.path.join(tempfile.mkdtemp(), "x.npy"); np.save(p, np.zeros((2, 3)))
      >>> load_npy(p, shape=(2, 3), dtype="float64").sum()
      np.float64(0.0)
    """
    path = Path(path)
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
    if magic[:1] == b"\x80" or magic[:2] == b"PK":
        kind = "a pickle" if magic[:1] == b"\x80" else "an .npz archive (a zip of arrays)"
        raise ValueError(
            f"`path` {path} is {kind}, not a .npy file; expected {want}. batchlab reads "
            "plain .npy files only and never unpickles. Save with np.save(path, array)."
        )
    if magic != b"\x93NUMPY":
        raise ValueError(
            f"`path` {path} is not a valid .npy file (it does not start with the .npy "
            f"magic bytes, got {magic!r}); expected {want}. Is it corrupt, or another format? "
            "Regenerate it with np.save(path, array)."
        )
    try:
        array = np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None)
    except ValueError as e:
        if "pickle" in str(e) or "Object arrays" in str(e):
            raise ValueError(
                f"`path` {path} holds pickled Python objects (an object array); batchlab refuses "
                "pickles (allow_pickle=False) because unpickling can run arbitrary code. Save plain "
                f"arrays instead: np.save(path, np.asarray(x, dtype=...)). Expected {want}."
            ) from e
        raise ValueError(
            f"`path` {path} is not a valid .npy file ({e}); expected {want}. "
            "Regenerate it with np.save(path, array)."
        ) from e
    except (OSError, EOFError) as e:
        raise ValueError(
            f"`path` {path} is corrupt or truncated ({e}); expected a .npy file "
            f"holding {want}. Regenerate it with np.save(path, array)."
        ) from e
    if shape is not None and tuple(array.shape) != tuple(shape):
        raise ValueError(
            f"`path` {path} holds an array of shape {list(array.shape)}, expected "
            f"{want}. Was it written for a different dataset?"
        )
    if dtype is not None and array.dtype != np.dtype(dtype):
        raise ValueError(
            f"`path` {path} holds dtype {array.dtype.name}, expected {want}. "
            "Convert when saving: np.save(path, x.astype(dtype))."
        )
    return array


def batch_indices(
    n_items: int, batch_size: int, *, order: str = "contiguous", seed: int = 0
) -> list[np.ndarray]:
    """Item indices of every batch; the last batch keeps the remainder (nothing dropped).

    Example:
      >>> [b.tolist() for b in batch_indices(5, 2)]
      [[0, 1], [2, 3], [4]]
    """
    if isinstance(n_items, bool) or not isinstance(n_items, (int, np.integer)) or n_items < 0:
        raise ValueError(f"`n_items` must be an int >= 0, got n_items={n_items!r}.")
    check_positive_int(batch_size, "batch_size")
    _check_choice(order, "order", ORDERS)
    index = np.arange(n_items)
    if order == "random":
        index = np.random.default_rng(seed).permutation(n_items)
    return [index[i : i + batch_size] for i in range(0, n_items, batch_size)]


def iter_batches(
    dataset: Dataset,
    batch_size: int,
    *,
    method: str = "bulk",
    order: str = "contiguous",
    transfer: str = "batch",
    seed: int = 0,
    device: Any = None,
) -> Iterator[jax.Array]:
    """Yields the dataset as device batches, loaded one way; the remainder is the last batch.

    Args:
      dataset: a :class:`Dataset`.
      batch_size: items per batch.
      method: ``"per_item"``, ``"bulk"`` or ``"mmap"`` (see the module docstring).
      order: ``"contiguous"`` or ``"random"`` (a fixed permutation from ``seed``).
      transfer: ``"batch"`` (one ``device_put`` per batch) or ``"item"``.
      seed: the permutation's seed for ``order="random"``.
      device: target of ``jax.device_put`` (``None``: the default device).

    Raises:
      ValueError: an unknown ``method``/``order``/``transfer``; a file is missing,
        corrupt or mismatched (from :func:`load_npy`).

    Example:
      >>> import tempfile
      >>> d = make_dataset(tempfile.mkdtemp(), 5, (2,))
      >>> [b.shape for b in iter_batches(d, 2, method="per_item", order="random")]
      [(2, 2), (2, 2), (1, 2)]
    """
    _check_choice(method, "method", METHODS)
    _check_choice(transfer, "transfer", TRANSFERS)
    batches = batch_indices(dataset.n_items, batch_size, order=order, seed=seed)
    expect = dict(shape=(dataset.n_items, *dataset.item_shape), dtype=dataset.dtype)
    if method == "bulk":
        source = load_npy(dataset.bulk_path, **expect)
    elif method == "mmap":
        source = load_npy(dataset.bulk_path, mmap=True, **expect)
    for idx in batches:
        if method == "per_item":
            rows = [
                load_npy(dataset.item_path(int(i)), shape=dataset.item_shape, dtype=dataset.dtype)
                for i in idx
            ]
        elif order == "contiguous":
            rows = source[int(idx[0]) : int(idx[-1]) + 1]  # a slice: no gather
        else:
            rows = source[idx]  # a gather from all over the array/file
        if transfer == "batch":
            yield jax.device_put(
                np.stack(rows) if isinstance(rows, list) else np.asarray(rows), device
            )
        else:
            yield jnp.stack([jax.device_put(np.asarray(r), device) for r in rows])


@dataclass(frozen=True)
class Throughput:
    """One way of loading, measured: items and bytes per second (median of ``runs`` passes)."""

    label: str
    items: int
    bytes: int
    seconds: float
    runs: int
    source: str = "wall clock (time.perf_counter) around a full pass, median of passes"

    @property
    def items_per_s(self) -> float:
        return self.items / self.seconds if self.seconds > 0 else float("inf")

    @property
    def bytes_per_s(self) -> float:
        return self.bytes / self.seconds if self.seconds > 0 else float("inf")

    def __repr__(self) -> str:
        return (
            f"Throughput({self.label}: {format_count(self.items_per_s)} items/s, "
            f"{format_rate(self.bytes_per_s)})"
        )


def _time_passes(run_once, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run_once()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure_loading(
    dataset: Dataset,
    batch_size: int,
    *,
    method: str = "bulk",
    order: str = "contiguous",
    transfer: str = "batch",
    step: Any = None,
    prefetch: int = 0,
    repeat: int = 3,
    seed: int = 0,
) -> Throughput:
    """Times full passes over ``dataset`` loaded one way (and, optionally, computed on).

    Args:
      dataset, batch_size, method, order, transfer, seed: as in :func:`iter_batches`.
      step: ``step(batch)`` run on every batch (``None``: load only). Its result
        is waited for with ``jax.block_until_ready``.
      prefetch: batches loaded ahead in a background thread (0: none), see
        :func:`batchlab.prefetch`.
      repeat: number of passes; the median is kept.

    Returns:
      A :class:`Throughput`.

    Example:
      >>> import tempfile
      >>> d = make_dataset(tempfile.mkdtemp(), 8, (4,))
      >>> t = measure_loading(d, 4, method="mmap", repeat=1)
      >>> t.items, t.bytes, t.items_per_s > 0
      (8, 128, True)
    """
    from .prefetch import prefetch as _prefetch

    check_positive_int(repeat, "repeat")
    if isinstance(prefetch, bool) or not isinstance(prefetch, int) or prefetch < 0:
        raise ValueError(
            f"`prefetch` must be an int >= 0 (batches ahead), got prefetch={prefetch!r}."
        )
    work = step if step is not None else (lambda b: b)

    def run_once() -> None:
        batches = iter_batches(
            dataset, batch_size, method=method, order=order, transfer=transfer, seed=seed
        )
        if prefetch:
            batches = _prefetch(batches, size=prefetch)
        for b in batches:
            jax.block_until_ready(work(b))

    run_once()  # warm-up: compiles `step`, fills the page cache
    label = f"{method}, {order}, transfer per {transfer}, batch {batch_size}"
    label += f", prefetch {prefetch}" if prefetch else ""
    return Throughput(
        label, dataset.n_items, dataset.total_bytes, _time_passes(run_once, repeat), repeat
    )


@dataclass(frozen=True)
class Ceiling:
    """What this machine does at best with the dataset's bytes, measured in the same run."""

    memcpy: Throughput
    file_read: Throughput

    def __repr__(self) -> str:
        return (
            f"Ceiling(np.copy in memory: {format_rate(self.memcpy.bytes_per_s)}; sequential "
            f"read of the bulk file: {format_rate(self.file_read.bytes_per_s)})"
        )

    def _repr_html_(self) -> str:
        rows = [
            (t.label, format_rate(t.bytes_per_s), f"{format_count(t.items_per_s)} items/s")
            for t in (self.memcpy, self.file_read)
        ]
        return html_table(
            rows,
            header=("ceiling", "bytes/s", "items/s"),
            caption="Ceiling (wall clock, median of passes)",
        )


def measure_ceiling(dataset: Dataset, *, repeat: int = 5) -> Ceiling:
    """Measures the ceiling: ``np.copy`` of the same bytes, and a sequential file read.

    The file read goes through the operating system's page cache, so right
    after :func:`make_dataset` it measures memory, not the disk: a cold read
    from a real disk is slower.

    Example:
      >>> import tempfile
      >>> c = measure_ceiling(make_dataset(tempfile.mkdtemp(), 8, (4,)), repeat=1)
      >>> c.memcpy.bytes, c.file_read.bytes
      (128, 128)
    """
    check_positive_int(repeat, "repeat")
    data = load_npy(
        dataset.bulk_path, shape=(dataset.n_items, *dataset.item_shape), dtype=dataset.dtype
    )
    size = dataset.bulk_path.stat().st_size
    buffer = bytearray(min(size, 1 << 22))

    def read_file() -> None:
        with open(dataset.bulk_path, "rb", buffering=0) as f:
            while f.readinto(buffer):
                pass

    copy = _time_passes(lambda: np.copy(data), repeat)
    read = _time_passes(read_file, repeat)
    n, total = dataset.n_items, dataset.total_bytes
    return Ceiling(
        Throughput("np.copy in memory", n, total, copy, repeat),
        Throughput("sequential read of the bulk file (page cache)", n, total, read, repeat),
    )
