"""Reading XLA's buffer-assignment and live-range reports (``--xla_dump_to``) into values."""

from __future__ import annotations

import re
from typing import NamedTuple

_ALLOC = re.compile(r"^allocation (\d+): size (\d+)(.*):$")
_VALUE = re.compile(r"^ value: <(\d+) (\S+) @\d+> \(size=(\d+),offset=(\d+)\): (.*)$")
_RANGE = re.compile(r"^\s+(\S+):(\d+)-(\d+)$")
_STEP = re.compile(r"^\s+(\d+):(\S+)$")
_OP_NAME = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+) = .*?metadata=\{[^}]*?op_name=\"([^\"]+)\"")


def parse_op_names(hlo_text: str) -> dict[str, str]:
    """Instruction name -> the jaxpr op it came from (the last part of HLO ``metadata.op_name``).

    Example:
      >>> parse_op_names('  %wrapped_tanh = f32[8]{0} fusion(%x), metadata={op_name="jit(f)/tanh" stack_frame_id=1}')
      {'wrapped_tanh': 'tanh'}
    """
    names = {}
    for line in hlo_text.splitlines():
        if m := _OP_NAME.match(line):
            names[m.group(1)] = m.group(2).rsplit("/", 1)[-1]
    return names


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
