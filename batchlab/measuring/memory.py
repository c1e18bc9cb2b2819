"""Planned memory: XLA's compiled memory analysis of one function.

Nothing runs; every backend has it. The other two sources, never mixed silently:
``device_memory`` (the allocator's live counters, GPU/TPU) and ``live_memory`` (live
JAX arrays and host RSS), both in ``live.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax

from batchlab._util.compile import compile_fn
from batchlab._util.format import Rows, format_bytes, format_count

PEAK_FROM_XLA = "XLA peak_memory_in_bytes"
PEAK_SUM_ABOVE_XLA = (
    "argument + output + temp - alias: XLA's peak_memory_in_bytes is lower, it leaves out "
    "the temp allocation on this backend (see xla_peak_bytes)"
)
PEAK_NO_XLA = "argument + output + temp - alias (this jax has no peak_memory_in_bytes)"


@dataclass(frozen=True)
class MemoryEstimate(Rows):
    """XLA's compiled memory plan for one function and one set of input shapes.

    Bytes on the device; ``alias_bytes`` are output bytes that reuse donated inputs.
    ``planned_bytes``, the figure a budget is compared with, is the larger of XLA's
    ``peak_memory_in_bytes`` (kept as ``xla_peak_bytes``; on XLA:CPU it leaves the temp
    block out) and ``argument + output + temp - alias`` (``planned_from`` says which). A
    lower bound: a GPU allocator rounds buffers up, XLA:CPU holds buffers of its own.
    """

    argument_bytes: int
    output_bytes: int
    temp_bytes: int
    alias_bytes: int
    generated_code_bytes: int
    planned_bytes: int
    planned_from: str
    xla_peak_bytes: int | None
    flops: float | None
    bytes_accessed: float | None
    backend: str
    name: str = "fn"
    source: str = "compiled memory analysis (XLA)"

    def _rows(self) -> list[tuple[str, str]]:
        return [
            ("argument", format_bytes(self.argument_bytes)),
            ("output", format_bytes(self.output_bytes)),
            ("temp", format_bytes(self.temp_bytes)),
            ("alias", format_bytes(self.alias_bytes)),
            ("planned", format_bytes(self.planned_bytes)),
            ("flops", format_count(self.flops)),
            ("planned from", self.planned_from),
        ]

    _inline = True

    def _title(self) -> str:
        return f"{self.name} on {self.backend}, {self.source}"


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
    return (
        float(flops) if flops is not None and flops >= 0 else None,
        float(accessed) if accessed is not None and accessed >= 0 else None,
    )


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
        backend = next(iter(executable.input_shardings[0][0].device_set)).platform
    except Exception:
        backend = jax.default_backend()
    return MemoryEstimate(
        argument_bytes=arg,
        output_bytes=out,
        temp_bytes=tmp,
        alias_bytes=alias,
        generated_code_bytes=int(stats.generated_code_size_in_bytes),
        planned_bytes=peak,
        planned_from=source,
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

    Args:
      fn: the function, plain or already ``jax.jit``-wrapped.
      *args: its positional arguments (arrays, numbers or pytrees of them).
      static_argnums: positions of arguments that are configuration, not data.
      static_argnames: names of keyword arguments that are configuration.
      **kwargs: its keyword arguments.

    Returns:
      A :class:`MemoryEstimate`.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> est = memory_estimate(lambda x: x * 2, jax.ShapeDtypeStruct((1024,), jnp.float32))
      >>> est.argument_bytes, est.output_bytes
      (4096, 4096)
    """
    compiled = compile_fn(
        fn, args, kwargs, static_argnums=static_argnums, static_argnames=static_argnames
    )
    return estimate_from_compiled(compiled.executable, compiled.name)
