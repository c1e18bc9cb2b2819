"""The explorer pattern: controls -> a measurement through the core -> a plot updated in place.

In the browser, controls measure on release; a "measuring..." state shows while work runs,
XLA compilations counted apart from run time; an optional ``preview`` shows a setting's plan
before it compiles; plots of settings already measured come from a PNG cache; an error shows
as the kit's message and the controls return to the last setting that worked.
"""

from __future__ import annotations

import contextlib
import html
import json
import re
import time
from collections.abc import Callable
from typing import Any

from batchlab._util.format import format_seconds
from batchlab._util.plotting import figure_to_png
from batchlab.measuring.compiles import count_compiles

_STYLE = (
    "<style>.batchlab-busy .batchlab-plot{opacity:.35;transition:opacity .15s}"
    ".batchlab-status{font-size:14px;line-height:1.4}"
    ".batchlab-error{color:#b00020;white-space:pre-wrap;font-family:monospace;font-size:13px}</style>"
)
_PNG_CACHE_SIZE = 64


def error_message(exc: BaseException) -> str:
    """The kit's one-paragraph message for an exception: type, then the text (shortened)."""
    text = str(exc).strip() or "(no message)"
    if len(text) > 1500:
        text = text[:1500] + " ... (shortened)"
    return f"{type(exc).__name__}: {text}"


def _to_png(fig: Any) -> bytes:
    return figure_to_png(fig, dpi=80, tight=False)


class Explorer:
    """Base explorer: parameters -> ``compute`` -> cached result -> ``draw``.

    :meth:`update` sets parameters, measures (or reuses ``cache``), redraws and returns the
    result; the ipywidgets front end (``widget``) is built on first use.

    Args:
      compute: ``compute(**params) -> result``, through the kit's measuring functions.
      params: the starting value of every parameter.
      controls: ``{param: factory}``, ``factory(value)`` making its ipywidgets control
        (:mod:`batchlab.widgets.controls`).
      draw: ``draw(explorer) -> matplotlib Figure`` (or ``None``).
      describe: ``describe(result) -> str``, a one-line HTML summary.
      preview: ``preview(**params) -> plan``, cheap (nothing compiled or timed), shown for a
        new setting (as its ``repr``) while ``compute`` runs; ``draw`` sees it as
        ``explorer.pending``.

    Example:
      >>> ex = Explorer(lambda n: n * n, {"n": 3}, describe=lambda r: f"square {r}")
      >>> ex.update(n=4), ex.update(n=3), ex.update(n=4)
      (16, 9, 16)
      >>> ex.last_from_cache, len(ex.cache), ex.status_text
      (True, 2, 'square 16 (from cache: nothing re-measured)')
    """

    reports_compiles = False  # True when ``describe`` itself reports the compilations
    plot_per_setting = False  # True when a setting's plot never changes once measured

    def __init__(
        self,
        compute: Callable[..., Any],
        params: dict[str, Any],
        *,
        controls: dict[str, Callable[[Any], Any]] | None = None,
        draw: Callable[[Explorer], Any] | None = None,
        describe: Callable[[Any], str] | None = None,
        title: str = "",
        preview: Callable[..., Any] | None = None,
    ) -> None:
        self._compute, self._preview, self._controls = compute, preview, dict(controls or {})
        self.params, self._draw, self.title = dict(params), draw, title
        self._describe = describe or (lambda r: html.escape(repr(r)))
        self.cache: dict[tuple, Any] = {}
        self.result = self.error = self.pending = self._ui = None
        self.last_update_seconds = self.last_first_answer_seconds = None
        self.last_from_cache, self.last_compiles = False, 0
        self.last_compile_seconds = self.last_trace_seconds = 0.0
        self.status_text = ""
        self.control_widgets: dict[str, Any] = {}
        self._png: dict[tuple, bytes] = {}
        self._version = 0
        self._syncing = False

    def _key(self, params: dict[str, Any]) -> tuple:
        return tuple(sorted((k, repr(v)) for k, v in params.items()))

    def update(self, **changes: Any) -> Any:
        """Sets parameters, measures (or reuses the cache), redraws, returns the result.

        A bad setting raises the kit's error (shown in the widget too; the last good setting
        stays); an unknown parameter name raises ``TypeError``.
        """
        unknown = set(changes) - set(self.params)
        if unknown:
            raise TypeError(
                f"update() got unknown parameter(s) {sorted(unknown)}; this explorer has {sorted(self.params)}."
            )
        for name, value in changes.items():  # `choices`: the only values a control can show
            stops = getattr(self, "choices", {}).get(name)
            if stops is not None and value not in stops:
                raise ValueError(
                    f"`{name}`={value!r} is not one of this explorer's settings {list(stops)}; "
                    f"pick one of them (or build the explorer with it among the stops)."
                )
        new, t0 = {**self.params, **changes}, time.perf_counter()
        key = self._key(new)
        cached = key in self.cache
        self.last_first_answer_seconds = None
        try:
            if cached:
                result = self.cache[key]
                self.last_compiles, self.last_compile_seconds, self.last_trace_seconds = 0, 0.0, 0.0
            else:
                what = ", ".join(f"{k}={v!r}" for k, v in changes.items()) or "the starting setting"
                lead = self._show_preview(new, what, t0)
                with count_compiles() as compiles:
                    compiles.on_compile = lambda name, s: self._set_status(
                        f"{lead}: compiled {name} ({format_seconds(s)}; {compiles.count} "
                        "compilation(s) so far, not run time); measuring...",
                        state="busy",
                        params=new,
                    )
                    result = self._compute(**new)
                self.cache[key] = result
                self._version += 1
                self.last_compiles, self.last_compile_seconds = compiles.count, compiles.seconds
                self.last_trace_seconds = compiles.trace_seconds
        except Exception as e:
            self.pending, self.error = None, error_message(e)
            self._set_status(self.error, state="error", params=new)
            self._sync_controls()  # back to the last setting that worked
            raise
        self.params, self.result, self.error, self.last_from_cache = new, result, None, cached
        self.pending = None
        self._sync_controls()
        draw_error = self._redraw()
        self.last_update_seconds = time.perf_counter() - t0
        if self.last_first_answer_seconds is None:
            self.last_first_answer_seconds = self.last_update_seconds
        self.error = draw_error
        if draw_error:
            self._set_status(draw_error, state="error", params=new)
        else:
            self._set_status(self._done_text(result), state="done", params=new)
        return result

    def _show_preview(self, params: dict[str, Any], what: str, t0: float) -> str:
        """Status (with a ``preview``, also the plan's plot) for a new setting; returns its lead."""
        if self._preview is None:
            self._set_status(
                f"compiling and measuring {what} (a new setting: XLA compiles first if its "
                "shapes are new)...",
                state="busy",
                params=params,
            )
            return what
        self.pending = self._preview(**params)
        lead = f"{what}: {self.pending!r}"
        self._set_status(f"{lead}; compiling and measuring...", state="busy", params=params)
        if self._ui is not None and self._draw is not None:
            with contextlib.suppress(Exception):  # a preview that cannot draw keeps the old plot
                fig = self._draw(self)
                if fig is not None:
                    self._image.value = _to_png(fig)
        self.last_first_answer_seconds = time.perf_counter() - t0
        return lead

    def _done_text(self, result: Any) -> str:
        text = self._describe(result)
        if self.last_from_cache:
            return text + " <i>(from cache: nothing re-measured)</i>"
        if self.last_compiles and not self.reports_compiles:
            return text + (
                f" <i>(new setting: {self.last_compiles} XLA compilation(s), "
                f"{format_seconds(self.last_compile_seconds)} of compiling, not counted as run time)</i>"
            )
        return text

    def figure(self):
        """The figure the widget shows for the current result (``None`` without ``draw``)."""
        if self._draw is None or self.result is None:
            return None
        return self._draw(self)

    @property
    def widget(self):
        """The ipywidgets front end (built on first use)."""
        if self._ui is None:
            self._ui = self._build()
        return self._ui

    def _build(self):
        import ipywidgets as w

        self._status = w.HTML(layout=w.Layout(min_height="2.5em"))
        display = None if self._draw else "none"
        layout = w.Layout(max_width="100%", width="auto", align_self="flex-start", display=display)
        self._image = w.Image(format="png", layout=layout)
        self._image.add_class("batchlab-plot")
        for name, factory in self._controls.items():
            control = factory(self.params[name])  # measures on release (see controls)
            control.observe(self._on_change(name), names="value")
            self.control_widgets[name] = control
        title = f"<b style='font-size:15px'>{html.escape(self.title)}</b>" if self.title else ""
        row = w.HBox(list(self.control_widgets.values()), layout=w.Layout(flex_flow="row wrap"))
        self._ui = w.VBox([w.HTML(_STYLE + title), row, self._status, self._image])
        self._ui.add_class("batchlab-explorer")
        if self.result is not None:
            self._redraw()
            self._set_status(self._done_text(self.result), state="done", params=self.params)
        return self._ui

    def _on_change(self, name: str):
        def handler(change):
            if not self._syncing:
                with contextlib.suppress(Exception):  # already shown in the widget by update()
                    self.update(**{name: change["new"]})

        return handler

    def _sync_controls(self) -> None:
        self._syncing = True
        try:
            for name, control in self.control_widgets.items():
                if control.value != self.params[name]:
                    with contextlib.suppress(Exception):  # a value the control cannot show
                        control.value = self.params[name]
        finally:
            self._syncing = False

    def _set_status(self, text: str, *, state: str, params: dict[str, Any]) -> None:
        self.status_text = html.unescape(re.sub(r"<[^>]+>", "", text))
        if self._ui is None:
            return
        if state == "error":
            text = (
                f"<div class='batchlab-error'>&#9888; {html.escape(text)}</div>"
                "<div><i>The explorer still shows the last setting that worked.</i></div>"
            )
        elif state == "busy":
            text = f"<i>&#8635; {html.escape(text)}</i>"
        shown = html.escape(json.dumps(params, default=repr, sort_keys=True), quote=True)
        self._status.value = (
            f"<div class='batchlab-status' data-state='{state}' data-params='{shown}'>{text}</div>"
        )
        if state == "busy":
            self._ui.add_class("batchlab-busy")
        else:
            self._ui.remove_class("batchlab-busy")

    def _redraw(self) -> str | None:
        """Shows the current plot (from the PNG cache when possible); returns an error or None."""
        if self._ui is None or self._draw is None:
            return None
        key = (self._key(self.params), 0 if self.plot_per_setting else self._version)
        if key not in self._png:
            try:
                fig = self._draw(self)
            except Exception as e:
                return "could not draw the plot: " + error_message(e)
            if fig is None:
                return None
            if len(self._png) >= _PNG_CACHE_SIZE:
                self._png.pop(next(iter(self._png)))
            self._png[key] = _to_png(fig)
        self._image.value = self._png[key]
        return None

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
