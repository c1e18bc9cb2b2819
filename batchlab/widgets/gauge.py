"""A memory gauge: live device memory on a GPU/TPU, the bytes of live JAX arrays on a CPU."""

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
        """Reads the figures now; a backend without allocator statistics says so (never faked)."""
        stats, arrays = device_memory(), live_memory().live_array_bytes
        if stats is not None and stats.bytes_in_use is not None:
            return GaugeReading(
                stats.device, True, stats.bytes_in_use, arrays, "live device figures"
            )
        dev = jax.devices()[0]
        note = f"no live device figures on {dev.platform}: showing the bytes of live JAX arrays"
        return GaugeReading(f"{dev.platform}:{dev.id}", False, None, arrays, note)
