"""The kit's family of controls: one look, one behaviour, for every explorer.

Each function here returns a *control factory*: ``factory(value)`` builds
the ipywidgets control showing ``value``. Pass factories to
:class:`~batchlab.widgets.Explorer` as ``controls={"param": factory}``.
Every control measures on release (``continuous_update=False``), has a
readable description, and exposes one ``value`` that is exactly the
parameter ``compute`` receives (a tuple for multi-part controls).

ipywidgets is imported only when a factory is called, so this module
imports without it.

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

_STYLE = {"description_width": "initial"}


def powers_of_two(low: int, high: int) -> list[int]:
    """Every power of two from ``low`` to ``high`` (both rounded into range).

    Raises:
      ValueError: ``low`` < 1 or ``high`` < ``low``.
    """
    if int(low) < 1 or int(high) < int(low):
        raise ValueError(
            f"`low` and `high` must satisfy 1 <= low <= high, got low={low!r}, high={high!r}."
        )
    out, b = [], 1
    while b <= high:
        if b >= low:
            out.append(b)
        b *= 2
    return out or [int(low)]


def batch_size_slider(stops: Sequence[int], *, description: str = "batch size") -> ControlFactory:
    """A batch-size slider on a log scale: one step per stop (e.g. powers of two).

    Each stop is equally spaced, so 1 -> 1024 is ten even steps, not a
    slider where everything below 100 is one pixel.

    Raises:
      ValueError: ``stops`` is empty or holds a value below 1.
    """
    stops = [int(s) for s in stops]
    if not stops or any(s < 1 for s in stops):
        raise ValueError(
            f"`stops` must be a non-empty list of positive ints, got {stops!r}; "
            "e.g. powers_of_two(1, 1024)."
        )

    def make(value: int):
        import ipywidgets as w

        return w.SelectionSlider(
            options=stops,
            value=value,
            description=description,
            continuous_update=False,
            style=_STYLE,
            layout=w.Layout(width="440px"),
        )

    return make


def int_slider(low: int, high: int, *, step: int = 1, description: str) -> ControlFactory:
    """A linear integer slider (e.g. a sequence length)."""
    if int(high) < int(low):
        raise ValueError(f"`high` must be >= `low`, got low={low!r}, high={high!r}.")

    def make(value: int):
        import ipywidgets as w

        return w.IntSlider(
            value=value,
            min=low,
            max=high,
            step=step,
            description=description,
            continuous_update=False,
            style=_STYLE,
            layout=w.Layout(width="440px"),
        )

    return make


def choice(options: Sequence[Any], *, description: str) -> ControlFactory:
    """A dropdown over ``options`` (any values; shown with ``str``)."""
    options = _check_options(options, "options")

    def make(value: Any):
        import ipywidgets as w

        return w.Dropdown(
            options=[(str(o), o) for o in options],
            value=value,
            description=description,
            style=_STYLE,
            layout=w.Layout(width="auto"),
        )

    return make


def labelled_dropdown(options: tuple[str, ...], label: str) -> ControlFactory:
    """A plain dropdown of names (the explorers' strategy and boundary-rule pickers)."""

    def make(value: str):
        import ipywidgets as w

        return w.Dropdown(options=list(options), value=value, description=label)

    return make


def stops_slider(stops: tuple[int, ...], label: str) -> ControlFactory:
    """A slider over exactly these values, measured on release."""

    def make(value: int):
        import ipywidgets as w

        return w.SelectionSlider(
            options=list(stops),
            value=value,
            description=label,
            continuous_update=False,
            style={"description_width": "initial"},
            layout=w.Layout(width="360px"),
        )

    return make


def budget_slider(budgets: Sequence[int]) -> ControlFactory:
    """A slider over these budgets (bytes), labelled in binary units, measured on release."""

    def make(value: int):
        import ipywidgets as w

        return w.SelectionSlider(
            options=[(format_bytes(b), b) for b in budgets],
            value=value,
            description="budget",
            continuous_update=False,
            layout=w.Layout(width="420px"),
        )

    return make


def _check_options(options: Sequence[Any], name: str) -> list[Any]:
    options = list(options)
    if not options:
        raise ValueError(f"`{name}` must not be empty.")
    return options
