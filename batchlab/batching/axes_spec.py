"""Reading a ``vmap`` call: which leaves ``jax.vmap`` maps, and why, in words, where it refuses."""

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

jtu = jax.tree_util
#: unmapped leaves the compiled programs take as arguments (a ShapeDtypeStruct: planned, never
#: run); any other unmapped value reaches ``fn`` untouched, as under ``jax.vmap``
ARRAYS = (jax.Array, jax.ShapeDtypeStruct)


class BatchAxisError(ValueError):
    """A batch-axis spec (``in_axes`` / ``out_axes``) that does not fit the data."""


def is_axis_leaf(x: Any) -> bool:
    """An axis entry of a spec: an int, or None (not mapped)."""
    return x is None or (isinstance(x, numbers.Integral) and not isinstance(x, bool))


def param_names(fn: Callable, n: int) -> list[str]:
    """The parameter name of each positional argument (``args[i]`` when unknown)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), None)
    rest = [f"{star}[{i}]" if star else f"args[{len(names) + i}]" for i in range(n - len(names))]
    return (names + rest)[:n]


def per_argument(in_axes: Any, names: list[str]) -> tuple:
    """One spec per positional argument (vmap's rule: an int or None applies to all)."""
    if is_axis_leaf(in_axes):
        return (in_axes,) * len(names)
    if not isinstance(in_axes, (tuple, list)) or len(in_axes) != len(names):
        n = len(names)
        raise BatchAxisError(
            f"`in_axes` must be an int, None, or a tuple of {n} entries, one per argument of "
            f"fn({', '.join(names)}), got {in_axes!r}; write e.g. "
            f"in_axes=({', '.join(['0'] + ['None'] * (n - 1))})."
        )
    return tuple(in_axes)


def suggest(in_axes: tuple, i: int, value: Any = None) -> str:
    """``in_axes`` with entry ``i`` replaced, written as the user would type it."""
    entries = [repr(v) for v in in_axes]
    entries[i] = repr(value)
    return f"in_axes=({', '.join(entries)}{',' if len(entries) == 1 else ''})"


def axis_per_leaf(spec: Any, tree: Any) -> list:
    """The axis of every leaf of ``tree``, ``spec`` (a prefix tree of it) spread over its leaves."""
    subtrees = jax.tree.structure(spec, is_leaf=is_axis_leaf).flatten_up_to(tree)
    axes = jax.tree.leaves(spec, is_leaf=is_axis_leaf)
    return [ax for ax, sub in zip(axes, subtrees, strict=True) for _ in jax.tree.leaves(sub)]


def drop(shape: tuple, axis: int | None) -> tuple:
    """``shape`` without ``axis`` (None: all of it)."""
    return shape if axis is None else shape[:axis] + shape[axis + 1 :]


def abstract_call(
    fn: Callable, treedef: Any, flat: list, axes: list, *, item: bool = True, out_axes: Any = 0
) -> Any:
    """``fn``'s output from shapes only: one item's, or (``item=False``) ``jax.vmap``'s."""
    traced = [ax is not None or isinstance(x, ARRAYS) for x, ax in zip(flat, axes, strict=True)]

    def call(structs: list) -> Any:
        given = iter(structs)
        args, kwargs = jax.tree.unflatten(
            treedef, [next(given) if t else x for x, t in zip(flat, traced, strict=True)]
        )
        return fn(*args, **kwargs)

    pairs = [(x, ax) for x, ax, t in zip(flat, axes, traced, strict=True) if t]
    if item:
        shapes = [jax.ShapeDtypeStruct(drop(tuple(x.shape), ax), x.dtype) for x, ax in pairs]
        return jax.eval_shape(call, shapes)
    batched = jax.vmap(call, in_axes=([ax for _, ax in pairs],), out_axes=out_axes)
    return jax.eval_shape(batched, [jax.ShapeDtypeStruct(x.shape, x.dtype) for x, _ in pairs])


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
        """Its number of items (None where it is not mapped)."""
        return None if self.axis is None else self.shape[self.axis]

    @property
    def item_shape(self) -> tuple[int, ...]:
        """The shape one item sees: ``shape`` without the mapped axis."""
        return drop(self.shape, self.axis)


def leaves_of(fn: Callable, args: tuple, axes: list) -> list[Leaf]:
    """The call's leaves, named after fn's parameters, each with its axis (checked, normalized)."""
    names = param_names(fn, len(args))
    leaves = []
    for (path, x), ax in zip(jtu.tree_flatten_with_path(args)[0], axes, strict=True):
        i = path[0].idx
        label, shape = names[i] + jtu.keystr(path[1:]), tuple(getattr(x, "shape", ()))
        rank = len(shape)
        if ax is not None and not -rank <= ax < rank:
            valid = (
                f"valid axes are {-rank}..{rank - 1}, or None" if rank else "a scalar takes None"
            )
            raise BatchAxisError(
                f"in_axes asks for axis {ax} of `{label}`, but `{label}` has shape {shape} "
                f"({rank} axes); {valid} if `{label}` is shared by all items."
            )
        dtype = getattr(x, "dtype", None)
        leaves.append(Leaf(i, label, shape, dtype, None if ax is None else ax % rank))
    return leaves


@dataclass(frozen=True)
class Layout:
    """What ``jax.vmap(fn, in_axes)`` reads from one call's leaves, ``(args, kwargs)`` flattened.

    Attributes:
      treedef: the tree of ``(args, kwargs)``.
      axes: per leaf, its batch axis (>= 0), or None where it is not mapped.
      traced: per leaf, whether the compiled programs take it as an argument (see ``ARRAYS``).
      batch_size: the size of the mapped axes.
    """

    treedef: Any
    axes: tuple[int | None, ...]
    traced: tuple[bool, ...]
    batch_size: int

    @property
    def mapped_axes(self) -> tuple[int, ...]:
        """The batch axis of each mapped leaf, in order."""
        return tuple(ax for ax in self.axes if ax is not None)

    def split(self, flat: list) -> tuple[list, list, list]:
        """A call's leaves -> (mapped leaves, other traced leaves, untouched values)."""
        out: tuple[list, list, list] = ([], [], [])
        for x, ax, t in zip(flat, self.axes, self.traced, strict=True):
            out[0 if ax is not None else 1 if t else 2].append(x)
        return out

    def call(self, fn: Callable, mapped: list, shared: list, static: list) -> Any:
        """``fn(*args, **kwargs)`` with the leaves put back where they came from."""
        parts = iter(mapped), iter(shared), iter(static)
        flat = [
            next(parts[0 if ax is not None else 1 if t else 2])
            for ax, t in zip(self.axes, self.traced, strict=True)
        ]
        args, kwargs = jax.tree.unflatten(self.treedef, flat)
        return fn(*args, **kwargs)


def layout_of(fn: Callable, in_axes: Any, args: tuple, kwargs: dict) -> Layout:
    """The call's :class:`Layout`: ``jax.vmap`` checks the call (tree prefix, sizes, ranks; its own
    error, unchanged) with a function that computes nothing, then ``in_axes`` is spread over the
    leaves (keyword arguments mapped on axis 0)."""
    nothing = functools.wraps(fn)(lambda *a, **k: ())  # fn's signature names the arguments
    jax.vmap(nothing, in_axes=in_axes)(*args, **kwargs)
    flat, treedef = jax.tree.flatten((args, kwargs))
    spec = tuple(in_axes) if isinstance(in_axes, (list, tuple)) else (in_axes,) * len(args)
    axes = axis_per_leaf((spec, 0), (args, kwargs))
    axes = [None if ax is None else ax % np.ndim(x) for x, ax in zip(flat, axes, strict=True)]
    traced = [ax is not None or isinstance(x, ARRAYS) for x, ax in zip(flat, axes, strict=True)]
    n = next((np.shape(x)[ax] for x, ax in zip(flat, axes, strict=True) if ax is not None), 0)
    return Layout(treedef, tuple(axes), tuple(traced), n)


# --- the kit's words where jax.vmap refuses a call --------------------------------------------


def _shapes_text(shapes: list, batch: int | None = None) -> str:
    shown = [(batch, *s) if batch is not None else s for s in shapes]
    return ", ".join(map(str, shown))


def movable(outs: Callable, leaves: list, lf: Leaf, batch: int) -> tuple | None:
    """(axis, per-item outputs) of another axis of ``lf`` (one array) with ``batch`` entries."""
    if sum(m.arg == lf.arg for m in leaves) != 1:
        return None
    for a, size in enumerate(lf.shape):
        if size == batch and a != lf.axis and (got := outs(lf, a)) is not None:
            return a, got
    return None


def fix_hint(outs: Callable, leaves: list, lf: Leaf, spec: tuple, batch: int, arg: Any) -> str:
    """The fix for a leaf whose size is not the batch's, each suggestion evaluated first."""
    own = [None if m is lf else m.axis for m in leaves if m.arg == lf.arg]  # lf passed whole
    k, use = lf.label, suggest(spec, lf.arg, jax.tree.unflatten(jax.tree.structure(arg), own))
    if (moved := movable(outs, leaves, lf, batch)) is not None:
        a, got = moved
        return (
            f"Axis {a} of `{k}` has {batch}: if it holds the items, map it, "
            f"{suggest(spec, lf.arg, a)}: each item sees `{k}` as "
            f"{drop(lf.shape, a)} and returns {_shapes_text(got)}."
        )
    whole, mapped = outs(lf, None), outs(lf, lf.axis)
    if whole is None:
        return (
            f"Passing `{k}` whole ({use}) does not fit fn either: give `{k}` {batch} "
            f"items along axis {lf.axis}."
        )
    if mapped is None or mapped == whole:
        return (
            f"If `{k}` is shared by all items, use {use}; otherwise give it {batch} items "
            f"along axis {lf.axis}."
        )
    n = abs(batch - lf.size)
    return (
        f"Do not pass `{k}` whole: {use} raises nothing but hands every item all "
        f"{lf.size} entries of `{k}`, so each item's output becomes {_shapes_text(whole)} "
        f"instead of {_shapes_text(mapped)} and the batched output {_shapes_text(whole, batch)} "
        f"instead of {_shapes_text(mapped, batch)}, silently. If its entries are one per item, "
        f"{n} {'is' if n == 1 else 'are'} {'missing' if lf.size < batch else 'extra'}: give it "
        f"{batch} (or keep only the items it has entries for)."
    )


def _ragged_list(arg: Any, name: str, axis: Any) -> None:
    """A Python list of items whose sizes along the mapped axis differ: point to padding."""
    if not isinstance(arg, (list, tuple)) or len(arg) < 2 or not isinstance(axis, int):
        return
    try:
        lengths = [len(x) if isinstance(x, (list, tuple)) else x.shape[axis] for x in arg]
    except (AttributeError, IndexError, TypeError):
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


def diagnose(fn: Callable, args: tuple, in_axes: Any) -> None:
    """Raises the kit's :class:`BatchAxisError` for a call ``jax.vmap`` refused: why, and the fix
    (at the first entry of ``in_axes`` that does not fit; every fix evaluated first)."""
    names = param_names(fn, len(args))
    spec = per_argument(in_axes, names)
    for arg, arg_spec, name in zip(args, spec, names, strict=True):
        _ragged_list(arg, name, arg_spec)
    leaves = leaves_of(fn, args, axis_per_leaf(spec, args))  # a tree mismatch: JAX's words
    mapped = [lf for lf in leaves if lf.axis is not None]
    if not mapped:  # nothing mapped: JAX's words
        return
    flat, treedef = jax.tree.flatten((args, {}))

    def outs(leaf: Leaf, axis: int | None) -> list | None:  # per-item outputs, leaf on axis
        try:
            axes = [axis if lf is leaf else lf.axis for lf in leaves]
            return [tuple(o.shape) for o in jax.tree.leaves(abstract_call(fn, treedef, flat, axes))]
        except Exception:
            return None

    # the most common size; on a tie, one that every other mapped leaf has on an axis fn takes
    counts = Counter(lf.size for lf in mapped)
    tied = [n for n in counts if counts[n] == max(counts.values())]
    fits = (n for n in tied if all(m.size == n or movable(outs, leaves, m, n) for m in mapped))
    batch = next(fits, tied[0])
    for lf in mapped:
        if lf.size != batch:
            found = ", ".join(f"`{m.label}`: {m.size} (axis {m.axis})" for m in mapped)
            fix = fix_hint(outs, leaves, lf, spec, batch, args[lf.arg])
            raise BatchAxisError(
                f"`{lf.label}` has {lf.size} along axis {lf.axis} but the batch has {batch} items "
                f"(sizes found: {found}). {fix}"
            )
