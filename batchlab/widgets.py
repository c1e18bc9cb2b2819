"""Explorers: controls -> a measurement through the core -> a plot updated in place.

Every explorer follows one pattern, so each notebook's widget reads alike:

* ``compute(**params)`` -- plain Python that calls the kit's measuring
  functions. The widget holds no measurement logic of its own.
* ``draw(explorer)`` -- returns a matplotlib figure from what was measured.
* :meth:`Explorer.update` -- the plain-Python entry point: set parameters,
  measure (or reuse a cached result), redraw, and return the result. Tests
  and the notebook cell after each widget call it; no browser is needed.

The ipywidgets front end is built lazily (``explorer.widget``), so the
entry point works where ipywidgets is not installed. Expensive updates run
only when a slider is released (``continuous_update=False``), a
"measuring..." state is shown while work runs, results of settings
already measured come from a cache, and errors appear in the widget as the
kit's message instead of a traceback lost in the log.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable, Sequence
from typing import Any

from ._checks import check_callable
from ._format import format_bytes, format_seconds
from .measure import Measurement, measure
from .sweep import Sweep, SweepPoint


class Explorer:
    """Base explorer: parameters -> ``compute`` -> cached result -> ``draw``.

    Args:
      compute: ``compute(**params) -> result``; must use the kit's measuring
        functions.
      params: the starting value of every parameter.
      controls: ``{param: factory}`` where ``factory(value)`` makes the
        ipywidgets control for that parameter (called lazily).
      draw: ``draw(explorer) -> matplotlib Figure`` or ``None`` for no plot.
      describe: ``describe(result) -> str`` one-line HTML summary.
      title: shown above the controls.
    """

    def __init__(
        self,
        compute: Callable[..., Any],
        params: dict[str, Any],
        *,
        controls: dict[str, Callable[[Any], Any]] | None = None,
        draw: Callable[[Explorer], Any] | None = None,
        describe: Callable[[Any], str] | None = None,
        title: str = "",
    ) -> None:
        self._compute = check_callable(compute, "compute")
        self.params = dict(params)
        self._controls = controls or {}
        self._draw = draw
        self._describe = describe or (lambda r: html.escape(repr(r)))
        self.title = title
        self.cache: dict[tuple, Any] = {}
        self.result: Any = None
        self.error: str | None = None
        self.last_update_seconds: float | None = None
        self.last_from_cache = False
        self._ui = None

    # ---------------------------------------------------------------- core
    def _key(self, params: dict[str, Any]) -> tuple:
        return tuple(sorted((k, repr(v)) for k, v in params.items()))

    def update(self, **changes: Any) -> Any:
        """Sets parameters, measures (or reuses the cache), redraws, returns the result.

        Raises the kit's error for a bad setting (it is also shown in the
        widget); unknown parameter names raise ``TypeError``.
        """
        unknown = set(changes) - set(self.params)
        if unknown:
            raise TypeError(
                f"update() got unknown parameter(s) {sorted(unknown)}; this explorer has {sorted(self.params)}."
            )
        new = {**self.params, **changes}
        t0 = time.perf_counter()
        self._set_status("measuring...", busy=True)
        key = self._key(new)
        try:
            if key in self.cache:
                result, self.last_from_cache = self.cache[key], True
            else:
                result, self.last_from_cache = self._compute(**new), False
                self.cache[key] = result
        except Exception as e:
            self.error = f"{type(e).__name__}: {e}"
            self._set_status(self.error, error=True)
            raise
        self.params, self.result, self.error = new, result, None
        self._redraw()
        self.last_update_seconds = time.perf_counter() - t0
        self._set_status(self._describe(result) + (" <i>(cached)</i>" if self.last_from_cache else ""))
        return result

    # ------------------------------------------------------------------ UI
    @property
    def widget(self):
        """The ipywidgets front end (built on first use)."""
        if self._ui is None:
            self._ui = self._build()
        return self._ui

    def _build(self):
        import ipywidgets as w

        self._status = w.HTML(layout=w.Layout(min_height="2em"))
        self._image = w.Image(format="png", layout=w.Layout(max_width="100%"))
        controls = []
        for name, factory in self._controls.items():
            control = factory(self.params[name])
            control.observe(self._on_change(name), names="value")
            controls.append(control)
        title = w.HTML(f"<b>{html.escape(self.title)}</b>") if self.title else None
        box = w.VBox([c for c in (title, w.HBox(controls), self._status, self._image) if c is not None])
        if self.result is not None:
            self._redraw()
            self._set_status(self._describe(self.result))
        return box

    def _on_change(self, name: str):
        def handler(change):
            try:
                self.update(**{name: change["new"]})
            except Exception:
                pass  # already shown in the status line by update()
        return handler

    def _set_status(self, text: str, *, busy: bool = False, error: bool = False) -> None:
        if self._ui is None:
            return
        if error:
            self._status.value = f"<span style='color:#b00020'>&#9888; {html.escape(text)}</span>"
        elif busy:
            self._status.value = f"<i>&#9203; {html.escape(text)}</i>"
        else:
            self._status.value = text

    def _redraw(self) -> None:
        if self._ui is None or self._draw is None:
            return
        from .plots import figure_to_png

        fig = self._draw(self)
        if fig is not None:
            self._image.value = figure_to_png(fig)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


class BatchSizeExplorer(Explorer):
    """A batch-size slider that re-measures ``fn`` and redraws runtime and memory.

    Args:
      fn: a batched function.
      make_batch: ``make_batch(batch_size) -> args`` builds its inputs.
      batch_sizes: the slider's stops (e.g. powers of two).
      batch_size: the starting value (default: the first stop).
      **measure_options: passed to :func:`batchlab.measure`.

    Example:
      >>> import jax.numpy as jnp
      >>> ex = BatchSizeExplorer(lambda x: x.sum(1), lambda b: (jnp.ones((b, 8)),), [1, 4], repeat=3)
      >>> m = ex.update(batch_size=4)
      >>> m.memory.argument_bytes, sorted(ex.measured)
      (128, [1, 4])
    """

    def __init__(
        self,
        fn: Callable,
        make_batch: Callable[[int], Sequence[Any]],
        batch_sizes: Sequence[int],
        *,
        batch_size: int | None = None,
        title: str = "Batch size explorer",
        **measure_options: Any,
    ) -> None:
        check_callable(fn)
        check_callable(make_batch, "make_batch")
        batch_sizes = [int(b) for b in batch_sizes]
        if not batch_sizes or any(b < 1 for b in batch_sizes):
            raise ValueError(f"`batch_sizes` must be a non-empty list of positive ints, got {batch_sizes!r}.")
        batch_size = batch_sizes[0] if batch_size is None else batch_size
        if batch_size not in batch_sizes:
            raise ValueError(f"`batch_size`={batch_size} is not one of the slider's stops {batch_sizes}.")
        self.fn, self.make_batch, self.batch_sizes = fn, make_batch, batch_sizes
        self.measure_options = measure_options

        def compute(batch_size: int) -> Measurement:
            args = make_batch(batch_size)
            return measure(fn, *(args if isinstance(args, (tuple, list)) else (args,)), **measure_options)

        def control(value: int):
            import ipywidgets as w

            return w.SelectionSlider(options=batch_sizes, value=value, description="batch size",
                                     continuous_update=False, style={"description_width": "initial"},
                                     layout=w.Layout(width="420px"))

        super().__init__(compute, {"batch_size": batch_size}, controls={"batch_size": control},
                         draw=lambda ex: ex.as_sweep().plot(current=ex.params["batch_size"]),
                         describe=_describe_measurement, title=title)
        self.update()

    @property
    def measured(self) -> dict[int, Measurement]:
        """Every batch size measured so far, and its :class:`Measurement`."""
        return {int(dict(k)["batch_size"]): m for k, m in self.cache.items()}

    def as_sweep(self) -> Sweep:
        s = Sweep(name=getattr(self.fn, "__name__", "fn"), parameter="batch_size")
        s.points = [SweepPoint(b, m) for b, m in sorted(self.measured.items())]
        return s


def _describe_measurement(m: Measurement) -> str:
    return (
        f"run <b>{format_seconds(m.median)}</b> per batch (wall clock, median of {m.runs}); "
        f"first call compiled in {format_seconds(m.compile_seconds)}; "
        f"planned peak <b>{format_bytes(m.memory.peak_bytes)}</b> (compiled memory analysis)"
    )
