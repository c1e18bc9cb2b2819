"""Load the next batches in a background thread while the current one computes."""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import jax

from batchlab._util.checks import check_positive_int

THREAD_PREFIX = "batchlab-prefetch"
_ids = itertools.count()
_DONE = object()


class _Failure(NamedTuple):
    error: BaseException
    index: int


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
    for index in itertools.count():
        if stop.is_set():
            return  # the consumer stopped
        try:
            # a named span in the profiler trace: batchlab.trace() shows it on this thread's lane
            with jax.profiler.TraceAnnotation(f"prefetch batch {index}"):
                item = jax.device_put(next(source), device)
        except StopIteration:
            _put(q, stop, _DONE)
            return
        except BaseException as e:
            _put(q, stop, _Failure(e, index))
            return
        if not _put(q, stop, item):
            return


def prefetch(iterator: Iterable[Any], size: int = 2, device: Any = None) -> Iterator[Any]:
    """Loads and transfers up to ``size`` batches ahead in a background thread.

    Args:
      iterator: any iterable of batches (a generator that loads from disk, ...).
      size: how many batches may wait, loaded, in the queue (at least 1). Each waiting
        batch holds device memory: 2 is enough to overlap.
      device: a ``jax.Device`` or a ``Sharding`` (e.g. from :func:`batchlab.shard_batch`'s
        ``sharding``); ``None``: the default device.

    Example:
      >>> import numpy as np
      >>> batches = (np.full(3, i) for i in range(4))
      >>> [int(b[0]) for b in prefetch(batches, size=2)]
      [0, 1, 2, 3]
    """
    size = check_positive_int(size, "size")
    if device is not None and not isinstance(device, (jax.Device, jax.sharding.Sharding)):
        raise TypeError(
            f"`device` must be a jax.Device (e.g. jax.devices()[0]) or a Sharding, or None for the "
            f"default device; got {type(device).__name__} {device!r:.40}."
        )
    try:
        if iterator is None or isinstance(iterator, (str, bytes)):
            raise TypeError
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
    name = f"{THREAD_PREFIX}-{next(_ids)}"
    thread = threading.Thread(
        target=_produce, args=(source, q, stop, device), name=name, daemon=True
    )
    thread.start()
    try:
        while (item := q.get()) is not _DONE:
            if isinstance(item, _Failure):
                if hasattr(item.error, "add_note"):  # Python 3.11+
                    item.error.add_note(
                        f"(raised by the loader in prefetch's background thread, "
                        f"after {item.index} batch(es) were delivered)"
                    )
                raise item.error
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
