"""00's batch-size slider, 01's ``in_axes``/``out_axes`` dropdowns, 02's shape boxes and 03's
strategy comparison: re-measured (or the error shown), plotted live."""

from __future__ import annotations

import ast
import functools
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax

from batchlab._util.checks import check_callable, check_positive_int, check_positive_ints
from batchlab._util.format import format_bytes, format_seconds
from batchlab.batching.axes import AxesExplanation, explain_axes
from batchlab.batching.axes_spec import param_names
from batchlab.batching.broadcasting import BroadcastError, SilentBroadcastWarning, check_broadcast
from batchlab.batching.comparison import Comparison, StrategyResult, compare
from batchlab.batching.comparison_plot import plot_comparison
from batchlab.batching.strategies import STRATEGIES
from batchlab.measuring.per_item import PerItemCost, Sweep, SweepPoint, per_item_cost
from batchlab.measuring.timing import Measurement, measure
from batchlab.widgets.controls import choice, control, stops_slider
from batchlab.widgets.explorer import Explorer


class BatchSizeExplorer(Explorer):
    """A batch-size slider: ``fn`` on ``make_batch(batch_size)``, measured and redrawn.

    Example:
      >>> import jax.numpy as jnp
      >>> ex = BatchSizeExplorer(lambda x: x.sum(1), lambda b: jnp.ones((b, 8)), [1, 4], repeat=3)
      >>> m = ex.update(batch_size=4)
      >>> ex.per_item().paired, ex.per_item(paired=False).paired
      (True, False)
    """

    def __init__(
        self,
        fn: Callable,
        make_batch: Callable[[int], Sequence[Any]],
        batch_sizes: Sequence[int],
        *,
        title: str = "Batch size explorer",
        **measure_options: Any,
    ) -> None:
        check_callable(fn)
        check_callable(make_batch, "make_batch")
        batch_sizes = check_positive_ints(batch_sizes, "batch_sizes")
        self.fn, self.make_batch = fn, make_batch
        self._jitted = jax.jit(fn)
        super().__init__(
            lambda batch_size: measure(fn, *self._args(batch_size), **measure_options),
            {"batch_size": batch_sizes[0]},
            controls={"batch_size": stops_slider(batch_sizes, "batch size", width="440px")},
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

    def per_item(self, *, paired: bool = True) -> PerItemCost:
        """The measured sizes as a :class:`PerItemCost` (``paired``: ends re-timed, interleaved)."""
        call_at = lambda b: functools.partial(self._jitted, *self._args(b))  # noqa: E731
        return per_item_cost(self.as_sweep(), call_at=call_at if paired else None)

    def as_sweep(self) -> Sweep:
        """Every measured batch size as a :class:`batchlab.measuring.Sweep`."""
        measured = sorted((int(dict(k)["batch_size"]), m) for k, m in self.cache.items())
        return Sweep(getattr(self.fn, "__name__", "fn"), points=[SweepPoint(*p) for p in measured])

    def _describe(self, m: Measurement) -> str:
        return (
            f"batch size <b>{self.params['batch_size']}</b>: run <b>{format_seconds(m.median)}</b> "
            f"per batch (wall clock, median of {m.runs}); planned peak "
            f"<b>{format_bytes(m.memory.planned_bytes)}</b> (compiled memory analysis)"
        )


class StrategyExplorer(Explorer):
    """The ticked strategies at a batch size, from one :func:`batchlab.compare` run each.

    ``args``: the largest batch (smaller ones take its first items); ``manual``: hand-batched.
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
        max_time: float = 0.3,
    ) -> None:
        check_callable(fn)
        check_positive_int(chunk, "chunk")
        sizes = check_positive_ints(batch_sizes, "batch_sizes")
        options = [s for s in STRATEGIES if s != "manual" or manual is not None]
        self.name = getattr(fn, "__name__", "fn")
        self.points: dict[tuple[str, int], StrategyResult] = {}

        def compute(batch_size: int, strategies: tuple) -> Comparison:
            shown = [self.points.get((s, batch_size)) for s in strategies]
            runs = {r.samples.paired if r and r.samples else None for r in shown}
            # not all from one interleaved run: time them together
            if len(runs) != 1 or None in runs:
                kw = dict(chunk_size=chunk, in_axes=in_axes, batch_sizes=[batch_size])
                hand = manual if "manual" in strategies else None
                c = compare(fn, *args, strategies=strategies, manual=hand, max_time=max_time, **kw)
                self.points.update({(r.strategy, r.items): r for r in c.results})
            return Comparison(self.name, tuple(self.points[(s, batch_size)] for s in strategies))

        start = sizes[-1] if len(sizes) < 3 else sizes[len(sizes) // 2]
        super().__init__(
            compute,
            {"batch_size": start, "strategies": tuple(strategies)},
            controls={
                "batch_size": stops_slider(sizes, "batch size", width="380px"),
                "strategies": control("SelectMultiple", options=options, description="strategies"),
            },
            draw=_draw_strategies,
            title="Batching strategies",
        )
        self.update()


def _draw_strategies(ex: StrategyExplorer):  # every point measured so far, of the ticked ones
    points = sorted(ex.points.items(), key=lambda kv: kv[0][1])
    ticked = ex.params["strategies"]
    c = Comparison(ex.name, tuple(r for (s, _), r in points if s in ticked))
    return plot_comparison(c, current=ex.params["batch_size"] if len(c.batch_sizes) > 1 else None)


class AxesOutcome(NamedTuple):
    """One setting of the dropdowns: an explanation, or the error and its fix."""

    in_axes: tuple
    out_axes: Any
    explanation: AxesExplanation | None
    error: str | None = None
    kind: str = "BatchAxisError"  # the error's type: the kit's, or jax.vmap's own ValueError

    @property
    def ok(self) -> bool:
        """Whether ``jax.vmap`` accepts this setting (no error)."""
        return self.error is None

    def __repr__(self) -> str:
        found = repr(self.explanation) if self.ok else f"{self.kind}: {self.error}"
        return f"in_axes={self.in_axes!r}, out_axes={self.out_axes!r}: {found}"


class AxesExplorer(Explorer):
    """One dropdown per argument of ``fn`` (its axis or None) and one for ``out_axes``."""

    def __init__(self, fn: Callable, *args: Any, in_axes: Sequence[Any] | None = None) -> None:
        check_callable(fn)
        self.names = param_names(fn, len(args))
        in_axes = tuple(in_axes) if in_axes is not None else (0,) * len(args)
        if len(in_axes) != len(args):
            raise ValueError(
                f"`in_axes` needs one entry per argument ({', '.join(self.names)}), "
                f"got {in_axes!r}."
            )
        params = {**dict(zip(self.names, in_axes, strict=True)), "out_axes": 0}

        def compute(**p: Any) -> AxesOutcome:
            spec, out = tuple(p[n] for n in self.names), p["out_axes"]
            try:
                return AxesOutcome(spec, out, explain_axes(fn, *args, in_axes=spec, out_axes=out))
            except ValueError as e:  # the kit's BatchAxisError, or jax.vmap's own
                return AxesOutcome(spec, out, None, str(e), type(e).__name__)

        def dropdown(name: str, options: list[Any]):
            options = options if params[name] in options else [params[name], *options]
            return choice(options, description=name, label=repr, width="170px")

        controls = {}
        for name, a in zip(self.names, args, strict=True):
            r = len(getattr(a, "shape", ()))  # every axis, from the front and from the back
            axes = [None, *range(r), *range(-1, -r - 1, -1)] if r else [None, 0]
            controls[name] = dropdown(name, axes)
        controls["out_axes"] = dropdown("out_axes", [0, 1, -1, None])
        super().__init__(
            compute,
            params,
            controls=controls,
            draw=lambda ex: ex.result.explanation.plot() if ex.result.ok else None,
            title="vmap axes explorer",
        )
        self.choices = {}  # any axis from Python: a wrong one comes back as JAX's error
        self.update()


class BroadcastOutcome(NamedTuple):
    """What :func:`batchlab.check_broadcast` says about two shapes: result, error, warnings."""

    shape: tuple[int, ...] | None
    error: str | None
    warnings: tuple[str, ...]

    def __repr__(self) -> str:
        if self.error is not None:
            return f"BroadcastError: {self.error}"
        return f"broadcasts to {self.shape}" + "".join(f"\nwarning: {w}" for w in self.warnings)


def _parse_shape(text: str, name: str) -> tuple[int, ...]:
    try:
        value = ast.literal_eval(text.strip() or "()")
    except (AttributeError, ValueError, SyntaxError):  # not text, or not a Python literal
        value = None
    value = (value,) if type(value) is int else value
    if not isinstance(value, tuple) or not all(type(d) is int and d >= 0 for d in value):
        raise (ValueError if isinstance(text, str) else TypeError)(
            f"`{name}` must be a shape like (4, 1), typed as text (update({name}='(4, 1)')), "
            f"got {text!r:.40}."
        )
    return value


def _broadcast(a: str, b: str) -> BroadcastOutcome:
    shapes = (_parse_shape(a, "a"), _parse_shape(b, "b"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SilentBroadcastWarning)
        try:
            shape, error = check_broadcast(*shapes), None
        except BroadcastError as e:
            shape, error = None, str(e)
    found = tuple(str(w.message) for w in caught if issubclass(w.category, SilentBroadcastWarning))
    return BroadcastOutcome(shape, error, found)


class BroadcastExplorer(Explorer):
    """Two shape boxes -> the broadcast shape, the conflict drawn, or the silent-trap warning."""

    def __init__(self, a: str = "(4,)", b: str = "(4, 3)") -> None:
        box = {n: control("Text", description=f"shape {n}", width="220px") for n in "ab"}
        super().__init__(_broadcast, {"a": a, "b": b}, controls=box, title="Broadcasting explorer")
        self.update()
