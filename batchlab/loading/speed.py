"""Loading speed, measured: items/s and bytes/s next to this machine's ceiling."""

from __future__ import annotations

import glob
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import numpy as np

from batchlab._util.checks import check_bool, check_int, check_positive_float, check_positive_int
from batchlab._util.format import Rows, format_bytes, format_count
from batchlab.loading.files import Dataset, iter_batches
from batchlab.loading.prefetching import prefetch as prefetch_batches
from batchlab.measuring.sampler import interleaved


def format_rate(bytes_per_s: float) -> str:
    """Bytes per second in decimal units (``2.50 GB/s``), as disk and network figures are quoted."""
    return f"{format_count(bytes_per_s)}B/s"


@dataclass(frozen=True)
class Throughput:
    """One way of loading, measured: items and bytes per second (best of ``runs`` passes)."""

    label: str
    items: int
    bytes: int
    seconds: float
    runs: int
    slowest: float | None = None  # the slowest pass, for the spread a plot draws

    items_per_s: float = field(init=False)
    bytes_per_s: float = field(init=False)
    slowest_bytes_per_s: float = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "items_per_s", self.items / self.seconds)
        object.__setattr__(self, "bytes_per_s", self.bytes / self.seconds)
        object.__setattr__(self, "slowest_bytes_per_s", self.bytes / (self.slowest or self.seconds))

    def __repr__(self) -> str:
        return (
            f"Throughput({self.label}: {format_count(self.items_per_s)} items/s, "
            f"{format_rate(self.bytes_per_s)})"
        )


def measure_loading(
    dataset: Dataset,
    batch_size: int,
    *,
    method: str = "bulk",
    order: str = "contiguous",
    transfer: str = "batch",
    step: Any = None,
    prefetch: int = 0,
    sync: bool = False,
    repeat: int = 3,
    max_time: float | None = None,
) -> Throughput:
    """Best of ``repeat`` timed passes over ``dataset`` loaded as :func:`iter_batches` does.

    ``step(batch)`` runs on every batch (``None``: load only), ``prefetch`` batches ahead
    (:func:`prefetch`), waiting for each result when ``sync``; no pass starts after
    ``max_time`` seconds (``Throughput.runs`` says how many ran).
    """
    check_positive_int(repeat, "repeat")
    if max_time is not None:
        check_positive_float(max_time, "max_time")
    check_bool(sync, "sync")
    check_int(prefetch, "prefetch")

    def run_once() -> None:
        batches = iter_batches(dataset, batch_size, method=method, order=order, transfer=transfer)
        out = None
        for batch in prefetch_batches(batches, size=prefetch) if prefetch else batches:
            out = step(batch) if step else batch
            if sync:
                jax.block_until_ready(out)
        jax.block_until_ready(out)  # else JAX's async dispatch overlaps loads with steps

    run_once()  # warm-up: compiles `step`, fills the page cache
    times: list[float] = []
    while len(times) < repeat and not (max_time is not None and sum(times) >= max_time):
        t0 = time.perf_counter()
        run_once()
        times.append(time.perf_counter() - t0)
    label = f"{method}, {order}, transfer per {transfer}, batch {batch_size}"
    label += f", prefetch {prefetch}" if prefetch else ""
    label += ", sync every step" if sync else ""  # also load only: it waits for each transfer
    n, size = dataset.n_items, dataset.total_bytes
    return Throughput(label, n, size, min(times), len(times), slowest=max(times))


def last_level_cache_bytes() -> int | None:
    """Size of the CPU's largest cache (Linux sysfs), ``None`` where the OS does not say."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    sizes = []
    for path in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*/size"):
        text = Path(path).read_text().strip().upper()  # e.g. "32K"
        if text.rstrip("KMG").isdigit():
            sizes.append(int(text.rstrip("KMG")) * units.get(text[-1:], 1))
    return max(sizes, default=None)


@dataclass(frozen=True)
class Ceiling(Rows):
    """What this machine does at best with bytes, measured once per run (best of passes)."""

    memcpy: Throughput
    file_read: Throughput
    bytes: int
    cache_bytes: int | None

    _header = ("ceiling", "bytes/s")
    _inline = True

    @property
    def beyond_cache(self) -> bool:
        """True when the measured bytes exceed the last-level cache (RAM, not cache bandwidth)."""
        return self.cache_bytes is not None and self.bytes > self.cache_bytes

    def _title(self) -> str:
        return "wall clock, best of passes"

    def _rows(self) -> list[tuple[str, str]]:
        return [(t.label, format_rate(t.bytes_per_s)) for t in (self.memcpy, self.file_read)]


def measure_ceiling(dataset: Dataset, *, repeat: int = 5) -> Ceiling:
    """Measures RAM's ceiling: a memcpy and a sequential file read of 4x the last-level cache,
    interleaved one pass each per round so a burst slows both alike."""
    check_positive_int(repeat, "repeat")
    cache = last_level_cache_bytes()
    target = 4 * (cache or (32 << 20))
    item = max(dataset.item_bytes, 1)
    nbytes = max(dataset.total_bytes, -(-target // item) * item)
    data = np.ones(nbytes, dtype=np.uint8)
    dest = np.zeros_like(data)  # written once first: the timed copies pay no page faults
    path = dataset.directory / "ceiling.bin"
    data.tofile(path)
    buffer = bytearray(min(nbytes, 1 << 22))

    def read_file() -> None:
        with open(path, "rb", buffering=0) as f:
            while f.readinto(buffer):
                pass

    calls = {"memcpy": lambda: np.copyto(dest, data), "read": read_file}
    options = dict(rounds=max(2, repeat), passes=1, max_seconds=3600.0, min_sample_time=1e-9)
    try:
        timed = interleaved(calls, **options)
    finally:
        path.unlink(missing_ok=True)
    size, n = format_bytes(nbytes), nbytes // item
    where = f"> the {format_bytes(cache)} cache: RAM" if cache else "size of the cache unknown"
    labels = {"memcpy": f"memcpy (np.copyto) of {size} ({where})"}
    labels["read"] = f"sequential read of a {size} file (page cache, unverified)"
    copy, read = (Throughput(v, n, nbytes, timed[k].fastest, repeat) for k, v in labels.items())
    return Ceiling(copy, read, nbytes, cache)
