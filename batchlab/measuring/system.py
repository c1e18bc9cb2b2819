"""What this machine can measure: JAX, backend, devices, memory sources, allocator."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass

import jax

from batchlab._util.format import html_table, text_table
from batchlab.measuring.live import device_memory, device_memory_unavailable_reason

ALLOCATOR_VARIABLES = {
    "XLA_PYTHON_CLIENT_PREALLOCATE": "unset: true on GPU -- 75% of device memory is reserved at start-up",
    "XLA_PYTHON_CLIENT_MEM_FRACTION": "unset: 0.75 of device memory when preallocating",
    "XLA_CLIENT_MEM_FRACTION": "unset: newer spelling of XLA_PYTHON_CLIENT_MEM_FRACTION",
    "XLA_PYTHON_CLIENT_ALLOCATOR": "unset: 'default' (BFC pool); 'platform' allocates and frees on demand",
    "XLA_FLAGS": "unset",
    "JAX_PLATFORMS": "unset: JAX picks GPU/TPU when present, else CPU",
}


@dataclass(frozen=True)
class Environment:
    """A snapshot of what JAX sees and which memory figures it can give."""

    python: str
    jax_version: str
    jaxlib_version: str
    backend: str
    devices: tuple[str, ...]
    memory_sources: tuple[tuple[str, str, str], ...]  # (figure, available?, source)
    allocator_settings: tuple[tuple[str, str], ...]

    @property
    def has_device_memory_stats(self) -> bool:
        return any(
            fig == "live device memory" and ok == "yes" for fig, ok, _ in self.memory_sources
        )

    def __str__(self) -> str:
        lines = [
            f"Python {self.python}, jax {self.jax_version}, jaxlib {self.jaxlib_version}",
            f"backend: {self.backend}; devices: {', '.join(self.devices)}",
            "",
            "Memory and runtime figures on this backend:",
            text_table(self.memory_sources, header=("figure", "available", "source")),
            "",
            "Allocator settings in force (read once, when JAX starts):",
            text_table(self.allocator_settings, header=("variable", "value")),
        ]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        head = (
            f"<p><b>jax {self.jax_version}</b> (jaxlib {self.jaxlib_version}), Python {self.python}; "
            f"backend <b>{self.backend}</b>; devices: {', '.join(self.devices)}</p>"
        )
        return (
            head
            + html_table(
                self.memory_sources,
                header=("figure", "available", "source"),
                caption="Where the numbers come from on this machine",
            )
            + html_table(
                self.allocator_settings,
                header=("variable", "value"),
                caption="Allocator settings in force",
            )
        )


def memory_sources(device=None) -> tuple[tuple[str, str, str], ...]:
    """Which measurement sources this backend offers, as (figure, yes/no, source) rows."""
    stats = device_memory(device)
    live_source = (
        "jax.Device.memory_stats(): bytes_in_use, peak, limit, largest free block"
        if stats is not None
        else device_memory_unavailable_reason(device)
    )
    return (
        ("runtime", "yes", "wall clock around jax.block_until_ready, compile time kept apart"),
        (
            "planned memory",
            "yes",
            "compiled memory analysis: jit(f).lower(...).compile().memory_analysis()",
        ),
        ("flops, bytes accessed", "yes", "compiled cost analysis: .cost_analysis()"),
        ("live device memory", "yes" if stats is not None else "no", live_source),
        ("live arrays", "yes", "bytes of jax.live_arrays()"),
        ("host memory", "yes", "host process resident set size (psutil)"),
        ("compilations", "yes", "jax.monitoring compile events (count_compiles)"),
    )


def allocator_settings() -> tuple[tuple[str, str], ...]:
    """The allocator environment variables and their values (or what unset means)."""
    return tuple((k, os.environ.get(k, default)) for k, default in ALLOCATOR_VARIABLES.items())


def environment() -> Environment:
    """Describes JAX, its backend and devices, memory sources and allocator settings.

    Example:
      >>> env = environment()
      >>> env.backend in {"cpu", "gpu", "tpu"}
      True
      >>> env.has_device_memory_stats == (env.backend != "cpu")
      True
    """
    import jaxlib

    devices = tuple(
        f"{d.platform}:{d.id} ({getattr(d, 'device_kind', '?')})" for d in jax.devices()
    )
    return Environment(
        python=platform.python_version(),
        jax_version=jax.__version__,
        jaxlib_version=getattr(jaxlib, "__version__", "?"),
        backend=jax.default_backend(),
        devices=devices,
        memory_sources=memory_sources(),
        allocator_settings=allocator_settings(),
    )
