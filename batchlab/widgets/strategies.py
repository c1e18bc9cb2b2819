"""A batch-size slider and strategy checkboxes, with a live runtime / memory plot."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from batchlab._util.checks import check_callable, check_positive_int, check_positive_ints
from batchlab._util.format import format_bytes, format_seconds
from batchlab.batching.comparison import Comparison, StrategyResult, compare
from batchlab.batching.comparison_plot import plot_comparison
from batchlab.batching.strategies import STRATEGIES
from batchlab.widgets.controls import stops_slider
from batchlab.widgets.explorer import Explorer


def _checkboxes(options: Sequence[str]):
    """A row of checkboxes whose ``value`` is the tuple of ticked options (one trait to observe)."""
    import ipywidgets as w
    import traitlets

    class CheckboxGroup(w.HBox):
        value = traitlets.Tuple()

        def __init__(self, value: Sequence[str]) -> None:
            width = w.Layout(width="110px")
            boxes = [
                w.Checkbox(value=o in value, description=o, indent=False, layout=width)
                for o in options
            ]
            super().__init__(boxes)
            self.value = tuple(value)
            for b in boxes:
                b.observe(self._sync, names="value")

        def _sync(self, _change: Any) -> None:
            self.value = tuple(b.description for b in self.children if b.value)

    return CheckboxGroup


class StrategyExplorer(Explorer):
    """Measures the ticked strategies at the chosen batch size; plots every point measured so far.

    The ticked strategies at a batch size are measured together by one
    :func:`batchlab.compare` (timed interleaved, paired by round) and kept, so
    moving the slider back costs nothing; ticking a new box re-times the
    ticked set together (a result is never set beside one timed at another
    moment).

    Args:
      fn: the per-item function.
      *args: the largest batch of inputs; smaller batch sizes take its first items.
      batch_sizes: the slider's stops (each at most the batch in ``args``).
      strategies: the strategies ticked at the start.
      chunk: items per chunk for ``"chunked"``.
      in_axes: as in ``jax.vmap``.
      manual: the hand-batched version of ``fn`` (enables ``"manual"``).
      measured: a :class:`~batchlab.compare.Comparison` of the same function
        and inputs already measured (e.g. a sweep); its points are reused.
      **compare_options: passed to :func:`batchlab.compare` (e.g. ``max_time``).

    Example:
      >>> import jax.numpy as jnp
      >>> ex = StrategyExplorer(lambda x: x * 2, jnp.ones((8, 4)), batch_sizes=[4, 8],
      ...                       strategies=("vmap", "chunked"), chunk=2, repeat=2)
      >>> c = ex.update(batch_size=4)
      >>> c.strategies, sorted(ex.points)
      (['vmap', 'chunked'], [('chunked', 4), ('chunked', 8), ('vmap', 4), ('vmap', 8)])
    """

    def __init__(
        self,
        fn: Callable,
        *args: Any,
        batch_sizes: Sequence[int],
        strategies: Sequence[str] = ("loop", "vmap", "map", "chunked"),
        chunk: int = 8,
        in_axes: Any = 0,
        manual: Callable | None = None,
        measured: Comparison | None = None,
        title: str = "Batching strategies",
        **compare_options: Any,
    ) -> None:
        check_callable(fn)
        check_positive_int(chunk, "chunk")
        self.batch_sizes = check_positive_ints(batch_sizes, "batch_sizes")
        self.choices = {"batch_size": tuple(self.batch_sizes)}
        options = [s for s in STRATEGIES if s != "manual" or manual is not None]
        for s in strategies:
            if s not in options:
                raise ValueError(f"`strategies` may hold {options}, got {s!r}.")
        self.points: dict[tuple[str, int], StrategyResult] = {}
        for r in measured.results if measured is not None else ():
            if r.measurement is not None and (r.strategy != "chunked" or r.chunk == chunk):
                self.points[(r.strategy, r.items)] = r
        self.name = getattr(fn, "__name__", "fn")

        def compute(batch_size: int, strategies: tuple) -> Comparison:
            shown = [self.points.get((s, batch_size)) for s in strategies]
            runs = {r.samples.paired if r and r.samples else None for r in shown}
            if len(strategies) > 1 and (len(runs) != 1 or None in runs):
                todo = list(strategies)  # compared together: one interleaved run, paired
            else:
                todo = [s for s, r in zip(strategies, shown, strict=True) if r is None]
            if todo:
                c = compare(
                    fn,
                    *args,
                    strategies=todo,
                    chunk_size=chunk,
                    in_axes=in_axes,
                    manual=manual if "manual" in todo else None,
                    batch_sizes=[batch_size],
                    **compare_options,
                )
                self.points.update({(r.strategy, r.items): r for r in c.results})
            return Comparison(self.name, tuple(self.points[(s, batch_size)] for s in strategies))

        sizes = self.batch_sizes
        start = sizes[-1] if len(sizes) < 3 else sizes[len(sizes) // 2]
        super().__init__(
            compute,
            {"batch_size": start, "strategies": tuple(strategies)},
            controls={
                "batch_size": stops_slider(sizes, "batch size", width="380px"),
                "strategies": _checkboxes(options),
            },
            draw=self._plot,
            describe=_describe,
            title=title,
        )
        self.update()

    def update(self, **changes: Any) -> Comparison:
        if "strategies" in changes:
            changes["strategies"] = tuple(changes["strategies"])
        return super().update(**changes)

    def as_comparison(self) -> Comparison:
        """Every point measured so far, for the ticked strategies."""
        points = sorted(self.points.items(), key=lambda kv: kv[0][1])
        ticked = self.params["strategies"]
        return Comparison(self.name, tuple(r for (s, _), r in points if s in ticked))

    def _plot(self, _ex: Explorer):
        c = self.as_comparison()
        return plot_comparison(
            c, current=self.params["batch_size"] if len(c.batch_sizes) > 1 else None
        )


def _describe(c: Comparison) -> str:
    parts = [
        f"{r.label}: {r.error}"
        if r.measurement is None
        else f"{r.label}: <b>{format_seconds(r.run_seconds)}</b>, temp {format_bytes(r.temp_bytes)}"
        for r in c.results
    ]
    return "; ".join(parts) + " (wall clock median; compiled memory analysis)"
