"""What this machine can measure: JAX, backend, devices, memory sources, allocator."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass

import jax
import jaxlib

from batchlab._util.format import Rows
from batchlab.measuring.live import device_memory_unavailable_reason

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
    """Describes JAX, its backend and devices, memory sources and allocator settings."""
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
