"""The explorer pattern: controls -> a measurement through the core -> a plot updated in place.

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

from .._checks import check_callable


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
        from ..plots import figure_to_png

        fig = self._draw(self)
        if fig is not None:
            self._image.value = figure_to_png(fig)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
