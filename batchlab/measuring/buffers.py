"""XLA's own buffer assignment for one compiled function: which values share memory, and when."""

from __future__ import annotations

import glob
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax

from batchlab._util.checks import check_argnums, check_array_tree, check_callable
from batchlab._util.child import run_child
from batchlab._util.compile import function_name, is_jitted
from batchlab._util.format import Rows, format_bytes
from batchlab.measuring.buffers_plot import plot_buffer_assignment
from batchlab.measuring.xla_reports import XlaAllocation, XlaValue, parse_op_names, parse_reports

SOURCE = "XLA buffer assignment and live-range reports (xla_dump_to)"


@dataclass(frozen=True)
class BufferAssignment(Rows):
    """XLA's memory plan for one compiled function (every figure from XLA's reports)."""

    name: str
    allocations: tuple[XlaAllocation, ...]
    sequence: tuple[str, ...]
    backend: str
    op_names: tuple[tuple[str, str], ...] = ()  # instruction -> jaxpr op (HLO metadata)
    source: str = SOURCE

    def label(self, name: str) -> str:
        """A value's name with the jaxpr op it came from: ``"wrapped_tanh (tanh)"``."""
        base = name.replace("{}", "").split("{")[0]
        op = dict(self.op_names).get(base)
        return f"{base} ({op})" if op and op != base else base

    def heap_peak(self, kinds: Sequence[str] = ("temp",)) -> int:
        """Most bytes of values of ``kinds`` live at one step of XLA's order (XLA's live ranges)."""
        values = [v for a in self.allocations_of(*kinds) for v in a.values if v.start is not None]
        steps = {t for v in values for t in (v.start, v.end)}
        return max((sum(v.size for v in values if v.start <= t <= v.end) for t in steps), default=0)

    def launch_allocations(self) -> list[tuple[str, str, int]]:
        """What the runtime allocates when this program is launched: ``(name, kind, bytes)``."""
        rows = []
        for a in self.allocations_of("output"):
            live = [v for v in a.values if v.start is not None]
            name = self.label(live[-1].name) if live else f"output{a.index}"
            rows.append((name, "output", a.size))
        if self.temp_bytes:
            rows.append(("temp", "temp", self.temp_bytes))
        return rows

    def allocations_of(self, *kinds: str) -> list[XlaAllocation]:
        return [a for a in self.allocations if a.kind in kinds]

    @property
    def values(self) -> list[XlaValue]:
        """Values with a live range (thread-local scalars of sub-computations left out)."""
        return [v for a in self.allocations for v in a.values if v.start is not None]

    @property
    def temp_bytes(self) -> int:
        """Bytes of XLA's temp allocation(s): the scratch memory of one call."""
        return sum(a.size for a in self.allocations_of("temp"))

    @property
    def temp_value_bytes(self) -> int:
        """Sum of the sizes of all values placed in temp: what they would take without reuse."""
        return sum(
            v.size for a in self.allocations_of("temp") for v in a.values if v.start is not None
        )

    @property
    def shared_allocations(self) -> int:
        """Allocations holding more than one value: memory XLA reuses within the call."""
        return sum(sum(v.start is not None for v in a.values) > 1 for a in self.allocations)

    def _rows(self) -> list[tuple[str, str]]:
        rows = []
        for a in self.allocations:
            if a.kind == "thread-local":
                continue
            live = [v.name for v in a.values if v.start is not None]
            if not live:
                continue
            names = ", ".join(live[:4]) + (" ..." if len(live) > 4 else "")
            rows.append(
                (
                    str(a.index),
                    a.kind + (" (live out)" if a.live_out and a.kind == "parameter" else ""),
                    format_bytes(a.size),
                    str(len(live)),
                    names,
                )
            )
        return rows

    _header = ("allocation", "kind", "size", "values", "names")

    def _title(self) -> str:
        return (
            f"{self.name} on {self.backend}: {len(self.sequence)} instructions, temp "
            f"{format_bytes(self.temp_bytes)} holding {format_bytes(self.temp_value_bytes)} of "
            f"values; source: {self.source}"
        )

    def plot(self, *, ax=None, kinds: Sequence[str] = ("parameter", "output", "temp")):
        """Allocations as bands (height = bytes), each value a box from its first to its last step."""
        return plot_buffer_assignment(self, ax=ax, kinds=kinds)


def _reports(lowered, compiler_options: dict) -> tuple[str, str, str]:
    """Compiles ``lowered`` with XLA's dump options; (buffer report, live-range report, HLO text)."""
    with tempfile.TemporaryDirectory(prefix="batchlab-xla-") as folder:
        compiled = lowered.compile(
            compiler_options={
                **compiler_options,
                "xla_dump_to": folder,
                "xla_dump_hlo_as_text": True,
            }
        )
        found = sorted(
            glob.glob(os.path.join(folder, "*after_optimizations-buffer-assignment.txt"))
        )
        if not found:
            raise RuntimeError(
                "XLA wrote no *-buffer-assignment.txt report for this compilation; "
                "is a persistent compilation cache serving it? Disable it and retry."
            )
        with open(found[-1]) as f:
            buffer_text = f.read()
        ranges = found[-1].replace("-buffer-assignment.txt", "-live-range.txt")
        live_text = ""
        if os.path.exists(ranges):
            with open(ranges) as f:
                live_text = f.read()
    return buffer_text, live_text, compiled.as_text()


def _reports_here(payload: Any) -> dict:
    """The child side of :func:`_reports_in_subprocess` (run by the kit's one child helper)."""
    fn, jit_options, args, kwargs = payload
    texts = _reports(jax.jit(fn, **jit_options).lower(*args, **kwargs), {})
    return {"texts": texts, "backend": jax.default_backend()}


def _reports_in_subprocess(
    fn, jit_options, args, kwargs, xla_flags: str
) -> tuple[tuple[str, str, str], str]:
    """The same reports from a fresh Python process started with ``XLA_FLAGS=xla_flags``."""
    flags = (os.environ.get("XLA_FLAGS", "") + " " + xla_flags).strip()
    child = run_child(_reports_here, (fn, jit_options, args, kwargs), env={"XLA_FLAGS": flags})
    data = child.reply
    if data is None or "error" in data:
        why = child.why if data is None else f"{data['error']['type']}: {data['error']['message']}"
        raise RuntimeError(
            f"compiling in a fresh process with XLA_FLAGS={xla_flags!r} failed: {why}"
        )
    return tuple(data["texts"]), data["backend"]


def buffer_assignment(
    fn: Callable,
    *args: Any,
    static_argnums: int | Sequence[int] = (),
    donate_argnums: int | Sequence[int] = (),
    compiler_options: dict | None = None,
    xla_flags: str | None = None,
    **kwargs: Any,
) -> BufferAssignment:
    """Compiles ``fn(*args, **kwargs)`` and returns XLA's buffer assignment for it.

    Args:
      fn: the function, plain or already ``jax.jit``-wrapped (then its own
        static and donated arguments are used).
      *args: positional arguments (arrays or ``jax.ShapeDtypeStruct``).
      static_argnums: positions of configuration arguments (plain ``fn`` only).
      donate_argnums: positions of donated arguments (plain ``fn`` only).
      compiler_options: extra per-compilation XLA options (as in ``.compile(compiler_options=...)``).
      xla_flags: XLA flags read once per process (e.g.
        ``"--xla_cpu_enable_concurrency_optimized_scheduler=false"``): the
        compilation then runs in a fresh Python process with them.
      **kwargs: keyword arguments.

    Returns:
      A :class:`BufferAssignment`, parsed from the reports XLA wrote.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> ba = buffer_assignment(lambda x: jnp.sin(jnp.cos(x) * 2).sum(), jax.ShapeDtypeStruct((256,), jnp.float32))
      >>> ba.allocations_of("parameter")[0].size
      1024
    """
    check_callable(fn)
    check_argnums(static_argnums, len(args) + len(kwargs), "static_argnums")
    check_argnums(donate_argnums, len(args) + len(kwargs), "donate_argnums")
    if xla_flags is not None and not isinstance(xla_flags, str):
        raise TypeError(
            f"`xla_flags` must be a string like '--xla_foo=false', got {type(xla_flags).__name__}."
        )
    if xla_flags and compiler_options:
        raise ValueError(
            "give either `compiler_options` (per compilation) or `xla_flags` (a fresh process), not both."
        )
    if is_jitted(fn):
        if static_argnums != () or donate_argnums != ():
            raise ValueError(
                "`fn` is already jax.jit-wrapped; give static_argnums/donate_argnums to its "
                "own jax.jit(...) instead of to buffer_assignment."
            )
        if xla_flags:
            raise ValueError(
                "`xla_flags` needs the plain function: pass fn unjitted with static_argnums/"
                "donate_argnums here, so the fresh process can jit it."
            )
        jitted = fn
    else:
        check_array_tree(args, "args")
        check_array_tree(kwargs, "kwargs")
        jitted = jax.jit(fn, static_argnums=static_argnums, donate_argnums=donate_argnums)
    backend = jax.default_backend()
    if xla_flags:
        (buffer_text, live_text, hlo_text), backend = _reports_in_subprocess(
            fn,
            {"static_argnums": static_argnums, "donate_argnums": donate_argnums},
            args,
            kwargs,
            xla_flags,
        )
    else:
        buffer_text, live_text, hlo_text = _reports(
            jitted.lower(*args, **kwargs), dict(compiler_options or {})
        )
    allocations, sequence = parse_reports(buffer_text, live_text)
    return BufferAssignment(
        function_name(fn),
        tuple(allocations),
        tuple(sequence),
        backend,
        tuple(parse_op_names(hlo_text).items()),
    )
