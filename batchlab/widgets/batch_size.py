"""A batch-size slider that re-measures a batched function (the tour's explorer)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax

from batchlab._util.checks import check_callable, check_positive_ints
from batchlab._util.format import format_bytes, format_seconds
from batchlab.measuring.measurement import Measurement
from batchlab.measuring.per_item import PerItemCost, per_item_cost
from batchlab.measuring.sweeps import Sweep, SweepPoint
from batchlab.measuring.timing import measure
from batchlab.widgets.controls import batch_size_slider
from batchlab.widgets.explorer import Explorer


class BatchSizeExplorer(Explorer):
    """A batch-size slider that re-measures ``fn`` and redraws runtime and memory.

    Args:
      fn: a batched function; make_batch: ``make_batch(batch_size) -> args``.
      batch_sizes: the slider's stops (e.g. powers of two); batch_size: the start.
      loop, loop_items: an optional :class:`batchlab.measuring.Measurement` of one
        ``jax.lax.map`` call over ``loop_items`` items (the same work one item at a time),
        drawn as the per-item line a batch must beat (:mod:`batchlab.measuring.per_item`).
      **measure_options: passed to :func:`batchlab.measure`.

    Example:
      >>> import jax.numpy as jnp
      >>> ex = BatchSizeExplorer(lambda x: x.sum(1), lambda b: (jnp.ones((b, 8)),), [1, 4], repeat=3)
      >>> m = ex.update(batch_size=4)
      >>> m.memory.argument_bytes, sorted(ex.measured)
      (128, [1, 4])
      >>> ex.per_item().paired, ex.per_item(paired=False).paired
      (True, False)
    """

    reports_compiles = True

    def __init__(
        self,
        fn: Callable,
        make_batch: Callable[[int], Sequence[Any]],
        batch_sizes: Sequence[int],
        *,
        batch_size: int | None = None,
        title: str = "Batch size explorer",
        loop: Measurement | None = None,
        loop_items: int | None = None,
        **measure_options: Any,
    ) -> None:
        check_callable(fn)
        check_callable(make_batch, "make_batch")
        batch_sizes = check_positive_ints(batch_sizes, "batch_sizes")
        batch_size = batch_sizes[0] if batch_size is None else batch_size
        if batch_size not in batch_sizes:
            raise ValueError(
                f"`batch_size`={batch_size} is not one of the slider's stops {batch_sizes}."
            )
        if loop is not None:
            if not isinstance(loop, Measurement):
                raise TypeError(
                    f"`loop` must be a batchlab.measuring.Measurement (from bl.measure), got {type(loop).__name__}."
                )
            if isinstance(loop_items, bool) or not isinstance(loop_items, int) or loop_items < 1:
                raise ValueError(
                    f"`loop_items` must be a positive int (the items in the `loop` call), got {loop_items!r}."
                )
        self.fn, self.make_batch, self.batch_sizes = fn, make_batch, batch_sizes
        self.choices = {"batch_size": tuple(batch_sizes)}
        self.measure_options, self.loop, self.loop_items = measure_options, loop, loop_items
        self._jitted = jax.jit(fn)
        super().__init__(
            lambda batch_size: measure(fn, *self._args(batch_size), **measure_options),
            {"batch_size": batch_size},
            controls={"batch_size": batch_size_slider(batch_sizes)},
            draw=lambda ex: ex.per_item(paired=False).plot(
                current=ex.params["batch_size"], memory=ex.as_sweep()
            ),
            describe=self._describe,
            title=title,
        )
        self.update()

    def _args(self, batch_size: int) -> tuple:
        args = self.make_batch(batch_size)
        return tuple(args) if isinstance(args, (tuple, list)) else (args,)

    @property
    def measured(self) -> dict[int, Measurement]:
        """Every batch size measured so far, and its :class:`Measurement`."""
        return {int(dict(k)["batch_size"]): m for k, m in self.cache.items()}

    def per_item(self, *, paired: bool = True) -> PerItemCost:
        """Every measured batch size (and the ``loop`` baseline) as a :class:`PerItemCost`.

        ``paired``: the smallest and the largest batch are timed again, interleaved
        (:func:`batchlab.measuring.interleaved`), and the speed-up is the median of the
        per-round ratios; ``False`` (the widget's live plot): the points as measured, apart.
        """
        call_at = self._call_at if paired else None
        return per_item_cost(self.as_sweep(), self.loop, self.loop_items, call_at=call_at)

    def _call_at(self, batch_size: int) -> Callable[[], Any]:
        args = self._args(batch_size)
        return lambda: self._jitted(*args)

    def as_sweep(self) -> Sweep:
        """Every measured batch size as a :class:`batchlab.measuring.Sweep` (tables and plots)."""
        s = Sweep(name=getattr(self.fn, "__name__", "fn"), parameter="batch_size")
        s.points = [SweepPoint(b, m) for b, m in sorted(self.measured.items())]
        return s

    def _describe(self, m: Measurement) -> str:
        compiled = (
            f"compile <b>{format_seconds(m.compile_seconds)}</b> ({m.compiles} XLA "
            "compilation(s), kept apart from run time)"
            if m.compiles
            else "no compile (JAX reused a compiled executable)"
        )
        return (
            f"batch size <b>{self.params['batch_size']}</b>: run <b>{format_seconds(m.median)}</b> "
            f"per batch (wall clock, median of {m.runs}); planned peak "
            f"<b>{format_bytes(m.memory.planned_bytes)}</b> (compiled memory analysis); {compiled}"
        )
