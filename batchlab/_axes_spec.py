"""Reading a ``vmap``-style ``in_axes`` spec against real arguments, before tracing.

Shared by :func:`batchlab.explain_axes` (which explains it) and
:func:`batchlab.batch` (which checks it on every call). Only shapes are
read; nothing is traced or run here. Every problem raises
:class:`BatchAxisError` naming the argument, the axis, the sizes found and
the fix.
"""

from __future__ import annotations

import inspect
import numbers
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from ._checks import check_array_tree


class BatchAxisError(ValueError):
    """A batch-axis spec (``in_axes`` / ``out_axes``) that does not fit the data.

    Raised before anything is traced. The message names the argument (by
    its parameter name), the axis, the sizes found, and how to fix it.
    """


def _is_axis_leaf(x: Any) -> bool:
    return x is None or (isinstance(x, numbers.Integral) and not isinstance(x, bool))


def _check_axis_types(spec: Any, name: str) -> None:
    for leaf in jax.tree_util.tree_leaves(spec, is_leaf=_is_axis_leaf):
        if not _is_axis_leaf(leaf):
            raise TypeError(
                f"`{name}` may hold only ints (an axis) and None (not mapped), got "
                f"{type(leaf).__name__} {leaf!r} in {name}={spec!r}."
            )


def param_names(fn: Callable, n: int) -> list[str]:
    """The parameter name of each positional argument (``args[i]`` when unknown)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), None)
    names: list[str] = []
    for i in range(n):
        if i < len(positional):
            names.append(positional[i].name)
        elif star is not None:
            names.append(f"{star}[{i - len(positional)}]")
        else:
            names.append(f"args[{i}]")
    return names


def normalize_in_axes(in_axes: Any, n_args: int, names: list[str]) -> tuple:
    """One spec per positional argument (vmap's rule: an int or None applies to all)."""
    _check_axis_types(in_axes, "in_axes")
    if _is_axis_leaf(in_axes):
        return (in_axes,) * n_args
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if not isinstance(in_axes, tuple):
        raise BatchAxisError(
            f"`in_axes` must be an int, None, or a tuple with one entry per argument, got "
            f"{type(in_axes).__name__} {in_axes!r}; for fn({', '.join(names)}) write e.g. "
            f"in_axes=({', '.join(['0'] * n_args)})."
        )
    if len(in_axes) != n_args:
        raise BatchAxisError(
            f"`in_axes` has {len(in_axes)} entr{'y' if len(in_axes) == 1 else 'ies'} {in_axes!r} but fn was called with {n_args} "
            f"argument(s) ({', '.join(names)}); give one entry per argument, e.g. "
            f"in_axes=({', '.join(['0'] + ['None'] * (n_args - 1))})."
        )
    return in_axes


def suggest(in_axes: tuple, i: int, value: Any = None) -> str:
    """``in_axes`` with entry ``i`` replaced, written as the user would type it."""
    entries = [repr(v) for v in in_axes]
    entries[i] = repr(value)
    return f"in_axes=({', '.join(entries)}{',' if len(entries) == 1 else ''})"


@dataclass(frozen=True)
class Leaf:
    """One array leaf of one argument and the axis mapped over it (normalized, >= 0)."""

    arg: int
    label: str
    shape: tuple[int, ...]
    dtype: Any
    axis: int | None

    @property
    def size(self) -> int | None:
        return None if self.axis is None else self.shape[self.axis]

    @property
    def item_shape(self) -> tuple[int, ...]:
        if self.axis is None:
            return self.shape
        return self.shape[: self.axis] + self.shape[self.axis + 1 :]


@dataclass(frozen=True)
class Resolved:
    """The spec read against the arguments: flat leaves, their tree, the batch size."""

    names: tuple[str, ...]
    in_axes: tuple
    leaves: tuple[Leaf, ...]
    treedef: Any  # of the args tuple
    batch_size: int


def _shape_dtype(leaf: Any) -> tuple[tuple[int, ...], Any]:
    if isinstance(leaf, numbers.Number):
        return (), np.result_type(type(leaf))
    return tuple(leaf.shape), leaf.dtype


def _ragged_list(arg: Any, name: str, axis: Any) -> None:
    """A Python list of arrays of different lengths: vmap cannot batch it; point to padding."""
    if not isinstance(arg, (list, tuple)) or len(arg) < 2 or axis is None:
        return
    lengths = []
    for item in arg:
        if isinstance(item, (list, tuple)):
            lengths.append(len(item))
        elif hasattr(item, "shape"):
            lengths.append(item.shape[0] if len(item.shape) else None)
        else:
            return
    if len(set(lengths)) > 1:
        shown = ", ".join(str(n) for n in lengths[:8]) + (", ..." if len(lengths) > 8 else "")
        raise BatchAxisError(
            f"`{name}` is a Python {type(arg).__name__} of {len(arg)} items of different lengths "
            f"({shown}). vmap does not batch over a Python list (a list is a pytree: each item is "
            f"mapped separately), and items of different lengths cannot be stacked into one batch. "
            f"Pad them to one length and stack them (e.g. batchlab.pad), passing a mask so padded "
            f"values are ignored, or group items of similar length into buckets."
        )


def resolve(fn: Callable, args: tuple, in_axes: Any) -> Resolved:
    """Reads ``in_axes`` against ``args`` (shapes only) and finds the batch size.

    Raises:
      BatchAxisError: a spec that does not match the arguments, an axis out
        of range, inconsistent batch sizes, no mapped argument, a ragged list.
      TypeError: a leaf that is not an array or number; a non-int axis.
    """
    names = param_names(fn, len(args))
    spec = normalize_in_axes(in_axes, len(args), names)
    leaves: list[Leaf] = []
    for i, (arg, arg_spec, name) in enumerate(zip(args, spec, names, strict=False)):
        check_array_tree(arg, name)
        _ragged_list(arg, name, arg_spec)
        spec_def = jax.tree_util.tree_structure(arg_spec, is_leaf=_is_axis_leaf)
        try:
            subtrees = spec_def.flatten_up_to(arg)
        except (ValueError, TypeError) as e:
            raise BatchAxisError(
                f"in_axes for `{name}` is {arg_spec!r}, which does not match the structure of "
                f"`{name}` ({jax.tree_util.tree_structure(arg)}): {str(e).splitlines()[0]} "
                f"Give one axis for the whole argument (e.g. 0 or None) or a tree with exactly "
                f"its keys."
            ) from None
        axes_flat = jax.tree_util.tree_leaves(arg_spec, is_leaf=_is_axis_leaf)
        per_leaf: list[Any] = []
        for ax, sub in zip(axes_flat, subtrees, strict=False):
            per_leaf += [ax] * len(jax.tree_util.tree_leaves(sub))
        with_path = jax.tree_util.tree_flatten_with_path(arg)[0]
        for (path, leaf), ax in zip(with_path, per_leaf, strict=False):
            label = name + jax.tree_util.keystr(path)
            shape, dtype = _shape_dtype(leaf)
            if ax is not None:
                rank = len(shape)
                if not -rank <= ax < rank:
                    if rank == 0:
                        raise BatchAxisError(
                            f"`{label}` is a scalar (shape ()), it has no axis {ax} to map. If it is "
                            f"shared by all items, do not map it: {suggest(spec, i)}."
                        )
                    raise BatchAxisError(
                        f"in_axes asks for axis {ax} of `{label}`, but `{label}` has shape {shape} "
                        f"({rank} axes); valid axes are {-rank}..{rank - 1}, or None if `{label}` "
                        f"is shared by all items."
                    )
                ax = ax % rank
            leaves.append(Leaf(i, label, shape, dtype, ax))
    mapped = [lf for lf in leaves if lf.axis is not None]
    if not mapped:
        raise BatchAxisError(
            f"in_axes={in_axes!r} maps no argument of fn({', '.join(names)}), so there is no batch "
            f"axis; map at least one argument, e.g. {suggest(spec, 0, 0) if spec else 'in_axes=0'}."
        )
    counts = Counter(lf.size for lf in mapped)
    top = max(counts.values())
    batch = next(lf.size for lf in mapped if counts[lf.size] == top)
    for lf in mapped:
        if lf.size != batch:
            found = ", ".join(f"`{m.label}`: {m.size} (axis {m.axis})" for m in mapped)
            raise BatchAxisError(
                f"`{lf.label}` has {lf.size} along axis {lf.axis} but the batch has {batch} items "
                f"(sizes found: {found}). If `{lf.label}` is shared by all items, use "
                f"{suggest(spec, lf.arg)}; otherwise map the axis that has {batch} items."
            )
    treedef = jax.tree_util.tree_structure(tuple(args))
    return Resolved(tuple(names), spec, tuple(leaves), treedef, batch)
