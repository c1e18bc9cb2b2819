"""Control factories: ``factory(value)`` -> an ipywidgets control that measures on release."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as w


def control(kind: str, *, width: str = "auto", **options: Any) -> Callable[[Any], Any]:
    """``factory(value)`` -> ``ipywidgets.<kind>(value=value, **options)``."""

    def make(value: Any):
        style, layout = {"description_width": "initial"}, w.Layout(width=width)
        made = getattr(w, kind)(value=value, style=style, layout=layout, **options)
        if "continuous_update" in made.trait_names():
            made.continuous_update = False
        return made

    return make


def choice(options: Sequence[Any], description: str, *, label: Callable = str, **kw: Any):
    """A dropdown (or ``kind=`` another selection) over ``options``, shown as ``label(value)``.

    ``factory.stops``: the options, the only settings ``Explorer.update`` accepts for it.
    """
    options = tuple(options)
    shown = [(label(o), o) for o in options]
    make = control(kw.pop("kind", "Dropdown"), options=shown, description=description, **kw)
    make.stops = options
    return make


# a slider over exactly these values: stops_slider(stops, "budget", label=format_bytes)
stops_slider = functools.partial(choice, kind="SelectionSlider", width="360px")
