"""A memory gauge: live device memory on a GPU/TPU, the bytes of live JAX arrays on a CPU.

The CPU backend keeps no allocator statistics (``memory_stats()`` is ``None``): there the
reading says so; a figure a backend cannot give is absent, never faked.
"""

from __future__ import annotations

from typing import NamedTuple

import jax

from batchlab.measuring.live import device_memory, live_memory


class GaugeReading(NamedTuple):
    """One reading; ``live``: the allocator gave live figures (GPU/TPU), else ``in_use_bytes`` is None."""

    device: str
    live: bool
    in_use_bytes: int | None
    live_array_bytes: int
    note: str


class MemoryGauge:
    """Device memory of the first device: ``MemoryGauge().read()``."""

    def read(self) -> GaugeReading:
        """Reads the figures now."""
        stats, arrays = device_memory(), live_memory().live_array_bytes
        if stats is not None:
            used = stats.bytes_in_use
            return GaugeReading(stats.device, used is not None, used, arrays, "live device figures")
        dev = jax.devices()[0]
        note = (
            f"no live device figures: memory_stats() is None on {dev.platform}; "
            "showing the bytes of live JAX arrays"
        )
        return GaugeReading(f"{dev.platform}:{dev.id}", False, None, arrays, note)
