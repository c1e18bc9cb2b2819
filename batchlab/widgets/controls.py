"""Control factories: ``factory(value)`` -> an ipywidgets control that measures on release."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from batchlab._util.format import format_bytes


def control(kind: str, *, width: str = "auto", **options: Any) -> Callable[[Any], Any]:
    """``factory(value)`` -> ``ipywidgets.<kind>(value=value, **options)``."""

    def make(value: Any):
        import ipywidgets as w

        style, layout = {"description_width": "initial"}, w.Layout(width=width)
        made = getattr(w, kind)(value=value, style=style, layout=layout, **options)
        if "continuous_update" in made.trait_names():
            made.continuous_update = False
        return made

    return make


def choice(options: Sequence[Any], *, description: str, label: Callable = str, width: str = "auto"):
    """A dropdown over ``options``, each shown as ``label(value)``."""
    shown = [(label(o), o) for o in options]
    return control("Dropdown", options=shown, description=description, width=width)


def stops_slider(stops: Sequence[Any], label: str, width: str = "360px"):
    """A slider over exactly these values."""
    return control("SelectionSlider", options=list(stops), description=label, width=width)


def budget_slider(budgets: Sequence[int]):
    """A slider over these budgets (bytes), labelled in binary units."""
    shown = [(format_bytes(b), b) for b in budgets]
    return control("SelectionSlider", options=shown, description="budget", width="420px")
