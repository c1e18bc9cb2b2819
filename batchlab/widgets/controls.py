"""Control factories: ``factory(value)`` -> an ipywidgets control that measures on release."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


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


def choice(options: Sequence[Any], *, description: str, label: Callable = str, **kw: Any):
    """A dropdown (or ``kind=`` another selection) over ``options``, shown as ``label(value)``."""
    shown = [(label(o), o) for o in options]
    return control(kw.pop("kind", "Dropdown"), options=shown, description=description, **kw)


def stops_slider(stops: Sequence[Any], label: str, width: str = "360px", shown: Callable = str):
    """A slider over exactly these values, each shown as ``shown(value)``."""
    return choice(stops, description=label, label=shown, width=width, kind="SelectionSlider")
