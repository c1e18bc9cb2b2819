"""Tests for batchlab.timeline: traces captured here (CPU), and a synthetic GPU-like trace."""

from __future__ import annotations

import gzip
import itertools
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import batchlab
from batchlab import format_seconds, trace
from batchlab.timeline import timeline
from batchlab.timeline.intervals import intersect_length, merge, subtract, union_length
from batchlab.timeline.model import Timeline, build_timeline
from batchlab.timeline.parse import find_trace_file
from batchlab.timeline.plot import TIME_AXIS

W = jax.random.normal(jax.random.key(0), (448, 448)) / 21
heavy = jax.jit(lambda x: jnp.tanh(jnp.tanh(x @ W) @ W).sum())
X = jnp.ones((448, 448))


@pytest.fixture(scope="module")
def compute_seconds():
    heavy(X).block_until_ready()
    t0 = time.perf_counter()
    for _ in range(5):
        heavy(X).block_until_ready()
    return (time.perf_counter() - t0) / 5


def test_lanes_found_main_loader_and_runtime():
    def loader():
        with jax.profiler.TraceAnnotation("load batch 0"):
            time.sleep(0.01)

    with trace(label="lanes") as t:
        thread = threading.Thread(target=loader)
        thread.start()
        heavy(X).block_until_ready()
        thread.join()
    r = t.result
    assert isinstance(r, Timeline) and r.label == "lanes"
    assert r.lanes[0].name == "python (main)" and r.lanes[0].kind == "python"
    (loader_lane,) = r.lane("loader")
    assert [s.lane for s in r.find("load batch")] == [loader_lane.index]
    compute_lanes = {r.lanes[s.lane].kind for s in r.spans if s.kind == "compute"}
    assert compute_lanes & {"runtime", "python"}, "XLA ops appear on some lane"
    assert r.device_busy > 0 and r.wall >= r.device_busy
    assert all(s.start >= 0 and s.end <= r.wall + 1e-6 for s in r.spans)


def test_spans_nest_inside_their_parents():
    f = jax.jit(lambda x: x + 1)
    x = f(jnp.ones(3)).block_until_ready()
    with trace() as t, jax.profiler.TraceAnnotation("outer"):
        for i in range(2):
            with jax.profiler.TraceAnnotation(f"inner {i}"):
                f(x).block_until_ready()
    r = t.result
    spans = r.spans
    (outer,) = r.find("outer")
    inner = r.find("inner")
    assert [s.name for s in inner] == ["inner 0", "inner 1"]
    for s in inner:
        assert s.depth == outer.depth + 1 and spans[s.parent] is outer
        assert outer.start <= s.start and s.end <= outer.end + 1e-9
    dispatches = [s for s in spans if s.kind == "dispatch" and spans[s.parent].kind != "dispatch"]
    assert len(dispatches) == 2
    assert all(spans[d.parent].name.startswith("inner") for d in dispatches)
    for s in spans:  # every child lies inside its parent, one level deeper
        if s.parent >= 0:
            p = spans[s.parent]
            assert p.lane == s.lane and s.depth == p.depth + 1
            assert p.start <= s.start + 1e-9 and s.end <= p.end + 1e-9


def test_a_known_sleep_is_held_by_its_span():
    with trace() as t, jax.profiler.TraceAnnotation("sleep"):
        t0 = time.perf_counter()
        time.sleep(0.05)
        slept = time.perf_counter() - t0
    (span,) = t.result.find("sleep")
    assert span.kind == "annotation"
    # the span holds the sleep (two clocks: 2% slack); a busy machine only makes it longer
    assert span.duration > 0.98 * slept and span.duration > 0.05 * 0.98
    assert span.duration < 0.05 + 5.0  # seconds, not a unit error; a tight bound is load's to break


@pytest.mark.parametrize("calls", [1, 4, 16])
def test_dispatch_count_equals_calls(calls):
    f = jax.jit(lambda x: x * 2)
    x = f(jnp.ones(8))
    with trace(items=calls) as t:
        for _ in range(calls):
            y = f(x)
        y.block_until_ready()
    assert t.result.dispatches == calls and t.result.dispatches_per_item == 1.0
    with trace() as t:  # eager jnp ops: each is one jitted call, one dispatch
        for _ in range(calls):
            y = jnp.sin(x)
        y.block_until_ready()
    assert t.dispatches == calls  # the capture forwards to its result


def test_dispatches_per_item_eager_loop_vs_vmap():
    f = jax.jit(lambda x: jnp.tanh(x).sum())
    xs = jnp.ones((8, 16))
    eager = timeline(lambda xs: jnp.stack([f(x) for x in xs]), xs, steps=2, items=8)
    one = timeline(jax.jit(jax.vmap(f)), xs, steps=2, items=8)
    # eager: one call of f per item, plus iterating xs (one unstack) and one stack per step
    assert eager.dispatches >= 2 * 8 and eager.dispatches_per_item >= 1 and one.dispatches == 2
    assert one.dispatches_per_item == pytest.approx(1 / 8)
    assert len(eager.find("step")) == 2
    assert not [s for s in eager.spans if s.kind == "compile"]  # the warm-up ran first


def _loader_run(mode: str, wait: float, n: int = 6) -> Timeline:
    def load(i):
        with jax.profiler.TraceAnnotation(f"load batch {i}"):
            time.sleep(wait)
            return np.ones((448, 448), np.float32)

    with trace(label=mode) as t:
        if mode == "prefetch":
            for b in batchlab.prefetch(load(i) for i in range(n)):
                jax.block_until_ready(heavy(b))
        else:
            for i in range(n):
                out = heavy(load(i))
                if mode == "blocking":
                    jax.block_until_ready(out)
                elif mode == "float":
                    float(out)  # reading the loss waits too: np.asarray(jax.Array)
            jax.block_until_ready(out)
    return t.result


def _gated_prefetch_run(n: int = 5) -> Timeline:
    """Prefetch where the overlap is forced by causality, not by timing.

    The loader's load of batch i+1 starts, then waits until the main thread has computed
    batch i; the main thread computes batch i only once that load has started. So each
    compute of batch 0..n-2 lies inside an open load span on the loader's lane, on any
    machine, however busy. A loader that did not run ahead (a serial loop) would never start
    load i+1 while batch i is held: the waits below would time out and the test fail.
    """
    started = [threading.Event() for _ in range(n)]
    computed = [threading.Event() for _ in range(n)]
    ahead: list[bool] = []

    def source():
        for i in range(n):
            with jax.profiler.TraceAnnotation(f"load batch {i}"):
                started[i].set()
                if i > 0:
                    ahead.append(computed[i - 1].wait(60))
                yield np.ones((448, 448), np.float32)

    with trace(label="prefetch, gated") as t:
        for i, b in enumerate(batchlab.prefetch(source(), size=2)):
            if i + 1 < n:
                assert started[i + 1].wait(60), f"prefetch did not start loading batch {i + 1}"
            jax.block_until_ready(heavy(b))
            computed[i].set()
    assert ahead == [True] * (n - 1)
    return t.result


def test_overlap_prefetch_positive_blocking_about_zero(compute_seconds):
    # Deterministic evidence only (load changes how long things take, not what waits for
    # what); the overlap shares a quiet machine reaches are in benchmarks/timeline_overlap.py.
    blocking = _loader_run("blocking", compute_seconds)
    reading = _loader_run("float", compute_seconds)
    # a loop that waits for every step cannot load while the device computes: by causality
    assert reading.overlap_share < 0.05, reading
    assert blocking.overlap_share < 0.05, blocking
    assert not blocking.lane("loader") and not reading.lane("loader")
    ahead = _gated_prefetch_run()
    # every compute but the last lies inside an open load span: the timeline must see it
    assert len(ahead.lane("loader")) == 1
    assert ahead.overlap_share > 0.5, ahead  # ideal (and causally forced) about 4/5 or more
    assert ahead.overlap <= min(ahead.device_busy, ahead.host_busy) + 1e-9
    loader = ahead.lane("loader")[0].index
    assert [s.lane for s in ahead.find("load batch")] == [loader] * 5


def test_timeline_writes_a_trace_file_and_draws():
    r = timeline(jax.jit(lambda x: x @ x), jnp.ones((64, 64)), steps=3)
    assert r.trace_path.endswith(".json.gz")
    assert str(find_trace_file(r.trace_path.rsplit("/", 1)[0])) == r.trace_path
    fig = r.plot()
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == [lane.name for lane in r.lanes]
    assert ax.get_xlabel().startswith("time since") and "(ms)" in ax.get_xlabel()
    assert "cpu" in fig.get_suptitle() and jax.__version__ in fig.get_suptitle()
    assert fig.legends and fig.legends[0].get_texts()
    assert "Timeline(" in repr(r) and "3 dispatches" in repr(r)


def _synthetic_gpu_trace(path):
    """A small trace shaped like a GPU one: host dispatch, two device streams, allocator events
    (which are not spans)."""
    mib = 1 << 20
    host, gpu, tid = 1, 2, 10

    def x(pid, tid, name, ts, dur, **args):
        return {
            "ph": "X",
            "pid": pid,
            "tid": tid,
            "name": name,
            "ts": ts,
            "dur": dur,
            "args": {k: str(v) for k, v in args.items()},
        }

    def mem(name, ts, addr, size, total):
        return x(
            host,
            tid,
            name,
            ts,
            0.001,
            allocator_name="GPU_0_bfc",
            addr=addr,
            allocation_bytes=size,
            requested_bytes=size,
            bytes_allocated=total,
        )

    events = [
        {"ph": "M", "pid": host, "name": "process_name", "args": {"name": "/host:CPU"}},
        {"ph": "M", "pid": gpu, "name": "process_name", "args": {"name": "/device:GPU:0"}},
        {"ph": "M", "pid": host, "tid": tid, "name": "thread_name", "args": {"name": "python"}},
        {
            "ph": "M",
            "pid": gpu,
            "tid": 1,
            "name": "thread_name",
            "args": {"name": "Stream #13(Compute)"},
        },
        {
            "ph": "M",
            "pid": gpu,
            "tid": 2,
            "name": "thread_name",
            "args": {"name": "Stream #14(MemcpyH2D)"},
        },
        x(host, tid, "batchlab.trace", 0, 1000),
        x(host, tid, "PjitFunction(step)", 10, 20),
        x(host, tid, "PjitFunction(step)", 40, 20),
        x(host, tid, "PjRtStreamExecutorBuffer::Await", 60, 840),
        x(gpu, 2, "MemcpyH2D", 5, 15),
        x(gpu, 1, "loop_fusion", 25, 275, hlo_op="loop_fusion", hlo_module="jit_step"),
        x(gpu, 1, "gemm_fusion", 310, 490, hlo_op="gemm_fusion", hlo_module="jit_step"),
        mem("MemoryAllocation", 20, "a", 1 * mib, 1 * mib),
        mem("MemoryAllocation", 50, "b", 4 * mib, 5 * mib),
        mem("MemoryDeallocation", 400, "a", 1 * mib, 4 * mib),
        mem("MemoryAllocation", 500, "c", 2 * mib, 6 * mib),
        mem("MemoryDeallocation", 850, "b", 4 * mib, 2 * mib),
        mem("MemoryDeallocation", 900, "c", 2 * mib, 0),
    ]
    with gzip.open(path, "wt") as f:
        json.dump({"displayTimeUnit": "ns", "traceEvents": events}, f)


def test_synthetic_gpu_trace_streams(tmp_path):
    path = tmp_path / "perfetto_trace.json.gz"
    _synthetic_gpu_trace(path)
    r = build_timeline(path, items=2)
    kinds = [lane.kind for lane in r.lanes]
    assert kinds == ["python", "device", "device"]
    assert r.wall == pytest.approx(1e-3)
    assert r.device_busy == pytest.approx((275 + 490) * 1e-6)  # kernels only, not the memcpy
    assert r.dispatches == 2 and r.dispatches_per_item == 1.0
    assert r.overlap == 0  # the host only dispatched and waited
    assert not r.find("Memory"), "allocator events are not spans"
    assert len(r.plot().axes) == 1


def test_overlap_is_per_thread_an_inline_op_does_not_hide_the_loader(tmp_path):
    """XLA:CPU may run an op inline on the calling thread; the loader thread still overlaps it."""

    def x(tid, name, ts, dur, **args):
        return {"ph": "X", "pid": 1, "tid": tid, "name": name, "ts": ts, "dur": dur, "args": args}

    events = [
        {"ph": "M", "pid": 1, "tid": 1, "name": "thread_name", "args": {"name": "python"}},
        {"ph": "M", "pid": 1, "tid": 2, "name": "thread_name", "args": {"name": "python"}},
        x(1, "batchlab.trace", 0, 1000),
        x(1, "PjitFunction(step)", 100, 500),
        x(1, "fusion", 110, 480, hlo_op="fusion"),  # inline on the main thread
        x(1, "CommonPjRtBuffer::Await", 600, 300),
        x(2, "load batch 1", 200, 600),  # the loader thread, at the same time
    ]
    path = tmp_path / "perfetto_trace.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)
    r = build_timeline(path)
    assert [lane.kind for lane in r.lanes] == ["python", "loader"]
    assert r.device_busy == pytest.approx(480e-6)
    assert r.host_work == pytest.approx(600e-6)  # the main thread only dispatched and waited
    assert r.overlap == pytest.approx((590 - 200) * 1e-6)
    assert r.host_busy == pytest.approx((800 - 100) * 1e-6)  # main 100..600, loader 200..800


def test_interval_helpers_against_a_grid():
    rng = np.random.default_rng(0)
    grid = np.linspace(0, 10, 20001)
    for _ in range(20):
        a = [tuple(sorted(rng.uniform(0, 10, 2))) for _ in range(rng.integers(0, 6))]
        b = [tuple(sorted(rng.uniform(0, 10, 2))) for _ in range(rng.integers(0, 6))]

        def cover(iv):
            m = np.zeros_like(grid, bool)
            for lo, hi in iv:
                m |= (grid >= lo) & (grid < hi)
            return m

        step = grid[1] - grid[0]
        assert union_length(a) == pytest.approx(cover(a).sum() * step, abs=0.01)
        assert intersect_length(a, b) == pytest.approx((cover(a) & cover(b)).sum() * step, abs=0.01)
        assert union_length(subtract(a, b)) == pytest.approx(
            (cover(a) & ~cover(b)).sum() * step, abs=0.01
        )
        merged = merge(a)
        assert all(x[1] < y[0] for x, y in itertools.pairwise(merged))


def test_exception_inside_stops_the_trace():
    with pytest.raises(ZeroDivisionError), trace() as t:
        _ = 1 / 0
    assert t.result is None
    with trace() as t2:  # the profiler is free again
        jnp.ones(2).block_until_ready()
    assert t2.result is not None


def test_bad_input():
    with pytest.raises(TypeError, match="`fn` must be"):
        timeline(42)
    with pytest.raises(ValueError, match="`steps` must be at least 1"):
        timeline(jnp.sin, jnp.ones(2), steps=0)
    with pytest.raises(ValueError, match="`items` must be at least 1"):
        trace(items=0)
    with pytest.raises(RuntimeError, match="Only one trace runs at a time"), trace(), trace():
        pass
    with pytest.raises(AttributeError):
        _ = trace().overlap  # no result before the block ran


def test_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"holds no perfetto_trace\.json\.gz"):
        find_trace_file(tmp_path)


def test_plot_timelines_shares_one_time_axis():
    from batchlab.plots import plot_timelines

    f = jax.jit(lambda x: x * 2)
    short = timeline(f, jnp.ones(3), steps=1, label="short")
    long = timeline(f, jnp.ones(3), steps=24, label="long")  # usually over 4x: a zoom
    fig = plot_timelines([short, long])
    assert len(fig.axes) == 2 and fig.axes[0].get_xlim() == fig.axes[1].get_xlim()
    assert "same time scale" in fig.get_suptitle() and fig.axes[1].get_xlabel() == TIME_AXIS
    assert (
        fig.axes[0].get_title(loc="left").startswith(f"short: wall {format_seconds(short.wall)};")
    )
    # on the shared axis the shorter run is hatched idle only up to its own end, marked by a line
    # (which of the two traces is shorter is up to the machine: read it)
    i, t = min(enumerate([short, long]), key=lambda it: it[1].wall)
    ax = fig.axes[i]
    hatched_ends = [p.get_x() + p.get_width() for p in ax.patches if p.get_hatch() == "//"]
    assert all(end <= t.wall * 1e3 + 1e-9 for end in hatched_ends), hatched_ends
    if t.wall < 0.99 * max(short.wall, long.wall):
        assert [ln.get_xdata()[0] for ln in ax.lines] == [pytest.approx(t.wall * 1e3)]
    # under a quarter of the longest, the run is drawn again zoomed to its own length
    walls = [short.wall, long.wall]
    for ax, w in zip(fig.axes, walls, strict=True):
        zooms = ax.child_axes
        if w < max(walls) / 4:
            assert len(zooms) == 1 and zooms[0].get_xlim() == pytest.approx((0, w * 1e3))
        else:
            assert not zooms
    with pytest.raises(ValueError, match="`timelines` is empty"):
        plot_timelines([])


def test_temporary_trace_folders_are_removed_at_exit():
    code = (
        "import batchlab, jax.numpy as jnp\n"
        "with batchlab.trace() as t:\n"
        "    jnp.ones(2).block_until_ready()\n"
        "print(t.result.trace_path)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    path = Path(out.stdout.strip().splitlines()[-1])
    (folder,) = [p for p in path.parents if p.name.startswith("batchlab-trace-")]
    assert path.name == "perfetto_trace.json.gz" and not folder.exists()  # removed at exit


def test_device_busy_between_clips_the_ops_to_a_window(tmp_path):
    path = tmp_path / "perfetto_trace.json.gz"
    _synthetic_gpu_trace(path)  # kernels at 25..300 and 310..800 us; a memcpy at 5..20 us
    r = build_timeline(path)
    between = lambda a, b: r.device_busy_between(a * 1e-6, b * 1e-6)  # noqa: E731 (from the start)
    assert between(0, 1000) == pytest.approx(r.device_busy)
    assert between(100, 400) == pytest.approx((300 - 100 + 400 - 310) * 1e-6)
    assert between(0, 25) == 0  # the copy is no XLA op
    assert between(300, 310) == 0
