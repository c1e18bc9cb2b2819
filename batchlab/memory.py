"""Where memory figures come from: the compiled plan, the device, the host.

Three honest sources, never mixed silently:

* :func:`memory_estimate` -- XLA's *compiled memory analysis* of one
  function for one set of input shapes. Nothing runs. Available on every
  backend (CPU included).
* :func:`device_memory` -- the allocator's live counters from
  ``jax.Device.memory_stats()``. GPU/TPU only; ``None`` on CPU, with the
  reason from :func:`device_memory_unavailable_reason`.
* :func:`live_memory` -- bytes held by live JAX arrays (``jax.live_arrays()``)
  and the host process's resident set size. Available everywhere; on CPU
  these are the only live figures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax

from ._compile import compile_fn
from ._format import format_bytes, format_count, html_table

PEAK_FROM_XLA = "XLA peak_memory_in_bytes"
PEAK_FROM_SUM = "argument + output + temp - alias"
PEAK_SUM_ABOVE_XLA = (
    "argument + output + temp - alias: XLA's peak_memory_in_bytes is lower, it leaves out "
    "the temp allocation on this backend (see xla_peak_bytes)"
)
PEAK_NO_XLA = "argument + output + temp - alias (this jax has no peak_memory_in_bytes)"


@dataclass(frozen=True)
class MemoryEstimate:
    """XLA's compiled memory plan for one function and one set of input shapes.

    All sizes are bytes on the device (``host_*`` buffers are not counted).
    ``alias_bytes`` are output bytes that reuse (donated) input buffers.

    ``peak_bytes`` is XLA's own ``peak_memory_in_bytes`` when this jax
    provides it and it covers every buffer of one execution; otherwise the
    sum ``argument + output + temp - alias``. XLA allocates the temp buffer
    as one block for the whole execution, next to the live arguments, so
    that sum is what one call occupies. Measured on the CPU backend of jax
    0.10: ``peak_memory_in_bytes`` leaves the temp block out (a batched
    ``tanh(x @ w)`` with 1 MiB of arguments and 1 MiB of temps reports
    1.25 MiB), so there the sum is used and ``peak_source`` says so; the raw
    figure stays in ``xla_peak_bytes``.
    """

    argument_bytes: int
    output_bytes: int
    temp_bytes: int
    alias_bytes: int
    generated_code_bytes: int
    peak_bytes: int
    peak_source: str
    xla_peak_bytes: int | None
    flops: float | None
    bytes_accessed: float | None
    backend: str
    name: str = "fn"
    source: str = "compiled memory analysis (XLA)"

    @property
    def total_bytes(self) -> int:
        """argument + output + temp - alias: every buffer of the program."""
        return self.argument_bytes + self.output_bytes + self.temp_bytes - self.alias_bytes

    def _rows(self) -> list[tuple[str, str]]:
        return [
            ("argument", format_bytes(self.argument_bytes)),
            ("output", format_bytes(self.output_bytes)),
            ("temp", format_bytes(self.temp_bytes)),
            ("alias", format_bytes(self.alias_bytes)),
            ("peak", format_bytes(self.peak_bytes)),
            ("flops", format_count(self.flops)),
        ]

    def __repr__(self) -> str:
        return (
            f"MemoryEstimate({self.name} on {self.backend}: "
            + ", ".join(f"{k}={v}" for k, v in self._rows())
            + f"; source: {self.source}; peak: {self.peak_source})"
        )

    def _repr_html_(self) -> str:
        return html_table(
            self._rows() + [("peak from", self.peak_source)],
            header=("figure", "value"),
            caption=f"MemoryEstimate of {self.name} on {self.backend} ({self.source})",
        )


def _cost(executable) -> tuple[float | None, float | None]:
    try:
        cost = executable.cost_analysis()
    except Exception:  # some backends do not implement it
        return None, None
    if isinstance(cost, (list, tuple)):  # older jax: one dict per computation
        cost = cost[0] if cost else None
    if not cost:
        return None, None
    flops = cost.get("flops")
    accessed = cost.get("bytes accessed")
    return (float(flops) if flops is not None and flops >= 0 else None,
            float(accessed) if accessed is not None and accessed >= 0 else None)


def estimate_from_compiled(executable, name: str = "fn") -> MemoryEstimate:
    """Builds a :class:`MemoryEstimate` from a ``jax.stages.Compiled``."""
    stats = executable.memory_analysis()
    if stats is None:
        raise RuntimeError(
            f"The {jax.default_backend()} backend returned no compiled memory analysis; "
            "memory_estimate needs XLA's CompiledMemoryStats."
        )
    arg = int(stats.argument_size_in_bytes)
    out = int(stats.output_size_in_bytes)
    tmp = int(stats.temp_size_in_bytes)
    alias = int(stats.alias_size_in_bytes)
    xla_peak = getattr(stats, "peak_memory_in_bytes", None)
    xla_peak = int(xla_peak) if xla_peak is not None and int(xla_peak) > 0 else None
    total = arg + out + tmp - alias
    if xla_peak is None:
        peak, source = total, PEAK_NO_XLA
    elif xla_peak >= total:
        peak, source = xla_peak, PEAK_FROM_XLA
    else:
        peak, source = total, PEAK_SUM_ABOVE_XLA
    flops, accessed = _cost(executable)
    try:
        backend = executable.input_shardings[0][0]._device_assignment[0].platform  # noqa: SLF001
    except Exception:
        backend = jax.default_backend()
    return MemoryEstimate(
        argument_bytes=arg,
        output_bytes=out,
        temp_bytes=tmp,
        alias_bytes=alias,
        generated_code_bytes=int(stats.generated_code_size_in_bytes),
        peak_bytes=peak,
        peak_source=source,
        xla_peak_bytes=xla_peak,
        flops=flops,
        bytes_accessed=accessed,
        backend=backend if isinstance(backend, str) else jax.default_backend(),
        name=name,
    )


def memory_estimate(
    fn: Callable,
    *args: Any,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    **kwargs: Any,
) -> MemoryEstimate:
    """XLA's planned memory for ``fn(*args, **kwargs)``: compiles, runs nothing.

    ``peak_bytes`` is XLA's own ``peak_memory_in_bytes`` where this jax
    provides it, else ``argument + output + temp - alias``;
    ``peak_source`` says which. Arguments may be ``jax.ShapeDtypeStruct``,
    so a batch far larger than the device can be planned without being
    allocated.

    Args:
      fn: the function, plain or already ``jax.jit``-wrapped.
      *args: its positional arguments (arrays, numbers or pytrees of them).
      static_argnums: positions of arguments that are configuration, not data.
      static_argnames: names of keyword arguments that are configuration.
      **kwargs: its keyword arguments.

    Returns:
      A :class:`MemoryEstimate`.

    Raises:
      TypeError: ``fn`` is not callable, or an argument is not an array.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> est = memory_estimate(lambda x: x * 2, jax.ShapeDtypeStruct((1024,), jnp.float32))
      >>> est.argument_bytes, est.output_bytes
      (4096, 4096)
    """
    compiled = compile_fn(fn, args, kwargs, static_argnums=static_argnums, static_argnames=static_argnames)
    return estimate_from_compiled(compiled.executable, compiled.name)


# --------------------------------------------------------------------------
# Live device memory (GPU/TPU allocator counters)

_DEVICE_KEYS = (
    "bytes_in_use",
    "peak_bytes_in_use",
    "bytes_limit",
    "largest_free_block_bytes",
    "pool_bytes",
    "num_allocs",
    "bytes_reserved",
    "largest_alloc_size",
)


@dataclass(frozen=True)
class DeviceMemory:
    """Normalized ``jax.Device.memory_stats()``; absent keys are ``None``.

    ``peak_bytes_in_use`` is process-wide and cannot be reset: it is the
    highest figure since the process started, not since your last call.
    """

    device: str
    bytes_in_use: int | None = None
    peak_bytes_in_use: int | None = None
    bytes_limit: int | None = None
    largest_free_block_bytes: int | None = None
    pool_bytes: int | None = None
    num_allocs: int | None = None
    bytes_reserved: int | None = None
    largest_alloc_size: int | None = None
    source: str = "device memory stats (jax.Device.memory_stats())"

    @property
    def free_bytes(self) -> int | None:
        """Memory the allocator could still hand out: pool (or limit) minus in use."""
        capacity = self.pool_bytes or self.bytes_limit
        if capacity is None or self.bytes_in_use is None:
            return None
        return max(capacity - self.bytes_in_use, 0)

    @property
    def fragmentation(self) -> float | None:
        """Share of free memory that lies outside the largest free block.

        ``1 - largest_free_block / free``: 0 when all free memory is one
        block, close to 1 when it is scattered in small pieces. ``None``
        when the backend does not report the largest free block.
        """
        free = self.free_bytes
        if free is None or self.largest_free_block_bytes is None:
            return None
        if free == 0:
            return 0.0
        return max(0.0, 1.0 - min(self.largest_free_block_bytes, free) / free)

    def _rows(self) -> list[tuple[str, str]]:
        rows = []
        for key in _DEVICE_KEYS:
            value = getattr(self, key)
            if value is not None:
                rows.append((key, str(value) if key == "num_allocs" else format_bytes(value)))
        if self.fragmentation is not None:
            rows.append(("fragmentation", f"{self.fragmentation:.1%}"))
        return rows

    def __repr__(self) -> str:
        return f"DeviceMemory({self.device}: " + ", ".join(f"{k}={v}" for k, v in self._rows()) + ")"

    def _repr_html_(self) -> str:
        return html_table(self._rows(), header=("figure", "value"), caption=f"{self.device}: {self.source}")


def _pick_device(device: Any) -> jax.Device:
    if device is None:
        return jax.devices()[0]
    if isinstance(device, int) and not isinstance(device, bool):
        devices = jax.devices()
        if not 0 <= device < len(devices):
            raise ValueError(f"`device`={device} is out of range: this process sees {len(devices)} device(s).")
        return devices[device]
    if not hasattr(device, "memory_stats"):
        raise TypeError(f"`device` must be a jax.Device, an index into jax.devices() or None, got {device!r}.")
    return device


def device_memory(device: Any = None) -> DeviceMemory | None:
    """The allocator's live figures for one device, or ``None`` on CPU.

    Args:
      device: a ``jax.Device``, an index into ``jax.devices()``, or ``None``
        for the first device.

    Returns:
      A :class:`DeviceMemory`, or ``None`` where the backend keeps no
      statistics (the CPU backend); :func:`device_memory_unavailable_reason`
      says why.

    Example:
      >>> import jax
      >>> stats = device_memory()
      >>> (stats is None) == (jax.default_backend() == "cpu")
      True
    """
    dev = _pick_device(device)
    try:
        stats = dev.memory_stats()
    except Exception:  # some plugins raise instead of returning None
        stats = None
    if not stats:
        return None
    fields = {k: int(stats[k]) for k in _DEVICE_KEYS if k in stats}
    return DeviceMemory(device=str(dev), **fields)


def device_memory_unavailable_reason(device: Any = None) -> str | None:
    """Why :func:`device_memory` returns ``None`` here, or ``None`` if it does not."""
    dev = _pick_device(device)
    if device_memory(dev) is not None:
        return None
    return (
        f"memory_stats() is None on {dev.platform}: this backend keeps no allocator "
        f"statistics; use live_memory() (live JAX arrays, host RSS) instead"
    )


# --------------------------------------------------------------------------
# Live figures on every backend


@dataclass(frozen=True)
class LiveMemory:
    """Bytes held by live JAX arrays, and the host process's resident memory."""

    live_array_bytes: int
    live_array_count: int
    host_rss_bytes: int | None
    source: str = "jax.live_arrays() (array bytes) and host process RSS (psutil)"

    def __repr__(self) -> str:
        return (
            f"LiveMemory(live arrays: {self.live_array_count} holding "
            f"{format_bytes(self.live_array_bytes)}; host process RSS: "
            f"{format_bytes(self.host_rss_bytes)})"
        )

    def _repr_html_(self) -> str:
        return html_table(
            [("live JAX arrays", f"{self.live_array_count} holding {format_bytes(self.live_array_bytes)}"),
             ("host process resident memory", format_bytes(self.host_rss_bytes))],
            header=("figure", "value"), caption=self.source,
        )


def host_rss_bytes() -> int | None:
    """Resident set size of this process (psutil), or ``None`` if unavailable."""
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is a dependency
        return None
    return int(psutil.Process().memory_info().rss)


def live_memory(backend: str | None = None) -> LiveMemory:
    """Bytes of every live JAX array, and the host process's RSS.

    Example:
      >>> import jax.numpy as jnp
      >>> before = live_memory().live_array_bytes
      >>> x = jnp.zeros(1000, jnp.float32)
      >>> live_memory().live_array_bytes - before
      4000
    """
    arrays = jax.live_arrays(backend) if backend else jax.live_arrays()
    total = 0
    count = 0
    for a in arrays:
        try:
            if a.is_deleted():
                continue
            total += int(a.nbytes)
            count += 1
        except Exception:  # an array deleted concurrently
            continue
    return LiveMemory(live_array_bytes=total, live_array_count=count, host_rss_bytes=host_rss_bytes())


__all__ = [
    "DeviceMemory",
    "LiveMemory",
    "MemoryEstimate",
    "device_memory",
    "device_memory_unavailable_reason",
    "live_memory",
    "memory_estimate",
]
