"""Load the next batches in a background thread while the current one computes."""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import jax

from batchlab._util.checks import check_positive_int

THREAD_PREFIX = "batchlab-prefetch"
_ids = itertools.count()
_DONE = object()


def _produce(source: Iterator, q: queue.Queue, stop: threading.Event) -> None:
    """Puts device batches on ``q``, then ``_DONE`` or the loader's error, until ``stop``."""
    for index in itertools.count():
        try:
            # a named span in the profiler trace: batchlab.trace() shows it on this thread's lane
            with jax.profiler.TraceAnnotation(f"prefetch batch {index}"):
                item = jax.device_put(next(source))
        except StopIteration:
            item = _DONE
        except BaseException as e:
            if hasattr(e, "add_note"):  # Python 3.11+
                e.add_note(
                    f"(raised by the loader in prefetch's background thread, "
                    f"after {index} batch(es) were delivered)"
                )
            item = e
        while not stop.is_set():  # never blocks forever on a full queue
            with contextlib.suppress(queue.Full):
                q.put(item, timeout=0.05)
                break
        if stop.is_set() or item is _DONE or isinstance(item, BaseException):
            return


def prefetch(iterator: Iterable[Any], size: int = 2) -> Iterator[Any]:
    """Loads and transfers up to ``size`` batches ahead in a background thread (2 overlaps),
    yielding them in order.

    Args:
      iterator: the batches (a generator, a list, ...), each a pytree of arrays.
      size: batches ahead, on the device, at most.

    Returns:
      An iterator of the batches, each after ``jax.device_put``; the loader's error is raised
      at the batch it failed on, and leaving the loop early stops the thread.

    Raises:
      TypeError: ``iterator`` is not iterable (or is a string), or ``size`` is not an int.
      ValueError: ``size`` is below 1.

    Example:
      >>> import numpy as np
      >>> [b.tolist() for b in prefetch(iter([np.arange(2), np.arange(3)]))]
      [[0, 1], [0, 1, 2]]
    """
    size = check_positive_int(size, "size")
    if isinstance(iterator, (str, bytes)) or not hasattr(iterator, "__iter__"):
        raise TypeError(
            f"`iterator` must be iterable (a generator, a list of batches, ...), got "
            f"{type(iterator).__name__} {iterator!r:.60}. Pass the batches, e.g. "
            "prefetch(iter_batches(...)), not a single batch."
        )
    return _consume(iter(iterator), size)  # a generator of its own: the checks above run at once


def _consume(source: Iterator, size: int) -> Iterator[Any]:
    q: queue.Queue = queue.Queue(maxsize=size)
    stop = threading.Event()
    name = f"{THREAD_PREFIX}-{next(_ids)}"
    thread = threading.Thread(target=_produce, args=(source, q, stop), name=name, daemon=True)
    thread.start()
    try:
        while (item := q.get()) is not _DONE:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()  # the producer gives up its next put within 0.05 s
        thread.join(timeout=10.0)
        if not thread.is_alive() and hasattr(source, "close"):
            source.close()  # run the loader's own cleanup (open files, ...)


def prefetch_threads() -> list[threading.Thread]:
    """The prefetch threads alive now (none is left hanging after a ``break``)."""
    return [t for t in threading.enumerate() if t.name.startswith(THREAD_PREFIX) and t.is_alive()]
