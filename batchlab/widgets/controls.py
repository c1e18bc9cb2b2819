"""The kit's controls: one look, one behaviour, for every explorer.

Each function returns a *control factory*: ``factory(value)`` builds the ipywidgets control
showing ``value`` (``Explorer(..., controls={"param": factory})``); every control measures
on release, and its ``value`` is the parameter ``compute`` receives.

Example:
  >>> from batchlab.widgets import controls
  >>> controls.powers_of_two(1, 64)
  [1, 2, 4, 8, 16, 32, 64]
  >>> factory = controls.batch_size_slider([1, 2, 4, 8])
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


def powers_of_two(low: int, high: int) -> list[int]:
    """Every power of two from ``low`` to ``high``; ``ValueError`` unless 1 <= low <= high."""
    if int(low) < 1 or int(high) < int(low):
        raise ValueError(
            f"`low` and `high` must satisfy 1 <= low <= high, got low={low!r}, high={high!r}."
        )
    return [1 << k for k in range(int(high).bit_length()) if low <= 1 << k <= high] or [int(low)]


def batch_size_slider(stops: Sequence[int], *, description: str = "batch size") -> ControlFactory:
    """A slider with one even step per stop (powers of two: 1 -> 1024 in ten steps)."""
    stops = [int(s) for s in stops]
    if not stops or any(s < 1 for s in stops):
        raise ValueError(
            f"`stops` must be a non-empty list of positive ints, got {stops!r}; "
            "e.g. powers_of_two(1, 1024)."
        )
    return stops_slider(stops, description, width="440px")


def int_slider(low: int, high: int, *, step: int = 1, description: str) -> ControlFactory:
    """A linear integer slider (e.g. a sequence length)."""
    if int(high) < int(low):
        raise ValueError(f"`high` must be >= `low`, got low={low!r}, high={high!r}.")
    return control(
        "IntSlider", min=low, max=high, step=step, description=description, width="440px"
    )


def choice(
    options: Sequence[Any], *, description: str, label: Callable = str, width: str = "auto"
) -> ControlFactory:
    """A dropdown over ``options`` (any values; each shown as ``label(value)``)."""
    if not list(options):
        raise ValueError("`options` must not be empty.")
    shown = [(label(o), o) for o in options]
    return control("Dropdown", options=shown, description=description, width=width)


def stops_slider(stops: Sequence[Any], label: str, width: str = "360px") -> ControlFactory:
    """A slider over exactly these values."""
    return control("SelectionSlider", options=list(stops), description=label, width=width)


def budget_slider(budgets: Sequence[int]) -> ControlFactory:
    """A slider over these budgets (bytes), labelled in binary units."""
    shown = [(format_bytes(b), b) for b in budgets]
    return control("SelectionSlider", options=shown, description="budget", width="420px")
