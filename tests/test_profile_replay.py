"""Replaying BFC allocator events from a (synthetic) profiler trace: the CPU-testable half of
the GPU check (benchmarks/gpu_fragmentation.py)."""

from __future__ import annotations

import gzip
import json

import pytest
from conftest import load_benchmark

from batchlab import allocator as A

_script = load_benchmark("gpu_fragmentation")
BfcEvent, compare_with_model, parse_bfc_events = (
    _script.BfcEvent,
    _script.compare_with_model,
    _script.parse_bfc_events,
)

MiB = 1 << 20
BASE = 0x7F0000000000


def synthetic_profile(trace, capacity, *, encode_in_name=False, shift=0):
    """The events a real BFC allocator would record for ``trace`` (made with the model itself)."""
    a = A.BFCAllocator(capacity)
    out, where = [], {}
    for t, e in enumerate(trace.events):
        if e.kind == "alloc":
            chunk = a.allocate(e.id, e.size)
            where[e.id] = (chunk.offset, chunk.size)
            offset, size, name = chunk.offset, chunk.size, "MemoryAllocation"
        else:
            offset, size = where.pop(e.id)
            a.free(e.id)
            name = "MemoryDeallocation"
        args = {
            "allocator_name": "GPU_0_bfc",
            "addr": BASE + offset + (shift if t % 2 else 0),
            "requested_bytes": e.size if e.kind == "alloc" else 0,
            "allocation_bytes": size,
            "bytes_allocated": a.bytes_in_use,
            "fragmentation": a.fragmentation,
        }
        event = {"ph": "i", "ts": float(t), "pid": 1, "tid": 1}
        if encode_in_name:
            event["name"] = name + "#" + ",".join(f"{k}={v}" for k, v in args.items()) + "#"
        else:
            event["name"], event["args"] = name, args
        out.append(event)
    out.append({"name": "unrelated", "ph": "X", "ts": 0.5})
    out.append(
        {"name": "MemoryAllocation", "ts": 9.0, "args": {"allocator_name": "host_bfc", "addr": 1}}
    )
    return {"traceEvents": out}


def workload():
    return A.workloads.workload("per-item", 12)


def write(profile, folder):
    path = folder / "perfetto_trace.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(profile, f)
    return path


@pytest.mark.parametrize("encode_in_name", [False, True])
def test_a_trace_of_the_model_replays_exactly(tmp_path, encode_in_name):
    trace = workload()
    capacity = 2 * trace.peak_rounded_bytes()
    path = write(synthetic_profile(trace, capacity, encode_in_name=encode_in_name), tmp_path)
    events = parse_bfc_events(str(path))
    assert len(events) == len(trace.events) and {e.allocator_name for e in events} == {"GPU_0_bfc"}
    c = compare_with_model(events, capacity=capacity)
    assert c.placement_agreement == 1.0 and c.max_in_use_difference == 0
    assert c.real_peak == c.simulated_peak and c.skipped_frees == 0
    assert c.text().startswith("GPU_0_bfc: ") and "same relative address: 100.0%" in c.text()


def test_a_different_allocator_shows_as_disagreement(tmp_path):
    trace = workload()
    capacity = 2 * trace.peak_rounded_bytes()
    events = parse_bfc_events(write(synthetic_profile(trace, capacity, shift=4096), tmp_path))
    assert compare_with_model(events, capacity=capacity).placement_agreement < 1.0


def test_frees_of_earlier_buffers_are_skipped_and_counted():
    events = [
        BfcEvent(0, "free", 99, 0, 256, 0, 0.0, "GPU_0_bfc"),
        BfcEvent(1, "alloc", 4096, 1000, 1024, 1024, 0.0, "GPU_0_bfc"),
    ]
    c = compare_with_model(events, capacity=MiB)
    assert c.skipped_frees == 1 and c.events == 1


def test_bad_input():
    with pytest.raises(TypeError, match=r"`path` must be the path .* got dict"):
        parse_bfc_events({"traceEvents": []})
    with pytest.raises(ValueError, match=r"`events` is empty"):
        compare_with_model([], capacity=MiB)
