"""Pick ``in_axes``/``out_axes`` per argument from dropdowns; see the shapes or the error, live."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from batchlab._util.checks import check_callable
from batchlab._util.format import html_table
from batchlab.batching.axes import AxesExplanation, BatchAxisError, explain_axes
from batchlab.batching.axes_spec import param_names
from batchlab.batching.broadcasting import BroadcastError, SilentBroadcastWarning, check_broadcast
from batchlab.widgets.controls import choice, text_box
from batchlab.widgets.explorer import Explorer


@dataclass(frozen=True)
class AxesOutcome:
    """What one setting of the dropdowns gives: an explanation, or the error and its fix."""

    in_axes: tuple
    out_axes: Any
    explanation: AxesExplanation | None
    error: str | None

    @property
    def ok(self) -> bool:
        return self.error is None

    def __repr__(self) -> str:
        head = f"in_axes={self.in_axes!r}, out_axes={self.out_axes!r}: "
        return head + (repr(self.explanation) if self.ok else f"BatchAxisError: {self.error}")

    def _repr_html_(self) -> str:
        if self.ok:
            return self.explanation._repr_html_()
        return html_table([("BatchAxisError", self.error)], caption=f"in_axes={self.in_axes!r}")


def _choices(arg: Any) -> list[Any]:
    rank = len(getattr(arg, "shape", ()))
    return [None, *range(rank), *range(-1, -rank - 1, -1)][: 2 * rank + 1] if rank else [None, 0]


class AxesExplorer(Explorer):
    """One dropdown per argument (its axis or None) and one for ``out_axes``.

    Args:
      fn: the per-item function.
      *args: example arguments (arrays or ``jax.ShapeDtypeStruct``).
      in_axes: the starting spec, a tuple with one entry per argument.
      out_axes: the starting ``out_axes`` (an int or None).
      out_choices: the choices of the ``out_axes`` dropdown.

    Example:
      >>> import jax.numpy as jnp
      >>> ex = AxesExplorer(lambda x, w: x @ w, jnp.ones((5, 3)), jnp.ones((3, 2)), in_axes=(0, None))
      >>> ex.update(w=0).ok, ex.update(w=None).explanation.outputs[0].shape
      (False, (5, 2))
    """

    def __init__(
        self,
        fn: Callable,
        *args: Any,
        in_axes: Sequence[Any] | None = None,
        out_axes: Any = 0,
        out_choices: Sequence[Any] = (0, 1, -1, None),
        title: str = "vmap axes explorer",
    ) -> None:
        check_callable(fn)
        self.fn, self.args = fn, args
        self.names = param_names(fn, len(args))
        in_axes = tuple(in_axes) if in_axes is not None else (0,) * len(args)
        if len(in_axes) != len(args):
            raise ValueError(
                f"`in_axes` needs one entry per argument ({', '.join(self.names)}), got {in_axes!r}."
            )
        params = dict(zip(self.names, in_axes, strict=False))
        params["out_axes"] = out_axes

        def compute(**p: Any) -> AxesOutcome:
            spec = tuple(p[n] for n in self.names)
            try:
                return AxesOutcome(
                    spec,
                    p["out_axes"],
                    explain_axes(fn, *args, in_axes=spec, out_axes=p["out_axes"]),
                    None,
                )
            except BatchAxisError as e:
                return AxesOutcome(spec, p["out_axes"], None, str(e))

        def dropdown(name: str, options: list[Any]):
            options = options if params[name] in options else [params[name], *options]
            return choice(options, description=name, label=repr, width="170px")

        controls = {n: dropdown(n, _choices(a)) for n, a in zip(self.names, args, strict=False)}
        controls["out_axes"] = dropdown("out_axes", list(out_choices))
        super().__init__(
            compute, params, controls=controls, draw=_draw, describe=_describe, title=title
        )
        self.update()


def _draw(ex: Explorer):
    if ex.result is None or not ex.result.ok:
        return None
    return ex.result.explanation.plot()


def _describe(r: AxesOutcome) -> str:
    if r.ok:
        return (
            f"batch of <b>{r.explanation.batch_size}</b> items; each call of fn sees "
            + ", ".join(f"{html.escape(lf.label)}: {lf.item_shape}" for lf in r.explanation.inputs)
            + " (abstract evaluation, nothing ran)"
        )
    return f"<span style='color:#b00020'>&#9888; BatchAxisError: {html.escape(r.error)}</span>"


@dataclass(frozen=True)
class BroadcastOutcome:
    """What :func:`batchlab.check_broadcast` says about two shapes: result, error, warnings."""

    shapes: tuple[tuple[int, ...], ...]
    shape: tuple[int, ...] | None
    error: str | None
    warnings: tuple[str, ...]

    def __repr__(self) -> str:
        if self.error is not None:
            return f"BroadcastError: {self.error}"
        return f"broadcasts to {self.shape}" + "".join(f"\nwarning: {w}" for w in self.warnings)


def _parse_shape(text: str, name: str) -> tuple[int, ...]:
    import ast

    if not isinstance(text, str):
        as_text = (
            str(tuple(text))
            if isinstance(text, (tuple, list))
            else f"({text},)"
            if isinstance(text, int) and not isinstance(text, bool)
            else "(4, 1)"
        )
        raise TypeError(
            f"`{name}` is the text of a shape box, got {type(text).__name__} {text!r:.40}; "
            f"write the shape as a string: update({name}={as_text!r})."
        )
    try:
        value = ast.literal_eval(text.strip() or "()")
    except (ValueError, SyntaxError):
        raise ValueError(f"`{name}` must be a shape like (4, 1), got {text!r}.") from None
    value = (value,) if isinstance(value, int) else value
    if not isinstance(value, tuple) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in value
    ):
        raise ValueError(f"`{name}` must be a shape like (4, 1), got {text!r}.")
    return value


class BroadcastExplorer(Explorer):
    """Two shape boxes; shows the broadcast shape, the conflict drawn, or the silent-trap warning.

    Example:
      >>> ex = BroadcastExplorer("(5,)", "(5, 1)")
      >>> r = ex.update()
      >>> r.shape, len(r.warnings)
      ((5, 5), 1)
      >>> ex.update(b="(5, 3)").error.splitlines()[0]
      'shapes (5,) and (5, 3) do not broadcast. Aligned from the right, sizes on one axis must be equal or 1:'
    """

    def __init__(
        self, a: str = "(4,)", b: str = "(4, 3)", *, title: str = "Broadcasting explorer"
    ) -> None:
        import warnings as _warnings

        def compute(a: str, b: str) -> BroadcastOutcome:
            shapes = (_parse_shape(a, "a"), _parse_shape(b, "b"))
            with _warnings.catch_warnings(record=True) as caught:
                _warnings.simplefilter("always", SilentBroadcastWarning)
                try:
                    shape, error = check_broadcast(*shapes), None
                except BroadcastError as e:
                    shape, error = None, str(e)
            found = tuple(
                str(w.message) for w in caught if issubclass(w.category, SilentBroadcastWarning)
            )
            return BroadcastOutcome(shapes, shape, error, found)

        def describe(r: BroadcastOutcome) -> str:
            return f"<pre style='font-size:12px'>{html.escape(repr(r))}</pre>"

        super().__init__(
            compute,
            {"a": a, "b": b},
            controls={"a": text_box("shape a"), "b": text_box("shape b")},
            describe=describe,
            title=title,
        )
        self.update()
