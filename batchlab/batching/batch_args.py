"""How :func:`batchlab.batch` hands a call's arguments to a strategy, as ``jax.vmap`` would."""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from batchlab.batching.axes_spec import Resolved


class _ByContent:
    """A hashable stand-in for a numpy array, equal to another with the same bytes."""

    def __init__(self, a: np.ndarray) -> None:
        self.key = (a.shape, a.dtype.str, a.tobytes())
        self._hash = hash(self.key)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ByContent) and self.key == other.key


#: compiled programs kept per batched function (the oldest is dropped first)
CACHE_SIZE = 64


def remember(cache: dict, key: Any, make: Any) -> Any:
    """``cache[key]``, made by ``make()`` the first time; the oldest entry goes past CACHE_SIZE."""
    if key not in cache:
        if len(cache) >= CACHE_SIZE:
            cache.pop(next(iter(cache)))
        cache[key] = make()
    return cache[key]


def static_key(leaf: Any) -> Any:
    if isinstance(leaf, (np.ndarray, np.generic)):
        return ("numpy", _ByContent(np.asarray(leaf)))
    if isinstance(leaf, (numbers.Number, str, bytes, type(None))):
        return (type(leaf), leaf)  # 1, 1.0 and True hash alike: the type tells them apart
    try:
        hash(leaf)
        return (type(leaf), leaf)
    except TypeError:
        return ("id", id(leaf))  # unhashable: the cached program holds the object, so the id lives


@dataclass(frozen=True)
class Split:
    """One call's leaves, sorted by kind, and how to rebuild ``fn``'s arguments."""

    res: Resolved
    leaves: tuple  # every leaf of the call, in tree order
    mapped: tuple[int, ...]  # positions of mapped leaves
    shared: tuple[int, ...]  # positions of unmapped array leaves (traced inputs)
    key: tuple  # what a compiled program depends on besides the shapes of its inputs

    @property
    def axes(self) -> tuple[int, ...]:
        return tuple(self.res.leaves[k].axis for k in self.mapped)

    def call(self, fn: Any, items: list, shared: list) -> Any:
        """``fn`` on one item (or a chunk under vmap): mapped leaves from ``items``."""
        full = list(self.leaves)
        for k, x in zip(self.mapped, items, strict=True):
            full[k] = x
        for k, x in zip(self.shared, shared, strict=True):
            full[k] = x
        every = jax.tree_util.tree_unflatten(self.res.treedef, full)
        n = len(every) - len(self.res.kw_names)
        return fn(*every[:n], **dict(zip(self.res.kw_names, every[n:], strict=True)))


def split(res: Resolved, args: tuple, kwargs: dict) -> tuple[Split, list, list]:
    """Sorts the leaves of ``args`` and ``kwargs`` (as read by ``res``) by kind."""
    every = (*args, *(kwargs[k] for k in res.kw_names))
    leaves = tuple(jax.tree_util.tree_leaves(every))
    mapped = tuple(k for k, lf in enumerate(res.leaves) if lf.axis is not None)
    shared = tuple(k for k, lf in enumerate(res.leaves) if lf.axis is None and not lf.static)
    statics = tuple((k, static_key(leaves[k])) for k, lf in enumerate(res.leaves) if lf.static)
    axes = tuple(res.leaves[k].axis for k in mapped)
    key = (res.treedef, mapped, axes, shared, statics)
    # the program closes over `leaves`; shared and mapped ones are replaced by its inputs
    kept = tuple(lf if res.leaves[k].static else None for k, lf in enumerate(leaves))
    return (
        Split(res, kept, mapped, shared, key),
        [leaves[k] for k in mapped],
        [leaves[k] for k in shared],
    )
