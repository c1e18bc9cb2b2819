"""Planned memory: XLA's compiled memory analysis of one function (nothing runs).

The live sources, never mixed in silently, are in ``live.py``.
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
    planned_bytes: int
    planned_from: str
    xla_peak_bytes: int | None
    flops: float | None
    backend: str
    name: str = "fn"
    source: str = "compiled memory analysis (XLA)"
    _inline = True

    def _rows(self) -> list[tuple[str, str]]:
        sizes = ("argument", "output", "temp", "alias", "planned")
        rows = [(k, format_bytes(getattr(self, f"{k}_bytes"))) for k in sizes]
        return [*rows, ("flops", format_count(self.flops)), ("planned from", self.planned_from)]

    def _title(self) -> str:
        return f"{self.name} on {self.backend}, {self.source}"


def estimate_from_compiled(executable, name: str) -> MemoryEstimate:
    """Builds a :class:`MemoryEstimate` from a ``jax.stages.Compiled``."""
    stats = executable.memory_analysis()
    if stats is None:
        raise RuntimeError(
            f"The {jax.default_backend()} backend returned no compiled memory analysis; "
            "memory_estimate needs XLA's CompiledMemoryStats."
        )
    sizes = (getattr(stats, f"{k}_size_in_bytes") for k in ("argument", "output", "temp", "alias"))
    arg, out, tmp, alias = map(int, sizes)
    xla_peak = stats.peak_memory_in_bytes  # None or 0: XLA gave no peak
    xla_peak = int(xla_peak) if xla_peak is not None and int(xla_peak) > 0 else None
    total = arg + out + tmp - alias
    if xla_peak is None:
        peak, source = total, PEAK_NO_XLA
    elif xla_peak >= total:
        peak, source = xla_peak, PEAK_FROM_XLA
    else:
        peak, source = total, PEAK_SUM_ABOVE_XLA
    try:  # the device the program was compiled for
        backend = next(iter(executable.input_shardings[0][0].device_set)).platform
    except Exception:  # no input, or a stand-in executable
        backend = jax.default_backend()
    try:
        cost = executable.cost_analysis() or {}
    except Exception:  # some backends do not implement it
        cost = {}
    flops = cost.get("flops")  # None where the cost analysis has none (or a negative figure)
    flops = float(flops) if flops is not None and flops >= 0 else None
    return MemoryEstimate(arg, out, tmp, alias, peak, source, xla_peak, flops, backend, name)


def memory_estimate(
    fn: Callable,
    *args: Any,
    static_argnums: int | Sequence[int] = (),
    **kwargs: Any,
) -> MemoryEstimate:
    """XLA's planned memory for ``fn(*args, **kwargs)`` (plain or jitted): compiles, runs nothing.

    Arguments may be arrays, ``jax.ShapeDtypeStruct``, numbers or pytrees; ``static_argnums``
    as in ``jax.jit``.
    """
    compiled = compile_fn(fn, args, kwargs, static_argnums=static_argnums)
    return estimate_from_compiled(compiled.executable, compiled.name)
