"""The explorer pattern: controls -> a measurement through the core -> a plot updated in place."""

from __future__ import annotations

import contextlib
import html
import json
import re
import time
from collections.abc import Callable
from typing import Any

import ipywidgets as w
from IPython.display import display

from batchlab._util.plotting import figure_to_png

_STYLE = (
    "<style>.batchlab-busy .batchlab-plot{opacity:.35;transition:opacity .15s}"
    ".batchlab-status{font-size:14px;line-height:1.4}.batchlab-error{color:#b00020;"
    "white-space:pre-wrap;font-family:monospace;font-size:13px}</style>"
)


def error_message(exc: BaseException) -> str:
    """The kit's one-paragraph message for an exception: type, then the text (shortened)."""
    text = str(exc).strip() or "(no message)"
    return f"{type(exc).__name__}: {text[:1500] + ' ... (shortened)' if len(text) > 1500 else text}"


def _pre(result: Any) -> str:
    """The default status line: the result as the kit prints it (red when it holds an error)."""
    red = ";color:#b00020" if getattr(result, "error", None) else ""
    style = f"font-size:12px;white-space:pre-wrap{red}"
    return f"<pre style='{style}'>{html.escape(repr(result))}</pre>"


class Explorer:
    """Parameters -> ``compute`` -> cached result -> ``draw``; on an error, back to the last good
    one.

    ``preview(**params)``: a cheap plan shown (as ``explorer.pending``) while ``compute`` runs.

    Example:
      >>> ex = Explorer(lambda n: n * n, {"n": 3}, describe=lambda r: f"square {r}")
      >>> ex.update(n=4), ex.update(n=3), ex.update(n=4), ex.status_text
      (16, 9, 16, 'square 16 (from cache: nothing re-measured)')
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
        preview: Callable[..., Any] | None = None,
    ) -> None:
        self._compute, self._preview, self._controls = compute, preview, dict(controls or {})
        self.params, self._draw, self.title = dict(params), draw, title
        self._describe = describe or _pre
        self.cache: dict[tuple, Any] = {}
        self.result = self.error = self.pending = self._ui = None
        self.last_update_seconds = self.last_first_answer_seconds = None
        self.last_from_cache = False
        self.status_text = ""
        self.control_widgets: dict[str, Any] = {}
        self._png: dict[tuple, bytes] = {}  # plots drawn since the last new measurement
        self.choices = {n: f.stops for n, f in self._controls.items() if hasattr(f, "stops")}

    def _key(self, params: dict[str, Any]) -> tuple:
        return tuple(sorted((k, repr(v)) for k, v in params.items()))

    def update(self, **changes: Any) -> Any:
        """Sets parameters (lists as tuples), measures or reuses the cache, redraws; returns it."""
        unknown = set(changes) - set(self.params)
        if unknown:
            raise TypeError(
                f"update() got unknown parameter(s) {sorted(unknown)}; this explorer has "
                f"{sorted(self.params)}."
            )
        changes = {k: tuple(v) if isinstance(v, list) else v for k, v in changes.items()}
        new, t0 = {**self.params, **changes}, time.perf_counter()
        for name, stops in self.choices.items():  # what the controls can show
            if new[name] not in stops:
                raise ValueError(
                    f"`{name}`={new[name]!r} is not one of this explorer's settings {list(stops)}; "
                    f"pick one of them (or build the explorer with it among the stops)."
                )
        key = self._key(new)
        self.last_from_cache = key in self.cache
        self.last_first_answer_seconds = None
        if not self.last_from_cache:
            what = ", ".join(f"{k}={v!r}" for k, v in changes.items()) or "the starting setting"
            try:
                self.cache[key] = self._measure(new, what, t0)
            except Exception as e:
                self.pending, self.error = None, error_message(e)
                self._set_status(self.error, state="error", params=new)
                self._sync_controls()  # back to the last setting that worked
                raise
            self._png.clear()  # every plot shows what was measured so far: the old ones are stale
        self.params, self.result, self.pending = new, self.cache[key], None
        self._sync_controls()
        self.error = self._redraw()
        self.last_update_seconds = time.perf_counter() - t0
        self.last_first_answer_seconds = self.last_first_answer_seconds or self.last_update_seconds
        state = "error" if self.error else "done"
        self._set_status(self.error or self._done_text(), state=state, params=new)
        return self.result

    def _measure(self, params: dict[str, Any], what: str, t0: float) -> Any:
        """``compute`` for a new setting; its preview (if any) shown first."""
        if self._preview is not None:
            self.pending = self._preview(**params)
            what = f"{what}: {self.pending!r}"
            if self._ui is not None and self._draw is not None:
                # a preview that cannot draw keeps the old plot
                with contextlib.suppress(Exception):
                    self._image.value = figure_to_png(self._draw(self), dpi=80, tight=False)
            self.last_first_answer_seconds = time.perf_counter() - t0
        text = f"compiling and measuring {what} (XLA compiles new shapes first)..."
        self._set_status(text, state="busy", params=params)
        return self._compute(**params)

    def _done_text(self) -> str:
        text = self._describe(self.result)
        return text + " <i>(from cache: nothing re-measured)</i>" if self.last_from_cache else text

    def figure(self):
        """The figure the widget shows for the current result (``None`` without ``draw``)."""
        return None if self._draw is None or self.result is None else self._draw(self)

    @property
    def widget(self):
        """The ipywidgets front end (built on first use)."""
        if self._ui is None:
            self._status = w.HTML(layout=w.Layout(min_height="2.5em"))
            hidden = {} if self._draw else {"display": "none"}
            layout = w.Layout(max_width="100%", width="auto", align_self="flex-start", **hidden)
            self._image = w.Image(format="png", layout=layout)
            self._image.add_class("batchlab-plot")
            for name, factory in self._controls.items():
                control = self.control_widgets[name] = factory(self.params[name])
                control.observe(lambda c, name=name: self._on_change(name, c["new"]), "value")
            title = f"<b style='font-size:15px'>{html.escape(self.title)}</b>" if self.title else ""
            row = w.HBox(list(self.control_widgets.values()), layout=w.Layout(flex_flow="row wrap"))
            self._ui = w.VBox([w.HTML(_STYLE + title), row, self._status, self._image])
            self._ui.add_class("batchlab-explorer")
            if self.result is not None:
                self._redraw()
                self._set_status(self._done_text(), state="done", params=self.params)
        return self._ui

    def _on_change(self, name: str, value: Any) -> None:
        if value != self.params[name]:  # not a control moved back to the setting shown
            with contextlib.suppress(Exception):  # already shown in the widget by update()
                self.update(**{name: value})

    def _sync_controls(self) -> None:
        """Moves the controls to ``params`` (an unchanged value notifies no observer)."""
        for name, control in self.control_widgets.items():
            with contextlib.suppress(Exception):  # a value the control cannot show
                control.value = self.params[name]

    def _set_status(self, text: str, *, state: str, params: dict[str, Any]) -> None:
        """The status line; ``data-state`` and ``data-params`` are what the browser test reads."""
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
        (self._ui.add_class if state == "busy" else self._ui.remove_class)("batchlab-busy")

    def _redraw(self) -> str | None:
        """Shows the current plot (from the PNG cache when possible); returns an error or None."""
        if self._ui is None or self._draw is None:
            return None
        key = self._key(self.params)
        if key not in self._png:
            try:
                fig = self._draw(self)
            except Exception as e:
                return "could not draw the plot: " + error_message(e)
            if fig is None:
                return None
            self._png[key] = figure_to_png(fig, dpi=80, tight=False)
        self._image.value = self._png[key]
        return None

    def _ipython_display_(self) -> None:
        display(self.widget)
