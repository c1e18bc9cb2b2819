"""Tests for batchlab.prefetch: order, completeness, errors where they happen, no hanging thread."""

from __future__ import annotations

import gc
import itertools
import queue
import threading
import time
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_close, load_benchmark

from batchlab import prefetch
from batchlab.loading import prefetch_threads, prefetching

# the four-pipeline comparison lives beside the benchmarks that use it
_pipelines = load_benchmark("prefetch_pipelines")
compare_prefetch, PrefetchComparison = _pipelines.compare_prefetch, _pipelines.PrefetchComparison


def _wait_no_threads(timeout: float = 5.0) -> list:
    deadline = time.monotonic() + timeout
    while prefetch_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    return prefetch_threads()


@pytest.mark.parametrize("n", [0, 1, 2, 7, 50])
@pytest.mark.parametrize("size", [1, 2, 8])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_order_and_completeness(n, size, dtype):
    data = [np.full((3,), i, dtype) for i in range(n)]
    out = list(prefetch(iter(data), size=size))
    assert len(out) == n
    for got, want in zip(out, data, strict=False):
        assert isinstance(got, jax.Array)
        assert_close(got, want)
    assert _wait_no_threads() == []


def test_pytrees(maybe_jit):
    batches = ({"x": np.ones((2, 3)) * i, "y": np.arange(2) + i} for i in range(4))
    f = maybe_jit(lambda b: b["x"].sum() + b["y"].sum())
    got = [float(f(b)) for b in prefetch(batches)]
    assert got == [6.0 * i + (1 + 2 * i) for i in range(4)]


def test_items_land_on_the_default_device_in_the_background():
    got = next(prefetch(iter([np.zeros(4)])))
    assert got.devices() == {jax.devices()[0]}


class LoaderError(RuntimeError):
    pass


def _failing(n_ok: int):
    for i in range(n_ok):
        yield np.full(2, i)
    raise LoaderError(f"file {n_ok} is corrupt")


@pytest.mark.parametrize("n_ok", [0, 1, 5])
def test_loader_exception_reaches_consumer_at_its_position(n_ok):
    seen = []
    with pytest.raises(LoaderError, match=f"file {n_ok} is corrupt") as info:
        for b in prefetch(_failing(n_ok), size=2):
            seen.append(int(b[0]))
    assert seen == list(range(n_ok))  # every batch before the failure, none after
    assert any(f"after {n_ok} batch(es)" in note for note in getattr(info.value, "__notes__", []))
    assert _wait_no_threads() == []


def test_transfer_error_is_propagated_too():
    with pytest.raises(TypeError):
        list(prefetch(iter([np.zeros(2), "not an array"])))
    assert _wait_no_threads() == []


@pytest.mark.parametrize("how", ["break", "close", "del", "exception"])
def test_early_stop_leaves_no_thread(how):
    closed = threading.Event()

    def endless():
        try:
            i = 0
            while True:
                yield np.full(2, i)
                i += 1
        finally:
            closed.set()

    if how == "break":
        for i, _ in enumerate(prefetch(endless(), size=2)):
            if i == 3:
                break
    elif how == "close":
        it = prefetch(endless(), size=2)
        next(it)
        it.close()
    elif how == "del":
        it = prefetch(endless(), size=2)
        next(it)
        del it
        gc.collect()
    else:
        with pytest.raises(ZeroDivisionError):
            for _ in prefetch(endless(), size=2):
                1 / 0  # noqa: B018
    assert _wait_no_threads() == []
    assert closed.wait(5.0), "the loader's own cleanup (finally) did not run"


def test_stop_ends_a_loader_waiting_on_a_full_queue_and_starts_no_load(monkeypatch):
    """close() while the loader waits to put a batch on a full queue: it ends, loading no more."""
    started: list[int] = []
    puts = threading.Semaphore(0)

    class Watched(queue.Queue):
        def put(self, item, block=True, timeout=None):
            puts.release()
            return super().put(item, block, timeout)

    monkeypatch.setattr(prefetching, "queue", types.SimpleNamespace(Queue=Watched, Full=queue.Full))

    def source():
        for i in itertools.count():
            started.append(i)
            yield np.full(1, i)

    it = prefetch(source(), size=1)
    next(it)  # batch 0 taken, batch 1 waits in the queue: the third put (batch 2) finds it full
    assert all(puts.acquire(timeout=60) for _ in range(3)), "the loader did not run ahead"
    before = len(started)
    it.close()
    # ended by the time close() returns (a put that blocked on the full queue would keep it
    # alive past join's timeout), and no load started after close()
    assert prefetch_threads() == [], "close() returned with the loader still running"
    assert len(started) == before, f"{len(started) - before} loads started after close()"


def test_unstarted_prefetch_starts_no_thread():
    it = prefetch(iter([np.zeros(1)]))
    assert prefetch_threads() == []
    del it


@pytest.mark.parametrize(
    "size,error,match",
    [
        (0, ValueError, "`size` must be at least 1"),
        (-2, ValueError, "`size` must be at least 1"),
        (1.5, TypeError, "`size` must be a positive int"),
    ],
)
def test_bad_size(size, error, match):
    with pytest.raises(error, match=match):
        prefetch(iter([]), size=size)


def test_not_iterable():
    with pytest.raises(TypeError, match="`iterator` must be iterable"):
        prefetch(42)


def test_prefetch_loads_ahead_while_the_consumer_holds_a_batch_and_at_most_size_plus_one(
    monkeypatch,
):
    """What makes prefetch overlap, shown by causality rather than by a clock.

    The consumer takes batch 0 and asks for nothing more: the loader goes on by itself
    (a serial loop would start no load until asked), and stops once ``size`` batches wait in
    the queue and one more is in its hands: it finds the queue full, and loads nothing more.
    Load changes how soon, never whether.
    """
    n, size = 8, 2
    started = [threading.Event() for _ in range(n)]
    full = threading.Event()  # the loader tried to put a batch and found the queue full

    class Watched(queue.Queue):
        def put(self, item, block=True, timeout=None):
            try:
                super().put(item, block, timeout)
            except queue.Full:
                full.set()
                raise

    monkeypatch.setattr(prefetching, "queue", types.SimpleNamespace(Queue=Watched, Full=queue.Full))

    def source():
        for i in range(n):
            started[i].set()
            yield np.full(2, i)

    it = prefetch(source(), size=size)
    assert int(next(it)[0]) == 0
    assert all(started[i].wait(60) for i in range(1, size + 2)), "the loader did not run ahead"
    full.clear()  # from here on: the loader holds batch size + 1 (or will) and retries its put
    assert full.wait(60), "the loader never waited on a full queue: its bound is not enforced"
    # it holds batch size + 1 and waits for room: only a take can let it load one more
    assert not started[size + 2].is_set(), "the loader ran more than size + 1 batches ahead"
    assert [int(b[0]) for b in it] == list(range(1, n))
    assert _wait_no_threads() == []


def _counting(n: int, log: list):
    def batches():
        for i in range(n):
            log.append(("load", i))
            yield np.full(8, i, np.float32)

    return batches


def test_compare_prefetch_runs_every_pipeline_over_every_batch():
    # structure and counts only; the speed-ups a quiet machine reaches are in
    # benchmarks/prefetch.py (targets, side by side in one run)
    log: list = []
    steps: list = []

    def step(b):
        steps.append(int(b[0]))
        time.sleep(0.002)  # a Python step: no asynchronous dispatch
        return jnp.sum(b)

    c = compare_prefetch(_counting(6, log), step, repeat=2)
    passes = len(log) // 6  # the count, each pipeline's warm-up and calibration, 2 rounds
    assert c.batches == 6 and c.size == 2 and passes >= 1 + 4 * 3
    assert len(log) == passes * 6 and steps == list(range(6)) * passes  # every batch, in order
    assert [len(c.samples[k].values) for k in c.seconds] == [2] * 4
    assert len({s.paired for s in c.samples.values()}) == 1  # one interleaved run
    assert c.serial_sync == c.samples["serial, sync every step"].fastest
    best_serial = min(c.serial_sync, c.serial_async)
    assert c.speedup == best_serial / min(c.prefetch_sync, c.prefetch_async)
    assert c.speedup_when_syncing == c.serial_sync / c.prefetch_sync
    assert all(t > 0 for t in c.seconds.values())
    assert list(c.seconds) == [
        "serial, sync every step",
        "serial, no sync",
        "prefetch, sync every step",
        "prefetch, no sync",
    ]
    assert set(c.hidden_share(0.002)) == set(list(c.seconds)[1:])
    assert "prefetch vs the best serial loop=" in repr(c) and "<table" in c._repr_html_()


def test_compare_prefetch_jax_step_sees_every_batch_in_order_in_every_pipeline():
    """A jitted step (asynchronous dispatch): the same batches reach it in all four pipelines."""
    w = jnp.ones((32, 32)) / 32
    step = jax.jit(lambda b: jnp.tanh(b @ w).sum())
    seen: list = []

    def batches():
        for i in range(4):
            yield np.full((8, 32), i / 4, np.float32)

    def tracked(b):
        out = step(b)
        seen.append(out)
        return out

    c = compare_prefetch(batches, tracked, repeat=1)
    want = [float(step(b)) for b in batches()]
    assert c.batches == 4
    assert [float(o) for o in seen] == want * (len(seen) // 4)  # every pass, in order
    assert all(isinstance(o, jax.Array) for o in seen)


def test_prefetch_annotates_each_batch_on_its_own_thread():
    from batchlab import trace

    def batches():
        for i in range(3):
            time.sleep(0.005)
            yield np.full(4, i)

    with trace() as t:
        got = [int(b[0]) for b in prefetch(batches())]
    assert got == [0, 1, 2]
    spans = t.result.find("prefetch batch")
    assert [s.name for s in spans][:3] == [
        "prefetch batch 0",
        "prefetch batch 1",
        "prefetch batch 2",
    ]
    lanes = {t.result.lanes[s.lane].kind for s in spans}
    assert lanes == {"loader"}, "the loads run on the prefetch thread, not the main thread"


def test_compare_prefetch_bad_args():
    with pytest.raises(TypeError, match="`make_batches` must be a function"):
        compare_prefetch([1, 2], lambda b: b)
    with pytest.raises(TypeError, match="`step` must be a function"):
        compare_prefetch(lambda: [1], None)


def test_hidden_share_reads_compute_from_the_syncing_pass():
    # 10 batches, L = 0.1 s, C = 0.1 s: sync 2.0 s; a perfect overlap takes 1.0 s
    c = PrefetchComparison(10, 2.0, 1.0, 1.5, 2.0, 2)
    assert c.hidden_share(0.1) == {
        "serial, no sync": pytest.approx(1.0),
        "prefetch, sync every step": pytest.approx(0.5),
        "prefetch, no sync": pytest.approx(0.0),
    }
    assert c.speedup == pytest.approx(
        1.0 / 1.5
    ) and c.serial_sync / c.serial_async == pytest.approx(2.0)
    assert PrefetchComparison(2, 0.2, 0.2, 0.2, 0.2, 2).hidden_share(0.1)["serial, no sync"] == 0.0
