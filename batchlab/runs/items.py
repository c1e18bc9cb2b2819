"""The items of a batch run: one uniform view of arrays and of lists of pytrees.

``items`` is either a ``list`` of items (each a pytree of arrays) or an
array / pytree of arrays whose leading axis counts the items. In a list,
the most common structure/shape/dtype is taken as the item type; items
that differ are flagged as bad before anything runs (with what differs),
because stacking them would fail for the whole batch (shape) or silently
change the batch's dtype and recompile (dtype).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import jax
import numpy as np

from batchlab._util.checks import ARRAY_TYPES


def _leaf_spec(leaf: Any) -> tuple:
    if not isinstance(leaf, ARRAY_TYPES) and not isinstance(leaf, (int, float, complex, bool)):
        return ("not an array", type(leaf).__name__)
    return (tuple(np.shape(leaf)), str(np.result_type(leaf)))


def _describe(spec: tuple) -> str:
    treedef, leaves = spec
    text = ", ".join(
        f"{leaf[0]} {leaf[1]}" if leaf[0] != "not an array" else f"a {leaf[1]} (not an array)"
        for leaf in leaves
    )
    return text if len(leaves) == 1 else f"{treedef} with leaves [{text}]"


class Items:
    """Indexable items: ``n``, ``spec_item`` (one item as ShapeDtypeStructs), ``bad`` and ``take``."""

    def __init__(self, items: Any) -> None:
        self.bad: dict[int, str] = {}
        if isinstance(items, list):
            self.kind = "list"
            self.list = items
            self.n = len(items)
            specs = []
            for item in items:
                leaves, treedef = jax.tree_util.tree_flatten(item)
                specs.append((str(treedef), tuple(_leaf_spec(leaf) for leaf in leaves)))
            if not items:
                self.spec_item = None
                return
            common, _ = Counter(specs).most_common(1)[0]
            if any(leaf[0] == "not an array" for leaf in common[1]):
                raise TypeError(
                    f"`items` must hold arrays (or pytrees of arrays); most items are {_describe(common)}."
                )
            for i, spec in enumerate(specs):
                if spec != common:
                    self.bad[i] = (
                        f"item {i} is {_describe(spec)} where the other items are {_describe(common)}"
                    )
            first = items[specs.index(common)]
            self.spec_item = jax.tree_util.tree_map(
                lambda a: jax.ShapeDtypeStruct(np.shape(a), np.result_type(a)), first
            )
            return
        self.kind = "arrays"
        leaves = jax.tree_util.tree_leaves(items)
        if not leaves or not all(isinstance(a, ARRAY_TYPES) and np.ndim(a) >= 1 for a in leaves):
            raise TypeError(
                f"`items` must be a list of items or an array (pytree of arrays) with the items along "
                f"axis 0, got {type(items).__name__}; wrap single items in a list: [item0, item1, ...]."
            )
        lengths = sorted({int(np.shape(a)[0]) for a in leaves})
        if len(lengths) > 1:
            raise ValueError(
                f"`items` leaves disagree on the number of items (axis 0 sizes {lengths}); every leaf "
                f"needs one row per item."
            )
        self.tree = items
        self.n = lengths[0]
        self.spec_item = jax.tree_util.tree_map(
            lambda a: jax.ShapeDtypeStruct(np.shape(a)[1:], a.dtype), items
        )

    def window(self, start: int, size: int) -> tuple[list[int], list[int], int]:
        """The next ``size`` good indices from ``start``, the bad ones passed, and where it ends."""
        good, bad, j = [], [], start
        while j < self.n and len(good) < size:
            (bad if j in self.bad else good).append(j)
            j += 1
        return good, bad, j

    def take(self, indices: list[int]) -> Any:
        """The items at ``indices`` stacked along a new leading axis (numpy, on the host)."""
        if self.kind == "list":
            return jax.tree_util.tree_map(
                lambda *xs: np.stack([np.asarray(x) for x in xs]), *[self.list[i] for i in indices]
            )
        where = np.asarray(indices)
        return jax.tree_util.tree_map(lambda a: a[where], self.tree)
