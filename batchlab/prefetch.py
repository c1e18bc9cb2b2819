"""Load the next batches in a background thread while the current one computes.

A serial training loop alternates: load batch ``i`` (the device waits),
compute on it (the loader waits). When loading takes ``L`` seconds and
computing ``C``, a pass over ``n`` batches takes ``n (L + C)``. With the
next batches loaded ahead in another thread it takes about
``n max(L, C)``: close to 2x faster when ``L ~ C``. JAX helps: its
dispatch is asynchronous, and NumPy file reads and XLA computations
release Python's GIL, so the two threads truly overlap.

:func:`prefetch` keeps the order of the batches, re-raises a loader's
exception in the consumer at the batch where it happened, and stops its
thread when the consumer stops early (``break``, an exception, or
``close()``).
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import jax

from ._checks import check_callable, check_positive_int
from ._format import format_seconds, html_table

THREAD_PREFIX = "batchlab-prefetch"
_ids = itertools.count()
_DONE = object()


class _Failure:
    def __init__(self, error: BaseException, index: int) -> None:
        self.error, self.index = error, index


def _put(q: queue.Queue, stop: threading.Event, item: Any) -> bool:
    """Puts ``item`` unless the consumer stopped; never blocks forever."""
    while not stop.is_set():
        try:
            q.put(item, timeout=0.05)
            return True
        except queue.Full:
            continue
    return False


def _produce(source: Iterator, q: queue.Queue, stop: threading.Event, device: Any) -> None:
    index = 0
    try:
        for item in source:
            if stop.is_set():
                return
            if not _put(q, stop, jax.device_put(item, device)):
                return
            index += 1
    except BaseException as e:
        _put(q, stop, _Failure(e, index))
        return
    _put(q, stop, _DONE)


def prefetch(iterator: Iterable[Any], size: int = 2, device: Any = None) -> Iterator[Any]:
    """Loads and transfers up to ``size`` batches ahead in a background thread.

    Each item from ``iterator`` (an array or a pytree of arrays) is moved to
    the device with ``jax.device_put(item, device)`` in the background
    thread, while the consumer computes on the previous one.

    Args:
      iterator: any iterable of batches (a generator that loads from disk, ...).
      size: how many batches may wait, loaded, in the queue (at least 1).
        Each waiting batch holds device memory: 2 is enough to overlap.
      device: a ``jax.Device`` or a ``Sharding`` (e.g. from
        :func:`batchlab.shard_batch`'s ``sharding``); ``None``: the default device.

    Returns:
      An iterator over the same batches, in the same order, on the device.
      If the loader raises, the consumer gets that exception (with a note)
      after the batches that came before it. Closing the iterator (or
      leaving a ``for`` loop early) stops the thread after at most the
      batch it was loading.

    Raises:
      TypeError: ``iterator`` is not iterable, or ``size`` is not an int.
      ValueError: ``size`` below 1.

    Example:
      >>> import numpy as np
      >>> batches = (np.full(3, i) for i in range(4))
      >>> [int(b[0]) for b in prefetch(batches, size=2)]
      [0, 1, 2, 3]
    """
    size = check_positive_int(size, "size")
    try:
        source = iter(iterator)
    except TypeError:
        raise TypeError(
            f"`iterator` must be iterable (a generator, a list of batches, ...), got "
            f"{type(iterator).__name__} {iterator!r:.60}. Pass the batches, e.g. "
            "prefetch(iter_batches(...)), not a single batch."
        ) from None
    return _consume(source, size, device)


def _consume(source: Iterator, size: int, device: Any) -> Iterator[Any]:
    q: queue.Queue = queue.Queue(maxsize=size)
    stop = threading.Event()
    thread = threading.Thread(
        target=_produce,
        args=(source, q, stop, device),
        name=f"{THREAD_PREFIX}-{next(_ids)}",
        daemon=True,
    )
    thread.start()
    try:
        while True:
            item = q.get()
            if item is _DONE:
                return
            if isinstance(item, _Failure):
                error = item.error
                if hasattr(error, "add_note"):
                    error.add_note(
                        f"(raised by the loader in prefetch's background thread, "
                        f"after {item.index} batch(es) were delivered)"
                    )
                raise error
            yield item
    finally:
        stop.set()
        while True:  # unblock a producer waiting on a full queue
            try:
                q.get_nowait()
            except queue.Empty:
                break
        thread.join(timeout=10.0)
        if not thread.is_alive() and hasattr(source, "close"):
            source.close()  # run the loader's own cleanup (open files, ...)


def prefetch_threads() -> list[threading.Thread]:
    """The prefetch threads alive now (tests use it to check none is left hanging).

    Example:
      >>> it = prefetch(iter(range(100)), size=1)
      >>> _ = next(it); it.close()
      >>> prefetch_threads()
      []
    """
    return [t for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX) and t.is_alive()]


@dataclass(frozen=True)
class PrefetchComparison:
    """The same pass over the batches, serial and with :func:`prefetch`, measured side by side."""

    batches: int
    serial_seconds: float
    prefetch_seconds: float
    size: int
    source: str = (
        "wall clock (time.perf_counter) of full passes, best of repeat, interleaved in one run"
    )

    @property
    def speedup(self) -> float:
        """serial time / prefetch time: 2.0 means the loading was hidden entirely when L = C."""
        return self.serial_seconds / self.prefetch_seconds

    def __repr__(self) -> str:
        return (
            f"PrefetchComparison({self.batches} batches: serial {format_seconds(self.serial_seconds)}, "
            f"prefetch(size={self.size}) {format_seconds(self.prefetch_seconds)}, "
            f"speedup {self.speedup:.2f}x)"
        )

    def _repr_html_(self) -> str:
        rows = [
            ("serial loop", format_seconds(self.serial_seconds)),
            (f"prefetch(size={self.size})", format_seconds(self.prefetch_seconds)),
            ("speedup", f"{self.speedup:.2f}x"),
        ]
        return html_table(rows, header=("pipeline", "seconds per pass"), caption=self.source)


def compare_prefetch(
    make_batches: Callable[[], Iterable[Any]],
    step: Callable[[Any], Any],
    *,
    size: int = 2,
    repeat: int = 3,
) -> PrefetchComparison:
    """Times ``for b in batches: step(b)`` with and without :func:`prefetch`.

    The two pipelines alternate (serial, prefetch, serial, ...) so a
    machine that gets busier during the run slows both alike, and each
    keeps its best pass (as ``timeit`` advises: other processes only ever
    add time, so the minimum is the least disturbed figure).

    Args:
      make_batches: ``make_batches()`` returns a fresh iterable of batches.
      step: the computation on one batch; its result is waited for.
      size: prefetch queue size.
      repeat: passes of each pipeline; the best of each is compared.

    Example:
      >>> import time, numpy as np
      >>> def batches():
      ...     for i in range(4):
      ...         time.sleep(0.01); yield np.ones(2)
      >>> c = compare_prefetch(batches, lambda b: time.sleep(0.01) or b, repeat=1)
      >>> c.batches, c.speedup > 1.2
      (4, True)
    """
    check_callable(make_batches, "make_batches")
    check_callable(step, "step")
    size = check_positive_int(size, "size")
    check_positive_int(repeat, "repeat")

    def run(batches: Iterable[Any]) -> int:
        n = 0
        for b in batches:
            jax.block_until_ready(step(b))
            n += 1
        return n

    n = run(make_batches())  # warm-up: compiles `step`
    serial, ahead = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run(jax.device_put(b) for b in make_batches())
        serial.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        run(prefetch(make_batches(), size=size))
        ahead.append(time.perf_counter() - t0)
    return PrefetchComparison(n, min(serial), min(ahead), size)
