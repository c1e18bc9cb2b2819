"""XLA's own buffer assignment for one compiled function: which values share memory, and when.

When XLA compiles a program it decides, before anything runs, where every
intermediate value lives: it orders the instructions, computes each value's
*live range* (from the instruction that defines it to its last use), and
packs values whose ranges do not overlap into the same bytes of one
*allocation*. That is the "JAX reuses blocks" of the seed, and it happens
at compile time, inside one jitted function.

:func:`buffer_assignment` compiles ``fn`` once more with the XLA dump
options ``xla_dump_to`` and ``xla_dump_hlo_as_text`` passed as per-compile
``compiler_options`` (no fresh process needed: the options apply to this
one compilation) and parses two of the reports XLA writes:

* ``*after_optimizations-buffer-assignment.txt`` -- every allocation with
  its size and kind, and every value in it with its offset and size;
* ``*after_optimizations-live-range.txt`` -- the instruction order and each
  value's live range in it.

Everything in :class:`BufferAssignment` comes from those XLA reports. Only
:meth:`BufferAssignment.to_trace` adds the kit's interpretation: each value
becomes an alloc/free pair, so the same program can be replayed through the
kit's *simulated* allocators (what a dynamic allocator would do without
XLA's static packing). (The compiled memory analysis also carries a
serialized ``BufferAssignmentProto``; it names instructions only by numeric
id and holds no live ranges, so the text reports are used.)
"""

from __future__ import annotations

import glob
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax

from ._checks import check_array_tree, check_callable
from ._compile import function_name, is_jitted
from ._format import format_bytes, html_table, text_table
from .allocator.trace import Event, Trace

SOURCE = "XLA buffer assignment and live-range reports (xla_dump_to)"
_ALLOC = re.compile(r"^allocation (\d+): size (\d+)(.*):$")
_VALUE = re.compile(r"^ value: <(\d+) (\S+) @\d+> \(size=(\d+),offset=(\d+)\): (.*)$")
_RANGE = re.compile(r"^\s+(\S+):(\d+)-(\d+)$")
_STEP = re.compile(r"^\s+(\d+):(\S+)$")


class XlaValue(NamedTuple):
    """One value (the result of one instruction) and where XLA put it."""

    id: int
    name: str
    size: int
    offset: int
    allocation: int
    shape: str
    start: int | None  # live range in the instruction order (None: not in the report)
    end: int | None


class XlaAllocation(NamedTuple):
    """One block of memory XLA plans for the program, and the values packed into it."""

    index: int
    size: int
    kind: str  # parameter, output, temp, constant, thread-local
    live_out: bool
    values: tuple[XlaValue, ...]


def _kind(rest: str) -> str:
    for word, kind in (
        ("parameter", "parameter"),
        ("constant", "constant"),
        ("thread-local", "thread-local"),
        ("output shape", "output"),
        ("preallocated-temp", "temp"),
    ):
        if word in rest:
            return kind
    return "output" if "maybe-live-out" in rest else "temp"


def parse_reports(buffer_text: str, live_range_text: str) -> tuple[list[XlaAllocation], list[str]]:
    """Parses XLA's buffer-assignment and live-range reports (the text files it dumps)."""
    sequence, ranges, section = [], {}, None
    for line in live_range_text.splitlines():
        stripped = line.strip()
        if stripped.endswith(":") and not _STEP.match(line):
            section = stripped
            continue
        if section == "InstructionSequence:" and (m := _STEP.match(line)):
            sequence.append(m.group(2))
        elif section == "BufferLiveRange:" and (m := _RANGE.match(line)):
            ranges[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    allocations: list[XlaAllocation] = []
    header, values = None, []
    for line in [*buffer_text.splitlines(), "allocation 0: size 0 (end of report):"]:
        if m := _ALLOC.match(line):
            if header is not None:
                allocations.append(XlaAllocation(*header, tuple(values)))
            index, rest = int(m.group(1)), m.group(3)
            header, values = (index, int(m.group(2)), _kind(rest), "maybe-live-out" in rest), []
        elif header is not None and (m := _VALUE.match(line)):
            name = m.group(2)
            start, end = ranges.get(name if name.endswith("}") else name + "{}", (None, None))
            values.append(
                XlaValue(
                    int(m.group(1)),
                    name,
                    int(m.group(3)),
                    int(m.group(4)),
                    header[0],
                    m.group(5),
                    start,
                    end,
                )
            )
    return allocations, sequence


@dataclass(frozen=True)
class BufferAssignment:
    """XLA's memory plan for one compiled function (every figure from XLA's reports)."""

    name: str
    allocations: tuple[XlaAllocation, ...]
    sequence: tuple[str, ...]
    backend: str
    source: str = SOURCE

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

    def __repr__(self) -> str:
        head = (
            f"BufferAssignment({self.name} on {self.backend}: {len(self.sequence)} instructions, "
            f"temp {format_bytes(self.temp_bytes)} holding {format_bytes(self.temp_value_bytes)} of values; "
            f"source: {self.source})"
        )
        return (
            head
            + "\n"
            + text_table(self._rows(), header=("alloc", "kind", "size", "values", "names"))
        )

    def _repr_html_(self) -> str:
        return html_table(
            self._rows(),
            header=("allocation", "kind", "size", "values", "names"),
            caption=f"XLA buffer assignment of {self.name} on {self.backend} ({self.source})",
        )

    def to_trace(self, kinds: Sequence[str] = ("parameter", "output", "temp")) -> Trace:
        """Each value of the given allocation kinds as an alloc/free pair at its live range.

        Time is XLA's instruction order; a value freed at step ``t`` is freed
        before one allocated at ``t`` (XLA lets them share bytes). The trace
        is the kit's reading of XLA's report, for the kit's simulated allocators.
        """
        events = []
        for a in self.allocations_of(*kinds):
            for v in a.values:
                if v.start is not None:
                    events.append((v.start, 1, Event(v.start, "alloc", v.name, v.size, a.kind)))
                    events.append((v.end, 0, Event(v.end, "free", v.name)))
        events.sort(key=lambda e: (e[0], e[1]))
        return Trace(
            tuple(e[2] for e in events),
            f"XLA values of {self.name}",
            "XLA live ranges (xla_dump_to), replayed by the kit's simulation",
        )

    def plot(self, *, ax=None, kinds: Sequence[str] = ("parameter", "output", "temp")):
        """Allocations as bands (height = bytes), each value a box from its first to its last step."""
        from .allocator.plots import plot_buffer_assignment

        return plot_buffer_assignment(self, ax=ax, kinds=kinds)


def buffer_assignment(
    fn: Callable,
    *args: Any,
    static_argnums: int | Sequence[int] = (),
    donate_argnums: int | Sequence[int] = (),
    **kwargs: Any,
) -> BufferAssignment:
    """Compiles ``fn(*args, **kwargs)`` and returns XLA's buffer assignment for it.

    Args:
      fn: the function, plain or already ``jax.jit``-wrapped (then its own
        static and donated arguments are used).
      *args: positional arguments (arrays or ``jax.ShapeDtypeStruct``).
      static_argnums: positions of configuration arguments (plain ``fn`` only).
      donate_argnums: positions of donated arguments (plain ``fn`` only).
      **kwargs: keyword arguments.

    Returns:
      A :class:`BufferAssignment`, parsed from the reports XLA wrote.

    Raises:
      TypeError: ``fn`` is not callable or an argument is not an array.
      ValueError: ``fn`` is jitted and static/donated arguments were also given.
      RuntimeError: XLA wrote no buffer-assignment report.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> ba = buffer_assignment(lambda x: jnp.sin(jnp.cos(x) * 2).sum(), jax.ShapeDtypeStruct((256,), jnp.float32))
      >>> ba.allocations_of("parameter")[0].size
      1024
    """
    check_callable(fn)
    if is_jitted(fn):
        if static_argnums != () or donate_argnums != ():
            raise ValueError(
                "`fn` is already jax.jit-wrapped; give static_argnums/donate_argnums to its "
                "own jax.jit(...) instead of to buffer_assignment."
            )
        jitted = fn
    else:
        check_array_tree(args, "args")
        check_array_tree(kwargs, "kwargs")
        jitted = jax.jit(fn, static_argnums=static_argnums, donate_argnums=donate_argnums)
    lowered = jitted.lower(*args, **kwargs)
    with tempfile.TemporaryDirectory(prefix="batchlab-xla-") as folder:
        lowered.compile(compiler_options={"xla_dump_to": folder, "xla_dump_hlo_as_text": True})
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
    allocations, sequence = parse_reports(buffer_text, live_text)
    return BufferAssignment(
        function_name(fn), tuple(allocations), tuple(sequence), jax.default_backend()
    )


__all__ = ["BufferAssignment", "XlaAllocation", "XlaValue", "buffer_assignment", "parse_reports"]
