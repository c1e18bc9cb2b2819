"""The kit's controls: one look, one behaviour, for every explorer.

Each function returns a *control factory*: ``factory(value)`` builds the ipywidgets control
showing ``value`` (``Explorer(..., controls={"param": factory})``); every control measures
on release, and its ``value`` is the parameter ``compute`` receives.

Example:
  >>> from batchlab.widgets import controls
  >>> factory = controls.stops_slider([1, 2, 4, 8], "batch size")
  >>> factory(4).value, factory(4).continuous_update
  (4, False)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from batchlab._util.format import format_bytes

ControlFactory = Callable[[Any], Any]


def control(kind: str, *, width: str = "auto", **options: Any) -> ControlFactory:
    """``factory(value)`` -> ``ipywidgets.<kind>(value=value, **options)``, measured on release."""

    def make(value: Any):
        import ipywidgets as w

        style, layout = {"description_width": "initial"}, w.Layout(width=width)
        made = getattr(w, kind)(value=value, style=style, layout=layout, **options)
        if "continuous_update" in made.trait_names():
            made.continuous_update = False
        return made

    return make


def choice(
    options: Sequence[Any], *, description: str, label: Callable = str, width: str = "auto"
) -> ControlFactory:
    """A dropdown over ``options`` (any values; each shown as ``label(value)``)."""
    shown = [(label(o), o) for o in options]
    return control("Dropdown", options=shown, description=description, width=width)


def stops_slider(stops: Sequence[Any], label: str, width: str = "360px") -> ControlFactory:
    """A slider over exactly these values."""
    return control("SelectionSlider", options=list(stops), description=label, width=width)


def budget_slider(budgets: Sequence[int]) -> ControlFactory:
    """A slider over these budgets (bytes), labelled in binary units."""
    shown = [(format_bytes(b), b) for b in budgets]
    return control("SelectionSlider", options=shown, description="budget", width="420px")
