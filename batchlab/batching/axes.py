"""What ``vmap`` will do with your arguments, explained before anything runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
from matplotlib.patches import Rectangle

from batchlab._util.checks import check_callable
from batchlab._util.format import Rows
from batchlab._util.plotting import new_figure
from batchlab.batching.axes_spec import (
    BatchAxisError,
    Layout,
    Leaf,
    abstract_call,
    axis_per_leaf,
    diagnose,
    layout_of,
    leaves_of,
    param_names,
    per_argument,
)

jtu = jax.tree_util

SOURCE = "abstract evaluation (jax.eval_shape): shapes only, nothing ran"
IN_HEADER = ("argument", "shape", "mapped", "batch", "per-item shape fn sees")
OUT_HEADER = ("output", "per-item shape", "batch axis", "batched shape")


@dataclass(frozen=True)
class AxesExplanation(Rows):
    """What ``jax.vmap(fn, in_axes, out_axes)`` does with these arguments."""

    batch_size: int
    inputs: tuple[Leaf, ...]
    outputs: tuple[Leaf, ...]  # output k's batched shape and its batch axis
    in_axes: tuple
    out_axes: Any
    source: str = SOURCE

    def _tables(self) -> list[tuple]:
        ins, outs = [], []
        for lf in self.inputs:
            mapped = "not mapped (shared)" if lf.axis is None else f"axis {lf.axis}"
            size = "-" if lf.axis is None else str(lf.size)
            ins.append((lf.label, str(lf.shape), mapped, size, str(lf.item_shape)))
        for o in self.outputs:
            axis = "none (not batched)" if o.axis is None else f"axis {o.axis}"
            outs.append((o.label, str(o.item_shape), axis, str(o.shape)))
        where = f"batch of {self.batch_size} items, in_axes={self.in_axes!r} ({self.source})"
        return [
            (f"inputs: {where}", ins, IN_HEADER),
            (f"outputs: out_axes={self.out_axes!r}", outs, OUT_HEADER),
        ]

    def plot(self):
        """Every shape as a row of boxes (batch axis orange): batched -> per item -> output."""
        rows = [(lf.label, lf.shape, lf.axis, lf.item_shape, "->") for lf in self.inputs]
        rows += [("→ " + o.label, o.shape, o.axis, o.item_shape, "<-") for o in self.outputs]
        width = max(3, *(len(r[1]) for r in rows)) + 1.5
        label_w = 0.23 * max(len(r[0]) for r in rows) + 1.0
        x = label_w + width + 0.6
        fig, ax = new_figure(width=7 + 0.6 * width, height=0.75 * len(rows) + 1.3)
        for i, (label, shape, mapped, item, arrow) in enumerate(rows):
            y = -i - 0.5 * (i >= len(self.inputs))
            ax.text(0, y, label, va="center", fontsize=12, family="monospace", fontweight="bold")
            _boxes(ax, label_w, y, shape, mapped)
            ax.annotate("", (x + 0.2, y), (x - 0.7, y), arrowprops=dict(arrowstyle=arrow))
            _boxes(ax, x + 0.5, y, item, None)
        ax.axhline(-len(self.inputs) + 0.25, color="0.6", lw=0.8, ls="--")
        ax.set(xlim=(-0.2, label_w + 2 * width + 2), ylim=(-len(rows) - 0.2, 1.0))
        header = f"batched (orange: batch axis, {self.batch_size} items)"
        ax.text(label_w, 0.65, header, fontsize=11)
        ax.text(x + 0.5, 0.65, "one item (what fn sees)", fontsize=11)
        ax.set_axis_off()
        title = f"vmap with in_axes={self.in_axes!r}, out_axes={self.out_axes!r}"
        ax.set_title(title, fontsize=12, loc="left")
        return fig


def resolve_out_axes(fn: Callable, lay: Layout, flat: list, out_axes: Any) -> tuple[Leaf, ...]:
    """Each output's batched shape and batch axis, as ``jax.vmap`` gives them (shapes only)."""
    out = abstract_call(fn, lay.treedef, flat, lay.axes)
    labels = ["out" + jtu.keystr(p) for p, _ in jtu.tree_flatten_with_path(out)[0]]
    try:
        batched = abstract_call(fn, lay.treedef, flat, lay.axes, item=False, out_axes=out_axes)
    except ValueError as e:  # jax.vmap's words, but the kit's where None meets a batched output
        try:
            axes = axis_per_leaf(out_axes, out)
        except (ValueError, TypeError):
            raise e from None
        for k, (leaf, ax) in enumerate(zip(jax.tree.leaves(out), axes, strict=True)):
            if ax is not None:
                continue
            only = [None if j == k else 0 for j in range(len(axes))]
            only = jax.tree.unflatten(jax.tree.structure(out), only)
            try:
                abstract_call(fn, lay.treedef, flat, lay.axes, item=False, out_axes=only)
            except ValueError:
                raise BatchAxisError(
                    f"out_axes gives None (no batch axis) for `{labels[k]}`, but `{labels[k]}` "
                    f"depends on the mapped inputs' values, so vmap gives it a batch axis (one "
                    f"{tuple(leaf.shape)} value per item). Use an axis for it (e.g. 0); None is "
                    f"only for outputs no mapped input's values reach (e.g. `jnp.zeros_like(x)`)."
                ) from e
        raise
    axes = axis_per_leaf(out_axes, out)
    return tuple(
        Leaf(k, label, tuple(b.shape), b.dtype, None if ax is None else ax % b.ndim)
        for k, (label, b, ax) in enumerate(zip(labels, jax.tree.leaves(batched), axes, strict=True))
    )


def explain_axes(fn: Callable, *args: Any, in_axes: Any = 0, out_axes: Any = 0) -> AxesExplanation:
    """What ``jax.vmap(fn, in_axes, out_axes)(*args)`` does, from shapes only.

    ``jax.vmap`` itself reads the call (:func:`layout_of`), so every call it accepts is
    explained, with unmapped values that are not arrays (a string, a function, a flag) passed
    to ``fn`` as they are; where it refuses, the kit says why and how to fix it.

    Args:
      fn: the per-item function.
      *args: its arguments, arrays or ``jax.ShapeDtypeStruct`` (nothing is computed).
      in_axes: as in ``jax.vmap``.
      out_axes: as in ``jax.vmap``.

    Returns:
      An :class:`AxesExplanation`: every input leaf and output leaf, batched and per item.

    Raises:
      BatchAxisError: where ``jax.vmap`` would raise a ``ValueError`` the kit can explain
        (sizes that differ, an axis a leaf does not have, an ``in_axes`` of the wrong length, a
        ragged list, ``None`` in ``out_axes`` for an output that depends on the mapped inputs).
      ValueError, TypeError: ``jax.vmap``'s own error everywhere else (its words).
      TypeError: ``fn`` is not callable, or ``fn`` fails on one item's shapes.

    Example:
      >>> import jax.numpy as jnp
      >>> def predict(x, w):
      ...     return x @ w
      >>> e = explain_axes(predict, jnp.ones((5, 3)), jnp.ones((3, 2)), in_axes=(0, None))
      >>> e.batch_size, e.inputs[0].item_shape, e.outputs[0].shape
      (5, (3,), (5, 2))
    """
    check_callable(fn)
    spec = per_argument(in_axes, param_names(fn, len(args)))
    try:
        lay = layout_of(fn, in_axes, args, {})
    except ValueError as e:
        try:
            diagnose(fn, args, in_axes)
        except BatchAxisError as kit:
            raise kit from e
        except (TypeError, ValueError):
            pass
        raise
    flat = jax.tree.leaves((args, {}))
    outputs = resolve_out_axes(fn, lay, flat, out_axes)
    inputs = tuple(leaves_of(fn, args, list(lay.axes)))
    return AxesExplanation(lay.batch_size, inputs, outputs, spec, out_axes)


def _boxes(ax, x: float, y: float, shape: tuple, mapped: int | None) -> None:
    """Draws ``shape`` as boxes from ``x``; the mapped axis in orange."""
    if not shape:
        ax.text(x, y, "scalar ()", va="center", fontsize=11, color="0.3")
    for k, size in enumerate(shape):
        color = "#f5a623" if k == mapped else "#cfe2f3"
        ax.add_patch(Rectangle((x + k, y - 0.35), 0.9, 0.7, facecolor=color, edgecolor="0.2"))
        ax.text(x + k + 0.45, y, str(size), ha="center", va="center", fontsize=11)
