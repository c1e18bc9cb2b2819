"""Reads the Perfetto JSON that ``jax.profiler.trace(..., create_perfetto_trace=True)`` writes."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WRAPPER = "batchlab.trace"  # the kit's own annotation around the traced code
# not spans: pool bookkeeping and the allocator's per-allocation events
_SKIP = ("ThreadpoolListener::", "end: ", "MemoryAllocation", "MemoryDeallocation")
_WAIT = re.compile(
    r"Await|BlockHostUntilReady|block_until_ready|^Wait for |Synchronize"
    r"|^np\.asarray\(jax\.Array\)|copy_to_host"  # reading a result on the host waits for it
)
_TRANSFER = re.compile(r"^(DevicePut|batched_device_put|BatchedCopyToDevice|Memcpy|memcpy)")
_COMPILE = re.compile(r"^(backend_compile|lower_sharding_computation|jit_compile|compile)")
_COMPILER_THREAD = re.compile(r"Compiler|codegen|compile", re.I)
_ORDER = {"python": 1, "loader": 1, "device": 2, "runtime": 3, "compiler": 4}  # main thread: 0


@dataclass(frozen=True)
class Lane:
    """One row of the timeline: a thread or a device stream."""

    index: int
    name: str  # what the plot shows, e.g. "python (main)", "loader thread 1"
    kind: str  # "python", "loader", "runtime", "device", "compiler"


@dataclass(frozen=True)
class Span:
    """One traced interval. Times in seconds from the start of the traced code."""

    lane: int
    name: str
    start: float
    duration: float
    depth: int  # 0: outermost on its lane
    parent: int  # index of the enclosing span in Timeline.spans, -1 if none
    kind: str  # "dispatch", "wait", "compute", "transfer", "compile", "annotation", "runtime"

    end: float = field(init=False)  # start + duration

    def __post_init__(self):
        object.__setattr__(self, "end", self.start + self.duration)


def find_trace_file(log_dir: str | Path) -> Path:
    """The newest ``perfetto_trace.json.gz`` under ``log_dir`` (JAX writes it in a dated folder)."""
    found = sorted(Path(log_dir).rglob("perfetto_trace.json.gz"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise FileNotFoundError(
            f"`log_dir` {log_dir} holds no perfetto_trace.json.gz; was the trace captured with "
            "jax.profiler.trace(log_dir, create_perfetto_trace=True)?"
        )
    return found[-1]


def read_events(path: str | Path) -> list[dict[str, Any]]:
    """The trace events of the ``perfetto_trace.json.gz`` JAX writes."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)["traceEvents"]


def _span_kind(name: str, args: dict, lane_kind: str, parent_kind: str | None) -> str:
    if lane_kind == "device":
        return "transfer" if _TRANSFER.search(name) else "compute"
    if "hlo_op" in args:
        return "compute"
    if name.startswith("PjitFunction("):
        return "dispatch"
    if _WAIT.search(name):
        return "wait" if lane_kind in ("python", "loader") else "runtime"
    if _TRANSFER.search(name):
        return "transfer"
    if _COMPILE.search(name) or lane_kind == "compiler":
        return "compile"
    if "::" in name or (name[:1].islower() and "_" in name) or lane_kind == "runtime":
        return "runtime"
    # an annotation inside a dispatch is a JAX-internal step, e.g. "Handle inputs"
    return "annotation" if parent_kind in (None, "annotation") else "runtime"


def _lane_kind(process: str, thread: str, is_main: bool, has_main: bool) -> str:
    if "/device:" in process:
        return "device"
    if thread.startswith("python") or thread == "MainThread":
        return "loader" if has_main and not is_main else "python"  # another Python thread
    return "compiler" if _COMPILER_THREAD.search(thread) else "runtime"


def parse_events(events: list[dict[str, Any]]) -> tuple[tuple[Lane, ...], tuple[Span, ...], float]:
    """``(lanes, spans, wall seconds)`` inside the kit's wrapper; spans by lane, then start."""
    meta = [(e, str(e.get("args", {}).get("name", ""))) for e in events if e.get("ph") == "M"]
    process = {e.get("pid"): n for e, n in meta if e.get("name") == "process_name"}
    thread = {(e.get("pid"), e.get("tid")): n for e, n in meta if e.get("name") == "thread_name"}
    complete = [e for e in events if e.get("ph") == "X" and "dur" in e and "ts" in e]
    wrapper = next((e for e in complete if e.get("name") == WRAPPER), None)
    outer = [wrapper] if wrapper else complete  # what the traced code spans
    t0 = min((float(e["ts"]) for e in outer), default=0.0)
    t1 = max((float(e["ts"]) + float(e["dur"]) for e in outer), default=0.0)
    main_key = (wrapper.get("pid"), wrapper.get("tid")) if wrapper else None
    by_lane: dict[tuple, list[dict]] = {}
    for e in complete:
        name = str(e.get("name", ""))
        if name != WRAPPER and not name.startswith(_SKIP) and t0 <= float(e["ts"]) <= t1:
            by_lane.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    names = {key: thread.get(key, str(key[1])) for key in by_lane}
    kinds = {
        key: _lane_kind(process.get(key[0], ""), names[key], key == main_key, main_key is not None)
        for key in by_lane
    }
    lanes, spans, counts = [], [], Counter()
    for key in sorted(by_lane, key=lambda k: (k != main_key, _ORDER[kinds[k]], str(k))):
        kind = kinds[key]
        counts[kind] += 1
        if key == main_key:
            name = "python (main)"
        elif kind == "device":
            name = f"{process.get(key[0], '').split('/')[-1]} {names[key]}"[:40]
        else:
            name = f"{'XLA runtime' if kind == 'runtime' else kind} thread {counts[kind]}"
        lane = Lane(len(lanes), name, kind)
        lanes.append(lane)
        stack: list[int] = []  # indices into spans of the open parents
        for e in sorted(by_lane[key], key=lambda e: (float(e["ts"]), -float(e["dur"]))):
            start = (float(e["ts"]) - t0) * 1e-6
            dur = min(float(e["dur"]) * 1e-6, (t1 - float(e["ts"])) * 1e-6)
            while stack and spans[stack[-1]].end < start + dur - 1e-9:
                stack.pop()  # ended before this one ends: not its parent
            name, parent = str(e.get("name", "")), stack[-1] if stack else -1
            parent_kind = spans[parent].kind if stack else None
            span_kind = _span_kind(name, e.get("args") or {}, kind, parent_kind)
            spans.append(Span(lane.index, name, start, dur, len(stack), parent, span_kind))
            stack.append(len(spans) - 1)
    return tuple(lanes), tuple(spans), max(t1 - t0, 0.0) * 1e-6
