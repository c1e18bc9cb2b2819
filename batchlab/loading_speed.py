"""Loading speed, measured: items/s and bytes/s next to this machine's ceiling.

Seed 004 (pitfall 4) says inefficient loading hurts and that bulk loading
and good access patterns help. :func:`measure_loading` times full passes
over a :class:`batchlab.loading.Dataset` for one combination of method
(per item / bulk / memory-mapped), order (contiguous / random) and
transfer (per batch / per item), and :func:`measure_ceiling` measures, in
the same run, what the machine can do at best with the same bytes: a plain
``np.copy`` in memory and a sequential read of the file. Every figure is
wall clock (``time.perf_counter``), median of passes.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from ._checks import check_positive_int
from ._format import format_count, html_table
from .loading import Dataset, iter_batches, load_npy


def format_rate(bytes_per_s: float) -> str:
    """Bytes per second in decimal units, as disk and network figures are quoted.

    Example:
      >>> format_rate(2.5e9)
      '2.50 GB/s'
    """
    return f"{format_count(bytes_per_s)}B/s"


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
      >>> from batchlab.loading import make_dataset
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
      >>> from batchlab.loading import make_dataset
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
