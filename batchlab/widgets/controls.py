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

import functools
from collections.abc import Callable, Sequence
from typing import Any

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


def length_slider(
    low: int, high: int, *, step: int = 1, description: str = "length"
) -> ControlFactory:
    """A length control for padding: the padded length or the maximum sequence length."""
    return int_slider(low, high, step=step, description=description)


PADDING_STRATEGIES = ("pad to max", "pad to multiple", "bucket", "no padding")


def padding_strategy(
    options: Sequence[str] = PADDING_STRATEGIES, *, description: str = "padding"
) -> ControlFactory:
    """Toggle buttons choosing a padding strategy (names as the ragged-data notebooks use them)."""
    options = _check_options(options, "options")

    def make(value: str):
        import ipywidgets as w

        return w.ToggleButtons(options=options, value=value, description=description, style=_STYLE)

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


def axis_choices(ndim: int, *, allow_none: bool = True) -> list[int | None]:
    """The values an ``in_axes``/``out_axes`` entry may take for a rank-``ndim`` array.

    Example:
      >>> axis_choices(2)
      [0, 1, None]
    """
    return list(range(max(int(ndim), 0))) + ([None] if allow_none else [])


def in_axes_selector(
    arg_names: Sequence[str], ndims: Sequence[int], *, description: str = "in_axes"
) -> ControlFactory:
    """One axis dropdown per argument; the control's value is the ``in_axes`` tuple.

    ``None`` means "shared by every item (not mapped)", as in ``jax.vmap``.

    Raises:
      ValueError: ``arg_names`` and ``ndims`` differ in length.
    """
    arg_names, ndims = list(arg_names), [int(n) for n in ndims]
    if len(arg_names) != len(ndims) or not arg_names:
        raise ValueError(
            f"`arg_names` and `ndims` need one entry per argument, got {arg_names!r} and {ndims!r}."
        )
    choices = [axis_choices(n) for n in ndims]
    return lambda value: _Group.build(
        [
            choice(c, description=f"{description}[{n}]")
            for n, c in zip(arg_names, choices, strict=False)
        ],
        value,
        description,
    )


def out_axes_selector(ndim: int, *, description: str = "out_axes") -> ControlFactory:
    """A dropdown for ``out_axes``: where the batch axis goes in the output (rank ``ndim`` with it)."""
    return choice(list(range(max(int(ndim), 1))), description=description)


def strategy_checkboxes(
    strategies: Sequence[str], *, description: str = "strategies"
) -> ControlFactory:
    """One checkbox per strategy; the control's value is the tuple of ticked names, in order."""
    strategies = _check_options(strategies, "strategies")

    def make(value: Sequence[str]):
        import ipywidgets as w

        unknown = set(value) - set(strategies)
        if unknown:
            raise ValueError(
                f"`value` has unknown strategies {sorted(unknown)}; choose from {strategies}."
            )
        boxes = [
            w.Checkbox(value=s in value, description=s, indent=False, layout=w.Layout(width="auto"))
            for s in strategies
        ]
        return _Group.build_checkboxes(boxes, strategies, description)

    return make


def _check_options(options: Sequence[Any], name: str) -> list[Any]:
    options = list(options)
    if not options:
        raise ValueError(f"`{name}` must not be empty.")
    return options


@functools.lru_cache(maxsize=1)
def _group_class():
    import ipywidgets as w
    import traitlets

    class ControlGroup(w.HBox):
        """An HBox of sub-controls with one combined ``value`` (a tuple)."""

        value = traitlets.Tuple()

    return ControlGroup


class _Group:
    """Builds a group of sub-controls whose combined ``value`` is a tuple trait."""

    @staticmethod
    def _link(group, parts, read, write):
        """Keeps ``group.value`` and the parts in step, without half-updated intermediate values."""
        busy = [False]

        def from_parts(_):
            if not busy[0]:
                group.value = read()

        def to_parts(change):
            busy[0] = True
            try:
                write(change["new"])
            finally:
                busy[0] = False

        for p in parts:
            p.observe(from_parts, names="value")
        group.observe(to_parts, names="value")

    @staticmethod
    def _box(children, description: str):
        import ipywidgets as w

        box = _group_class()(
            [w.Label(description + ":"), *children],
            layout=w.Layout(flex_flow="row wrap", align_items="center"),
        )
        box.add_class("batchlab-control-group")
        return box

    @classmethod
    def build(cls, factories: list[ControlFactory], value: Sequence[Any], description: str):
        value = tuple(value)
        if len(value) != len(factories):
            raise ValueError(f"`value` {value!r} needs one entry per argument ({len(factories)}).")
        parts = [f(v) for f, v in zip(factories, value, strict=False)]
        box = cls._box(parts, description)
        box.value = value

        def write(new):
            for p, v in zip(parts, new, strict=False):
                p.value = v

        cls._link(box, parts, lambda: tuple(p.value for p in parts), write)
        return box

    @classmethod
    def build_checkboxes(cls, boxes, names: list[str], description: str):
        group = cls._box(boxes, description)
        group.value = tuple(n for n, b in zip(names, boxes, strict=False) if b.value)

        def write(new):
            for n, b in zip(names, boxes, strict=False):
                b.value = n in new

        cls._link(
            group,
            boxes,
            lambda: tuple(n for n, b in zip(names, boxes, strict=False) if b.value),
            write,
        )
        return group
