"""Reading a ``vmap``-style ``in_axes`` spec against real arguments, before tracing."""

from __future__ import annotations

import functools
import inspect
import numbers
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from batchlab._util.checks import check_array_tree


class BatchAxisError(ValueError):
    """A batch-axis spec (``in_axes`` / ``out_axes``) that does not fit the data."""


def is_axis_leaf(x: Any) -> bool:
    return x is None or (isinstance(x, numbers.Integral) and not isinstance(x, bool))


def check_axis_types(spec: Any, name: str) -> None:
    for leaf in jax.tree_util.tree_leaves(spec, is_leaf=is_axis_leaf):
        if not is_axis_leaf(leaf):
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
    check_axis_types(in_axes, "in_axes")
    if is_axis_leaf(in_axes):
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
    static: bool = False  # not a jax.Array and not mapped: passed to fn untouched, as vmap does

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
    treedef: Any  # of the tuple of positional args, then keyword values (in kw_names order)
    batch_size: int
    kw_names: tuple[str, ...] = ()


def _item_outputs(fn, every, n_pos, kw_names, leaves, arg: int | None, axis: int | None):
    """Per-item output shapes by abstract evaluation, argument ``arg`` mapped on ``axis``."""

    def item(lf: Leaf) -> tuple[int, ...]:
        if lf.arg != arg:
            return lf.item_shape
        return lf.shape if axis is None else lf.shape[:axis] + lf.shape[axis + 1 :]

    values = jax.tree_util.tree_leaves(tuple(every))
    structs = [
        value if lf.static else jax.ShapeDtypeStruct(item(lf), lf.dtype)
        for lf, value in zip(leaves, values, strict=True)
    ]
    tree = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(tuple(every)), structs)
    try:
        out = jax.eval_shape(
            lambda *a: fn(*a[:n_pos], **dict(zip(kw_names, a[n_pos:], strict=True))), *tree
        )
    except Exception:
        return None
    return [tuple(o.shape) for o in jax.tree_util.tree_leaves(out)]


def _shapes_text(shapes: list, batch: int | None = None) -> str:
    shown = [(batch, *s) if batch is not None else s for s in shapes]
    return str(shown[0]) if len(shown) == 1 else ", ".join(map(str, shown))


def movable(fn, every, n_pos, kw_names, leaves, lf: Leaf, batch: int) -> tuple | None:
    """(axis, per-item outputs) of another axis of ``lf`` with ``batch`` entries that fn takes.

    Only for an argument that is one array (its in_axes entry is one int).
    """
    if sum(m.arg == lf.arg for m in leaves) != 1:
        return None
    for a, size in enumerate(lf.shape):
        if size == batch and a != lf.axis:
            got = _item_outputs(fn, every, n_pos, kw_names, leaves, lf.arg, a)
            if got is not None:
                return a, got
    return None


def fix_hint(fn, every, n_pos, kw_names, leaves, lf: Leaf, spec: tuple, batch: int) -> str:
    """The fix for a leaf whose size is not the batch's, each suggestion evaluated first."""
    outs = functools.partial(_item_outputs, fn, every, n_pos, kw_names, leaves, lf.arg)
    k, use = lf.label, suggest(spec, lf.arg)
    if (moved := movable(fn, every, n_pos, kw_names, leaves, lf, batch)) is not None:
        a, got = moved
        return (
            f"Axis {a} of `{k}` has {batch}: if it holds the items, map it, "
            f"{suggest(spec, lf.arg, a)}: each item sees `{k}` as "
            f"{lf.shape[:a] + lf.shape[a + 1 :]} and returns {_shapes_text(got)}."
        )
    whole, mapped = outs(None), outs(lf.axis)
    if whole is None:
        return (
            f"Passing `{k}` whole ({use}) does not fit fn either: give `{k}` {batch} "
            f"items along axis {lf.axis}."
        )
    if mapped is None or mapped == whole:
        return f"If `{k}` is shared by all items, use {use}; otherwise give it {batch} items along axis {lf.axis}."
    n = abs(batch - lf.size)
    return (
        f"Do not pass `{k}` whole: {use} raises nothing but hands every item all "
        f"{lf.size} entries of `{k}`, so each item's output becomes {_shapes_text(whole)} "
        f"instead of {_shapes_text(mapped)} and the batched output {_shapes_text(whole, batch)} "
        f"instead of {_shapes_text(mapped, batch)}, silently. If its entries are one per item, "
        f"{n} {'is' if n == 1 else 'are'} {'missing' if lf.size < batch else 'extra'}: give it "
        f"{batch} (or keep only the items it has entries for)."
    )


def _shape_dtype(leaf: Any) -> tuple[tuple[int, ...], Any]:
    if isinstance(leaf, numbers.Number):
        return (), np.result_type(type(leaf))
    return tuple(leaf.shape), leaf.dtype


def _ragged_list(arg: Any, name: str, axis: Any) -> None:
    """A Python list of items whose sizes along the mapped axis differ: point to padding."""
    if not isinstance(arg, (list, tuple)) or len(arg) < 2 or not is_axis_leaf(axis) or axis is None:
        return
    lengths = []
    for item in arg:
        if isinstance(item, (list, tuple)):
            lengths.append(len(item))
        elif hasattr(item, "shape") and -len(item.shape) <= axis < len(item.shape):
            lengths.append(item.shape[axis])
        else:
            return
    if len(set(lengths)) > 1:
        shown = ", ".join(str(n) for n in lengths[:8]) + (", ..." if len(lengths) > 8 else "")
        raise BatchAxisError(
            f"`{name}` is a Python {type(arg).__name__} of {len(arg)} items of different lengths "
            f"({shown}) along the mapped axis {axis}. vmap maps axis {axis} of every leaf of a "
            f"list together, so all items need the same size there. Pad them to one length and "
            f"stack them (e.g. batchlab.pad), passing a mask so padded values are ignored, or "
            f"group items of similar length into buckets."
        )


def axis_per_leaf(spec: Any, subtrees: list) -> list:
    """The axis of every leaf, ``spec`` (a prefix tree) flattened up to ``subtrees``."""
    axes = jax.tree_util.tree_leaves(spec, is_leaf=is_axis_leaf)
    return [
        ax for ax, sub in zip(axes, subtrees, strict=False) for _ in jax.tree_util.tree_leaves(sub)
    ]


def _is_array_like(leaf: Any) -> bool:
    return isinstance(leaf, numbers.Number) or (hasattr(leaf, "shape") and hasattr(leaf, "dtype"))


def resolve(
    fn: Callable,
    args: tuple,
    in_axes: Any,
    kwargs: dict | None = None,
    *,
    allow_static: bool = False,
    axis_size: int | None = None,
) -> Resolved:
    """Reads ``in_axes`` against ``args`` (shapes only) and finds the batch size."""
    kwargs = kwargs or {}
    names = param_names(fn, len(args))
    spec = normalize_in_axes(in_axes, len(args), names)
    kw_names = tuple(kwargs)
    every = [*args, *(kwargs[k] for k in kw_names)]
    leaves: list[Leaf] = []
    for i, (arg, arg_spec, name) in enumerate(
        zip(every, (*spec, *(0,) * len(kw_names)), (*names, *kw_names), strict=True)
    ):
        if not allow_static:
            check_array_tree(arg, name)
        _ragged_list(arg, name, arg_spec)
        spec_def = jax.tree_util.tree_structure(arg_spec, is_leaf=is_axis_leaf)
        try:
            subtrees = spec_def.flatten_up_to(arg)
        except (ValueError, TypeError) as e:
            raise BatchAxisError(
                f"in_axes for `{name}` is {arg_spec!r}, which does not match the structure of "
                f"`{name}` ({jax.tree_util.tree_structure(arg)}): {str(e).splitlines()[0]} "
                f"Give one axis for the whole argument (e.g. 0 or None) or a tree with exactly "
                f"its keys."
            ) from None
        per_leaf = axis_per_leaf(arg_spec, subtrees)
        with_path = jax.tree_util.tree_flatten_with_path(arg)[0]
        for (path, leaf), ax in zip(with_path, per_leaf, strict=False):
            label = name + jax.tree_util.keystr(path)
            if not _is_array_like(leaf):
                if ax is not None:
                    raise TypeError(
                        f"`{label}` is a {type(leaf).__name__} ({leaf!r:.40}), which has no axes to "
                        f"map (jax.vmap: 'not a valid JAX type'). Map only arrays; pass "
                        f"configuration values unmapped: {suggest(spec, i) if i < len(spec) else 'positionally with in_axes None'}."
                    )
                leaves.append(Leaf(i, label, (), None, None, static=True))
                continue
            shape, dtype = _shape_dtype(leaf)
            if ax is not None:
                rank = len(shape)
                if not -rank <= ax < rank:
                    if rank == 0:
                        raise BatchAxisError(
                            f"`{label}` is a scalar (shape ()), it has no axis {ax} to map. If it is "
                            f"shared by all items, do not map it: "
                            f"{suggest(spec, i) if i < len(spec) else 'pass it positionally with in_axes None (keyword arguments are always mapped on axis 0, as in jax.vmap)'}."
                        )
                    raise BatchAxisError(
                        f"in_axes asks for axis {ax} of `{label}`, but `{label}` has shape {shape} "
                        f"({rank} axes); valid axes are {-rank}..{rank - 1}, or None if `{label}` "
                        f"is shared by all items."
                    )
                ax = ax % rank
            static = allow_static and not isinstance(leaf, (jax.Array, jax.ShapeDtypeStruct))
            leaves.append(Leaf(i, label, shape, dtype, ax, static=static and ax is None))
    mapped = [lf for lf in leaves if lf.axis is not None]
    if not mapped and axis_size is None:
        raise BatchAxisError(
            f"in_axes={in_axes!r} maps no argument of fn({', '.join(names)}), so there is no batch "
            f"axis; map at least one argument, e.g. {suggest(spec, 0, 0) if spec else 'in_axes=0'}"
            f", or give axis_size=."
        )
    if axis_size is not None:
        batch = axis_size
    else:
        # the most common size; on a tie, one that every other mapped leaf has on an axis fn takes
        counts = Counter(lf.size for lf in mapped)
        tied = [n for n in counts if counts[n] == max(counts.values())]
        batch = next(
            (
                n
                for n in tied
                if all(
                    lf.size == n or movable(fn, every, len(args), kw_names, leaves, lf, n)
                    for lf in mapped
                )
            ),
            tied[0],
        )
    for lf in mapped:
        if lf.size != batch:
            found = ", ".join(f"`{m.label}`: {m.size} (axis {m.axis})" for m in mapped)
            if axis_size is not None:
                found = f"axis_size={axis_size}, " + found
            fix = (
                fix_hint(fn, every, len(args), kw_names, leaves, lf, spec, batch)
                if lf.arg < len(spec)
                else f"`{lf.label}` is a keyword argument, which jax.vmap always maps on axis 0; "
                f"if it is shared by all items, pass it positionally with in_axes None; otherwise "
                f"give it {batch} items."
            )
            raise BatchAxisError(
                f"`{lf.label}` has {lf.size} along axis {lf.axis} but the batch has {batch} items "
                f"(sizes found: {found}). {fix}"
            )
    treedef = jax.tree_util.tree_structure(tuple(every))
    return Resolved(tuple(names), spec, tuple(leaves), treedef, batch, kw_names)
