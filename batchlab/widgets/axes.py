"""01's ``in_axes``/``out_axes`` dropdowns and 02's shape boxes: the shapes or the error, live."""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from batchlab._util.checks import check_callable
from batchlab.batching.axes import AxesExplanation, explain_axes
from batchlab.batching.axes_spec import param_names
from batchlab.batching.broadcasting import BroadcastError, SilentBroadcastWarning, check_broadcast
from batchlab.widgets.controls import choice, control
from batchlab.widgets.explorer import Explorer


class AxesOutcome(NamedTuple):
    """One setting of the dropdowns: an explanation, or the error and its fix."""

    in_axes: tuple
    out_axes: Any
    explanation: AxesExplanation | None
    error: str | None = None
    kind: str = "BatchAxisError"  # the error's type: the kit's, or jax.vmap's own ValueError

    @property
    def ok(self) -> bool:
        """Whether ``jax.vmap`` accepts this setting (no error)."""
        return self.error is None

    def __repr__(self) -> str:
        found = repr(self.explanation) if self.ok else f"{self.kind}: {self.error}"
        return f"in_axes={self.in_axes!r}, out_axes={self.out_axes!r}: {found}"


class AxesExplorer(Explorer):
    """One dropdown per argument of ``fn`` (its axis or None) and one for ``out_axes``."""

    def __init__(self, fn: Callable, *args: Any, in_axes: Sequence[Any] | None = None) -> None:
        check_callable(fn)
        self.names = param_names(fn, len(args))
        in_axes = tuple(in_axes) if in_axes is not None else (0,) * len(args)
        if len(in_axes) != len(args):
            raise ValueError(
                f"`in_axes` needs one entry per argument ({', '.join(self.names)}), "
                f"got {in_axes!r}."
            )
        params = {**dict(zip(self.names, in_axes, strict=True)), "out_axes": 0}

        def compute(**p: Any) -> AxesOutcome:
            spec, out = tuple(p[n] for n in self.names), p["out_axes"]
            try:
                return AxesOutcome(spec, out, explain_axes(fn, *args, in_axes=spec, out_axes=out))
            except ValueError as e:  # the kit's BatchAxisError, or jax.vmap's own
                return AxesOutcome(spec, out, None, str(e), type(e).__name__)

        def dropdown(name: str, options: list[Any]):
            options = options if params[name] in options else [params[name], *options]
            return choice(options, description=name, label=repr, width="170px")

        controls = {}
        for name, a in zip(self.names, args, strict=True):
            r = len(getattr(a, "shape", ()))  # every axis, from the front and from the back
            axes = [None, *range(r), *range(-1, -r - 1, -1)] if r else [None, 0]
            controls[name] = dropdown(name, axes)
        controls["out_axes"] = dropdown("out_axes", [0, 1, -1, None])
        super().__init__(
            compute,
            params,
            controls=controls,
            draw=lambda ex: ex.result.explanation.plot() if ex.result.ok else None,
            title="vmap axes explorer",
        )
        self.choices = {}  # any axis from Python: a wrong one comes back as JAX's error
        self.update()


class BroadcastOutcome(NamedTuple):
    """What :func:`batchlab.check_broadcast` says about two shapes: result, error, warnings."""

    shape: tuple[int, ...] | None
    error: str | None
    warnings: tuple[str, ...]

    def __repr__(self) -> str:
        if self.error is not None:
            return f"BroadcastError: {self.error}"
        return f"broadcasts to {self.shape}" + "".join(f"\nwarning: {w}" for w in self.warnings)


def _parse_shape(text: str, name: str) -> tuple[int, ...]:
    try:
        value = ast.literal_eval(text.strip() or "()")
    except (AttributeError, ValueError, SyntaxError):  # not text, or not a Python literal
        value = None
    value = (value,) if type(value) is int else value
    if not isinstance(value, tuple) or not all(type(d) is int and d >= 0 for d in value):
        raise (ValueError if isinstance(text, str) else TypeError)(
            f"`{name}` must be a shape like (4, 1), typed as text (update({name}='(4, 1)')), "
            f"got {text!r:.40}."
        )
    return value


def _broadcast(a: str, b: str) -> BroadcastOutcome:
    shapes = (_parse_shape(a, "a"), _parse_shape(b, "b"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SilentBroadcastWarning)
        try:
            shape, error = check_broadcast(*shapes), None
        except BroadcastError as e:
            shape, error = None, str(e)
    found = tuple(str(w.message) for w in caught if issubclass(w.category, SilentBroadcastWarning))
    return BroadcastOutcome(shape, error, found)


class BroadcastExplorer(Explorer):
    """Two shape boxes -> the broadcast shape, the conflict drawn, or the silent-trap warning."""

    def __init__(self, a: str = "(4,)", b: str = "(4, 3)") -> None:
        box = {n: control("Text", description=f"shape {n}", width="220px") for n in "ab"}
        super().__init__(_broadcast, {"a": a, "b": b}, controls=box, title="Broadcasting explorer")
        self.update()
