"""XLA's buffer assignment for one function (its ``--xla_dump_to`` reports): who shares memory."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import jax

from batchlab._util.checks import check_argnums, check_array_tree, check_callable
from batchlab._util.format import Rows, format_bytes
from batchlab._util.plotting import new_figure
from batchlab.measuring.plan import function_name, is_jitted

SOURCE = "XLA buffer assignment and live-range reports (xla_dump_to)"
_ALLOC = re.compile(r"^allocation (\d+): size (\d+)(.*):$")
_COLOR = re.compile(r", color (\d+)")  # XLA prints a memory space (its color) other than 0
_VALUE = re.compile(r"^ value: <\d+ (\S+) @\d+> \(size=(\d+),offset=(\d+)\): (.*)$")
_RANGE = re.compile(r"^\s+(\S+):(\d+)-(\d+)$")
_STEP = re.compile(r"^\s+(\d+):(\S+)$")
_OP_NAME = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+) = .*?metadata=\{[^}]*?op_name=\"([^\"]+)\"")
#: words of an allocation's header line -> its kind (else "output" if live out, else "temp")
_KINDS = {"parameter": "parameter", "constant": "constant", "thread-local": "thread-local"}
_KINDS |= {"output shape": "output", "preallocated-temp": "temp"}


class XlaValue(NamedTuple):
    """One value (the result of one instruction), where XLA put it and when it is live."""

    name: str
    size: int
    offset: int
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
    color: int = 0  # XLA's memory space: 0 the device's main memory (a TPU's HBM), else on-chip

    @property
    def live(self) -> list:
        """Values with a live range (thread-local scalars of sub-computations left out)."""
        return [v for v in self.values if v.start is not None]


def parse_op_names(hlo_text: str) -> dict[str, str]:
    """Instruction name -> the jaxpr op it came from (the last part of HLO ``metadata.op_name``)."""
    matches = (_OP_NAME.match(line) for line in hlo_text.splitlines())
    return {m.group(1): m.group(2).rsplit("/", 1)[-1] for m in matches if m}


def parse_reports(buffer_text: str, live_range_text: str) -> tuple[list[XlaAllocation], list[str]]:
    """Parses XLA's buffer-assignment and live-range reports (the text files it dumps)."""
    sequence, ranges, section = [], {}, None
    for line in live_range_text.splitlines():
        step, span = _STEP.match(line), _RANGE.match(line)
        if line.strip().endswith(":") and not step:
            section = line.strip()
        elif section == "InstructionSequence:" and step:
            sequence.append(step.group(2))
        elif section == "BufferLiveRange:" and span:
            ranges[span.group(1)] = (int(span.group(2)), int(span.group(3)))
    allocations = []
    for line in buffer_text.splitlines():
        if m := _ALLOC.match(line):
            live_out = "maybe-live-out" in m.group(3)
            default = "output" if live_out else "temp"
            kind = next((k for w, k in _KINDS.items() if w in m.group(3)), default)
            color = int(c.group(1)) if (c := _COLOR.search(m.group(3))) else 0
            index, size = int(m.group(1)), int(m.group(2))
            allocations.append(XlaAllocation(index, size, kind, live_out, (), color))
        elif allocations and (m := _VALUE.match(line)):
            name = m.group(1)
            start, end = ranges.get(name if name.endswith("}") else name + "{}", (None, None))
            value = XlaValue(name, int(m.group(2)), int(m.group(3)), m.group(4), start, end)
            allocations[-1] = allocations[-1]._replace(values=(*allocations[-1].values, value))
    return allocations, sequence


@dataclass(frozen=True)
class BufferAssignment(Rows):
    """XLA's memory plan for one compiled function (every figure from XLA's reports)."""

    name: str
    allocations: tuple[XlaAllocation, ...]
    sequence: tuple[str, ...]
    backend: str
    op_names: tuple[tuple[str, str], ...] = ()  # instruction -> jaxpr op (HLO metadata)
    source: str = SOURCE
    _header = ("allocation", "kind", "size", "values", "names")

    def label(self, name: str) -> str:
        """A value's name with the jaxpr op it came from: ``"wrapped_tanh (tanh)"``."""
        base = name.replace("{}", "").split("{")[0]
        op = dict(self.op_names).get(base)
        return f"{base} ({op})" if op and op != base else base

    def allocations_of(self, *kinds: str) -> list[XlaAllocation]:
        """The allocations of these kinds in every memory space (XLA:TPU: a temp per color)."""
        return [a for a in self.allocations if a.kind in kinds]

    def temp_by_color(self) -> dict[int, int]:
        """Temp bytes per memory space (XLA's color; 0 is the device's main memory)."""
        colors: dict[int, int] = {}
        for a in self.allocations_of("temp"):
            colors[a.color] = colors.get(a.color, 0) + a.size
        return colors

    def launch_allocations(self) -> list[tuple[str, str, int]]:
        """What the runtime allocates when this program is launched: ``(name, kind, bytes)``."""
        rows = []
        for a in self.allocations_of("output"):
            name = self.label(a.live[-1].name) if a.live else f"output{a.index}"
            rows.append((name, "output", a.size))
        return rows + ([("temp", "temp", self.temp_bytes)] if self.temp_bytes else [])

    @property
    def temp_bytes(self) -> int:
        """XLA's temp allocation in main memory (color 0): the scratch memory of one call."""
        return sum(a.size for a in self.allocations_of("temp") if a.color == 0)

    @property
    def temp_value_bytes(self) -> int:
        """The values placed in that temp allocation: what they would take without reuse."""
        return sum(v.size for a in self.allocations_of("temp") if a.color == 0 for v in a.live)

    def _rows(self) -> list[tuple[str, ...]]:
        rows = []
        for a in self.allocations:
            names = [v.name for v in a.live]
            if a.kind == "thread-local" or not names:
                continue
            kind = a.kind + (" (live out)" if a.live_out and a.kind == "parameter" else "")
            kind += f" (color {a.color})" if a.color else ""
            shown = ", ".join(names[:4]) + (" ..." if len(names) > 4 else "")
            rows.append((str(a.index), kind, format_bytes(a.size), str(len(names)), shown))
        return rows

    def _title(self) -> str:
        other = {c: n for c, n in self.temp_by_color().items() if c}
        spaces = ", ".join(f"{format_bytes(n)} in color {c}" for c, n in sorted(other.items()))
        return (
            f"{self.name} on {self.backend}: {len(self.sequence)} instructions, temp "
            f"{format_bytes(self.temp_bytes)} holding {format_bytes(self.temp_value_bytes)} of "
            f"values{f' (other memory spaces: {spaces})' if other else ''}; source: {self.source}"
        )

    def plot(self):
        """A band per allocation (height: bytes, at least 1/5 of the tallest), a box per value."""
        from matplotlib.patches import Patch, Rectangle

        fig, ax = new_figure(1, width=11, height=5)
        allocations = [a for a in self.allocations_of("parameter", "output", "temp") if a.live]
        steps = max(len(self.sequence), 1)
        tallest = max((a.size for a in allocations), default=1)
        colours: dict[str, str] = {}  # the op that made a value -> its colour (the legend's)
        base, ticks, labels = 0.0, [], []
        for a in allocations:
            scale = max(a.size, tallest / 5) / a.size
            ax.add_patch(Rectangle((0, base), steps, a.size * scale, color="0.93", lw=0, zorder=0))
            for i, v in enumerate(a.live):
                op = self.label(v.name).split(" (")[-1].rstrip(")")
                made = f"argument {op}" if a.kind == "parameter" and i == 0 else op
                made += " (the output)" if a.live_out and i == len(a.live) - 1 and i else ""
                colour = colours.setdefault(made, _PALETTE[min(len(colours), len(_PALETTE) - 1)])
                box = (v.start, base + v.offset * scale), max(v.end - v.start, 0.4), v.size * scale
                ax.add_patch(Rectangle(*box, fc=colour, ec="white", lw=1.5))
            ticks.append(base + a.size * scale / 2)
            kind = a.kind + " (live out)" * (a.kind == "parameter" and a.live_out)
            size = format_bytes(a.size)
            labels.append(f"{kind} {size}\n(drawn taller)" if scale > 1 else f"{kind}\n{size}")
            base += a.size * scale + 0.08 * tallest
        top = max(base - 0.08 * tallest, 1)
        ax.set(xlim=(0, steps), ylim=(0, top), xlabel="step in XLA's instruction order")
        ax.set_yticks(ticks, labels)
        ax.set_title(f"XLA buffer assignment of {self.name} on {self.backend} [from XLA: boxes "
                     "sharing a band share bytes]")  # fmt: skip
        names = list(colours)[: len(_PALETTE) - 1] + ["other ops"] * (len(colours) >= len(_PALETTE))
        handles = [Patch(color=colours.get(n, _PALETTE[-1]), label=n) for n in names]
        handles.append(Patch(color="0.93", label="allocated, no live value"))
        ax.legend(handles=handles, title="what made each value", loc="upper left", fontsize=11,
                  bbox_to_anchor=(1.0, 1.0), title_fontsize=11, frameon=False)  # fmt: skip
        return fig


_PALETTE = [f"C{i}" for i in (0, 1, 2, 3, 4, 5, 6, 8, 9)] + ["0.55"]  # the last: ops beyond them


def buffer_assignment(
    fn: Callable,
    *args: Any,
    donate_argnums: int | Sequence[int] = (),
    compiler_options: dict | None = None,
) -> BufferAssignment:
    """XLA's buffer assignment of ``jax.jit(fn, donate_argnums=...)(*args)``; ``compiler_options``
    go to ``.compile()`` (XLA flags: ``batchlab.allocator.xla_workloads.cpu_buffer_assignment``).

    Args:
      fn: the plain function (not ``jax.jit``-wrapped); *args: its arguments (arrays or structs).
      donate_argnums: positional arguments whose buffers the program may reuse.
      compiler_options: extra options for ``.compile()`` (the report's dump options are added).

    Returns:
      A :class:`BufferAssignment`: every allocation (kind, size, values), the value sequence,
      the backend and the jaxpr op of each instruction.

    Raises:
      TypeError: ``fn`` is not callable, ``donate_argnums`` holds a non-int, or ``args`` a leaf
        that is not an array or a number.
      ValueError: ``fn`` is already jitted, or ``donate_argnums`` names an argument not given.
      RuntimeError: XLA wrote no buffer-assignment report (a persistent compilation cache?).
    """
    check_callable(fn)
    if is_jitted(fn):
        raise ValueError(
            "`fn` is already jax.jit-wrapped; pass the plain function (with donate_argnums= "
            "here): buffer_assignment jits it itself, with XLA's report options."
        )
    check_argnums(donate_argnums, len(args), "donate_argnums")
    check_array_tree(args, "args")
    lowered = jax.jit(fn, donate_argnums=donate_argnums).lower(*args)
    with tempfile.TemporaryDirectory(prefix="batchlab-xla-") as folder:
        dump = {"xla_dump_to": folder, "xla_dump_hlo_as_text": True}
        compiled = lowered.compile(compiler_options={**(compiler_options or {}), **dump})
        found = sorted(Path(folder).glob("*after_optimizations-buffer-assignment.txt"))
        if not found:
            raise RuntimeError(
                "XLA wrote no *-buffer-assignment.txt report for this compilation; "
                "is a persistent compilation cache serving it? Disable it and retry."
            )
        ranges = Path(str(found[-1]).replace("-buffer-assignment.txt", "-live-range.txt"))
        live_text = ranges.read_text() if ranges.exists() else ""
        buffer_text, hlo_text = found[-1].read_text(), compiled.as_text()
    allocations, sequence = parse_reports(buffer_text, live_text)
    op_names = tuple(parse_op_names(hlo_text).items())
    return BufferAssignment(
        function_name(fn), tuple(allocations), tuple(sequence), jax.default_backend(), op_names
    )
