"""Live memory: what the device allocator and the host report right now."""

from __future__ import annotations

from dataclasses import dataclass, fields

import jax
import psutil

from batchlab._util.format import Rows, format_bytes


@dataclass(frozen=True)
class DeviceMemory(Rows):
    """Normalized ``jax.Device.memory_stats()`` (GPU/TPU allocator counters); absent: ``None``."""

    device: str
    bytes_in_use: int | None = None
    peak_bytes_in_use: int | None = None
    bytes_limit: int | None = None
    largest_free_block_bytes: int | None = None
    pool_bytes: int | None = None
    source: str = "device memory stats (jax.Device.memory_stats())"
    _inline = True

    def _room(self, capacity: int | None) -> int | None:
        if capacity is None or self.bytes_in_use is None:
            return None
        return max(capacity - self.bytes_in_use, 0)

    #: what the allocator can still hand out: ``bytes_limit - bytes_in_use``
    room_bytes = property(lambda self: self._room(self.bytes_limit or self.pool_bytes))
    #: free bytes inside the pool reserved so far: ``pool_bytes - bytes_in_use``
    free_in_pool_bytes = property(lambda self: self._room(self.pool_bytes or self.bytes_limit))

    @property
    def fragmentation(self) -> float | None:
        """Share of the pool's free memory that lies outside the largest free block."""
        free, largest = self.free_in_pool_bytes, self.largest_free_block_bytes
        if free is None or largest is None:
            return None
        return max(0.0, 1.0 - min(largest, free) / free) if free else 0.0

    def _rows(self) -> list[tuple[str, str]]:
        values = {k: getattr(self, k) for k in DEVICE_KEYS}
        rows = [(k, format_bytes(v)) for k, v in values.items() if v is not None]
        if self.fragmentation is not None:
            rows.append(("fragmentation", f"{self.fragmentation:.1%}"))
        return rows

    def _title(self) -> str:
        return f"{self.device}, {self.source}"


DEVICE_KEYS = tuple(f.name for f in fields(DeviceMemory))[1:-1]


def device_memory() -> DeviceMemory | None:
    """The first device's allocator figures, or ``None`` where it keeps none (CPU)."""
    dev = jax.devices()[0]
    try:
        stats = dev.memory_stats()
    except Exception:  # some plugins raise instead of returning None
        stats = None
    if not stats:
        return None
    return DeviceMemory(str(dev), **{k: int(stats[k]) for k in DEVICE_KEYS if k in stats})


def device_memory_unavailable_reason() -> str | None:
    """Why :func:`device_memory` returns ``None`` here, or ``None`` if it does not."""
    if device_memory() is not None:
        return None
    return (
        f"memory_stats() is None on {jax.devices()[0].platform}: this backend keeps no "
        "allocator statistics; use live_memory() (live JAX arrays, host RSS) instead"
    )


@dataclass(frozen=True)
class LiveMemory(Rows):
    """Bytes held by live JAX arrays, and the host process's resident memory."""

    live_array_bytes: int
    live_array_count: int
    host_rss_bytes: int | None
    source: str = "jax.live_arrays() (array bytes) and host process RSS (psutil)"
    _inline = True

    def _title(self) -> str:
        return self.source

    def _rows(self) -> list[tuple[str, str]]:
        arrays = f"{self.live_array_count} holding {format_bytes(self.live_array_bytes)}"
        return [("live arrays", arrays), ("host process RSS", format_bytes(self.host_rss_bytes))]


def live_memory() -> LiveMemory:
    """Bytes of every live JAX array, and the host process's RSS."""
    sizes = [int(a.nbytes) for a in jax.live_arrays() if not a.is_deleted()]
    return LiveMemory(sum(sizes), len(sizes), int(psutil.Process().memory_info().rss))
