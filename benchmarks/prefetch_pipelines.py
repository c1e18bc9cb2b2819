"""The same batches four ways, timed round-robin: serial or prefetched, waiting every step or
not (``bl.prefetch``, ``one_pass``). Used by benchmarks/prefetch.py and
benchmarks/overlap_targets.py (``python benchmarks/prefetch.py``); not part of the package."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import jax

from batchlab._util.checks import check_callable, check_positive_int
from batchlab._util.format import Rows, format_seconds
from batchlab.loading.prefetching import prefetch
from batchlab.measuring.sampler import interleaved

PIPELINES = (
    "serial, sync every step",
    "serial, no sync",
    "prefetch, sync every step",
    "prefetch, no sync",
)


def one_pass(batches: Iterable[Any], step: Callable, *, size: int = 0, sync: bool = False) -> int:
    """Runs ``step`` on every batch, prefetched ``size`` ahead (0: not); returns the batch count.

    ``sync`` waits for every step's result; else only the last is waited for, and JAX's
    asynchronous dispatch lets the next load run while the device computes.
    """
    n, out = 0, None
    for b in prefetch(batches, size=size) if size else batches:
        out = step(b)
        if sync:
            jax.block_until_ready(out)
        n += 1
    jax.block_until_ready(out)
    return n


@dataclass(frozen=True)
class PrefetchComparison(Rows):
    """Seconds per pass of the same batches: serial or prefetched, waiting every step or not."""

    batches: int
    serial_sync: float
    serial_async: float
    prefetch_sync: float
    prefetch_async: float
    size: int
    source: str = "full passes timed by bl.measuring.interleaved (round-robin), best pass of each"
    #: ``{pipeline: Samples}`` of seconds per pass, paired by round (for the ratio rules)
    samples: dict | None = field(default=None, compare=False, repr=False)

    @property
    def seconds(self) -> dict[str, float]:
        vals = (self.serial_sync, self.serial_async, self.prefetch_sync, self.prefetch_async)
        return dict(zip(PIPELINES, vals, strict=True))

    @property
    def speedup(self) -> float:
        """best serial loop / best prefetch loop: what prefetch adds to a loop written well."""
        best_serial = min(self.serial_sync, self.serial_async)
        return best_serial / min(self.prefetch_sync, self.prefetch_async)

    @property
    def speedup_when_syncing(self) -> float:
        """serial / prefetch when both wait every step: ideally 2n/(n+1) when load = compute.

        Example:
          >>> round(PrefetchComparison(6, 0.24, 0.14, 0.14, 0.14, 2).speedup_when_syncing, 2)
          1.71
        """
        return self.serial_sync / self.prefetch_sync

    def hidden_share(self, load_seconds: float) -> dict[str, float]:
        """How much of the hideable time each pipeline hid, given the loader's time per batch.

        Example:
          >>> c = PrefetchComparison(10, 2.0, 1.1, 1.05, 1.0, 2)
          >>> {k: round(v, 2) for k, v in c.hidden_share(0.1).items()}
          {'serial, no sync': 0.9, 'prefetch, sync every step': 0.95, 'prefetch, no sync': 1.0}
        """
        compute = max(self.serial_sync / self.batches - load_seconds, 0.0)
        most = self.batches * min(load_seconds, compute)
        return {
            name: (self.serial_sync - t) / most if most > 0 else 0.0
            for name, t in self.seconds.items()
            if name != PIPELINES[0]
        }

    _header = ("pipeline", "seconds per pass")
    _inline = True

    def _title(self) -> str:
        return f"{self.batches} batches; {self.source}"

    def _rows(self) -> list[tuple[str, str]]:
        return [(k, format_seconds(v)) for k, v in self.seconds.items()] + [
            ("prefetch vs the best serial loop", f"{self.speedup:.2f}x"),
            ("prefetch vs serial, both syncing every step", f"{self.speedup_when_syncing:.2f}x"),
        ]


def compare_prefetch(
    make_batches: Callable[[], Iterable[Any]],
    step: Callable[[Any], Any],
    *,
    size: int = 2,
    repeat: int = 6,
) -> PrefetchComparison:
    """Times ``for b in make_batches(): step(b)`` four ways: serial/prefetch x sync every step/not.

    ``size`` is the prefetch queue size; ``repeat`` the rounds, one pass of each pipeline per
    round (at least 2, and 6 for a ratio rule to decide). A busy machine stretches the times,
    so no test asserts the ratios (a quiet machine's: ``benchmarks/prefetch.py``).
    """
    check_callable(make_batches, "make_batches")
    check_callable(step, "step")
    size = check_positive_int(size, "size")
    repeat = check_positive_int(repeat, "repeat")

    def run(name: str) -> int:
        fresh, sync = make_batches(), name.endswith("every step")
        if name.startswith("prefetch"):
            return one_pass(fresh, step, size=size, sync=sync)
        return one_pass(map(jax.device_put, fresh), step, sync=sync)

    n = run(PIPELINES[0])  # compiles `step`, counts the batches
    timed = interleaved(
        {name: functools.partial(run, name) for name in PIPELINES},
        rounds=max(2, repeat),
        passes=1,
        max_seconds=3600.0,
        min_sample_time=1e-9,  # one pass per sample: a pass is what is compared
    )
    best = [timed[k].fastest for k in PIPELINES]
    return PrefetchComparison(n, *best, size=size, samples=timed)
