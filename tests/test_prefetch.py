"""Tests for batchlab.prefetch: order, completeness, errors where they happen, no hanging thread."""

from __future__ import annotations

import gc
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_close

from batchlab import prefetch
from batchlab.loading import compare_prefetch, prefetch_threads


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


def test_pytrees_and_device_placement(maybe_jit):
    device = jax.devices()[0]
    batches = ({"x": np.ones((2, 3)) * i, "y": np.arange(2) + i} for i in range(4))
    f = maybe_jit(lambda b: b["x"].sum() + b["y"].sum())
    got = [float(f(b)) for b in prefetch(batches, device=device)]
    assert got == [6.0 * i + (1 + 2 * i) for i in range(4)]


def test_items_land_on_the_device_in_the_background():
    got = next(prefetch(iter([np.zeros(4)]), device=jax.devices()[0]))
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


def test_slow_loader_stop_waits_at_most_one_item():
    def slow():
        while True:
            time.sleep(0.05)
            yield np.zeros(1)

    it = prefetch(slow(), size=1)
    next(it)
    t0 = time.perf_counter()
    it.close()
    assert time.perf_counter() - t0 < 2.0
    assert _wait_no_threads() == []


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


def test_compare_prefetch_overlaps_sleeping_loader():
    def batches():
        for _ in range(6):
            time.sleep(0.02)
            yield np.ones(8)

    def step(b):
        time.sleep(0.02)
        return jnp.sum(b)

    c = compare_prefetch(batches, step, repeat=1)
    # a Python step (sleep) does not dispatch asynchronously: the no-sync serial loop cannot
    # overlap, so prefetch beats even the best serial loop here (ideal 2.0; structure only)
    assert c.batches == 6 and c.speedup > 1.2 and c.speedup_when_syncing > 1.2
    assert c.best_serial == min(c.serial_sync, c.serial_async)
    assert c.best_prefetch == min(c.prefetch_sync, c.prefetch_async)
    assert set(c.seconds) == {
        "serial, sync every step",
        "serial, no sync",
        "prefetch, sync every step",
        "prefetch, no sync",
    }
    assert "prefetch vs best serial" in repr(c) and "<table" in c._repr_html_()


def test_compare_prefetch_async_jax_step_needs_no_prefetch():
    """A jitted step dispatches asynchronously: the serial loop without a sync overlaps too."""
    n = 640  # ~1 GFLOP per step: about 10 ms or more, so thread start-up is small beside it
    w = jnp.ones((n, n)) / n
    step = jax.jit(lambda b: jnp.tanh(jnp.tanh(b @ w) @ w).sum())
    step(jnp.ones((n, n))).block_until_ready()
    t0 = time.perf_counter()
    for _ in range(3):
        step(jnp.ones((n, n))).block_until_ready()
    wait = (time.perf_counter() - t0) / 3  # load time = compute time

    def batches():
        for _ in range(8):
            time.sleep(wait)
            yield np.ones((n, n), np.float32)

    c = compare_prefetch(batches, step, repeat=2)
    hidden = c.hidden_share(wait)  # robust to a busy machine, unlike the bare speed-ups
    assert hidden["serial, no sync"] > 0.4, (c, hidden)  # ideal 1.0: all the loading hidden
    assert hidden["prefetch, sync every step"] > 0.4, (c, hidden)
    assert c.async_speedup > 1.0 and c.speedup_when_syncing > 1.0, c


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
    from batchlab.loading import PrefetchComparison

    # 10 batches, L = 0.1 s, C = 0.1 s: sync 2.0 s; a perfect overlap takes 1.0 s
    c = PrefetchComparison(10, 2.0, 1.0, 1.5, 2.0, 2)
    assert c.hidden_share(0.1) == {
        "serial, no sync": pytest.approx(1.0),
        "prefetch, sync every step": pytest.approx(0.5),
        "prefetch, no sync": pytest.approx(0.0),
    }
    assert c.speedup == pytest.approx(1.0 / 1.5) and c.async_speedup == pytest.approx(2.0)
    assert PrefetchComparison(2, 0.2, 0.2, 0.2, 0.2, 2).hidden_share(0.1)["serial, no sync"] == 0.0
