"""Live memory: what the device allocator and the host report right now; and what this machine
can measure (:func:`environment`: JAX, backend, devices, memory sources, allocator)."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, fields

import jax
import jaxlib
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
    bytes_reserved: int | None = None  # TPU: loaded programs' temporaries (notebook 06)
    peak_bytes_reserved: int | None = None
    source: str = "device memory stats (jax.Device.memory_stats())"
    _inline = True

    def _room(self, capacity: int | None) -> int | None:
        if capacity is None or self.bytes_in_use is None:
            return None
        return max(capacity - self.bytes_in_use, 0)

    @property
    def room_bytes(self) -> int | None:
        """What the allocator can still hand out: ``bytes_limit - bytes_in_use``."""
        return self._room(self.bytes_limit or self.pool_bytes)

    @property
    def free_in_pool_bytes(self) -> int | None:
        """Free bytes inside the pool reserved so far: ``pool_bytes - bytes_in_use``."""
        return self._room(self.pool_bytes or self.bytes_limit)

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
    """The first device's allocator figures, or ``None`` where it keeps none (CPU).

    Returns:
      A :class:`DeviceMemory` (bytes in use, peak, limit, largest free block, pool; a figure the
      backend does not report is ``None``), or ``None`` where ``memory_stats()`` gives nothing.
    """
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


ALLOCATOR_VARIABLES = {
    "XLA_PYTHON_CLIENT_PREALLOCATE": "unset: true on GPU -- 75% of device memory reserved at start",
    "XLA_PYTHON_CLIENT_MEM_FRACTION": "unset: 0.75 of device memory when preallocating",
    "XLA_CLIENT_MEM_FRACTION": "unset: newer spelling of XLA_PYTHON_CLIENT_MEM_FRACTION",
    "XLA_PYTHON_CLIENT_ALLOCATOR": "unset: 'default' (BFC pool); 'platform' allocates on demand",
    "XLA_FLAGS": "unset",
    "JAX_PLATFORMS": "unset: JAX picks GPU/TPU when present, else CPU",
}


@dataclass(frozen=True)
class Environment(Rows):
    """A snapshot of what JAX sees and which memory figures it can give."""

    python: str
    jax_version: str
    jaxlib_version: str
    backend: str
    devices: tuple[str, ...]
    memory_sources: tuple[tuple[str, str, str], ...]  # (figure, available?, source)
    allocator_settings: tuple[tuple[str, str], ...]

    def _tables(self) -> list:
        versions = f"Python {self.python}, jax {self.jax_version}, jaxlib {self.jaxlib_version}"
        where = f"{versions}; backend: {self.backend}; devices: {', '.join(self.devices)}"
        sources = f"{where}. Memory and runtime figures on this backend"
        allocator = "Allocator settings in force (read once, when JAX starts)"
        return [
            (sources, self.memory_sources, ("figure", "available", "source")),
            (allocator, self.allocator_settings, ("variable", "value")),
        ]


def environment() -> Environment:
    """Describes JAX, its backend and devices, memory sources and allocator settings.

    Returns:
      An :class:`Environment`: Python, jax and jaxlib versions, the backend, its devices, which
      memory figures this machine can give (and from where) and the allocator's variables.
    """
    unavailable = device_memory_unavailable_reason()
    live = "jax.Device.memory_stats(): bytes_in_use, peak, limit, largest free block"
    plan = "compiled memory analysis: jit(f).lower(...).compile().memory_analysis()"
    sources = (
        ("runtime", "yes", "wall clock around jax.block_until_ready, compile time kept apart"),
        ("planned memory", "yes", plan),
        ("flops, bytes accessed", "yes", "compiled cost analysis: .cost_analysis()"),
        ("live device memory", "no" if unavailable else "yes", unavailable or live),
        ("live arrays", "yes", "bytes of jax.live_arrays()"),
        ("host memory", "yes", "host process resident set size (psutil)"),
        ("compilations", "yes", "jax.monitoring compile events (count_compiles)"),
    )
    versions = (platform.python_version(), jax.__version__, getattr(jaxlib, "__version__", "?"))
    devices = tuple(f"{d.platform}:{d.id} ({d.device_kind})" for d in jax.devices())
    settings = tuple((k, os.environ.get(k, d)) for k, d in ALLOCATOR_VARIABLES.items())
    return Environment(*versions, jax.default_backend(), devices, sources, settings)
