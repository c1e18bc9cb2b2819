"""One batch attempt of :func:`batchlab.run_batches`: the items, a compiled size, a run, a
bisection."""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from typing import Any

import jax
import numpy as np

from batchlab._util.checks import ARRAY_TYPES
from batchlab.measuring.plan import batch_planner, batch_spec, compile_program, spec_of, unjit
from batchlab.runs.errors import (
    OOM_BUDGET,
    FnBug,
    OutOfMemory,
    is_interrupt,
    is_out_of_memory,
    oom_kind,
    short_message,
)
from batchlab.runs.results import BatchLog, Failure

# JAX logs every exception raised in a callback, traceback and all, once per bisection half;
# the same text is kept in the failure's `detail`
_CALLBACK_LOG = logging.getLogger("jax._src.callback")


def _leaf_spec(leaf: Any) -> tuple:
    if not isinstance(leaf, (*ARRAY_TYPES, int, float, complex, bool)):
        return ("not an array", type(leaf).__name__)
    return (tuple(np.shape(leaf)), str(np.result_type(leaf)))


def _describe(spec: tuple) -> str:
    treedef, leaves = spec
    text = ", ".join(
        f"{shape} {dtype}" if shape != "not an array" else f"a {dtype} (not an array)"
        for shape, dtype in leaves
    )
    return text if len(leaves) == 1 else f"{treedef} with leaves [{text}]"


class Items:
    """A list of pytrees or an array (items along axis 0), alike; in a list the most common
    structure/shape/dtype is the item type, the others are flagged ``bad`` before anything runs."""

    def __init__(self, items: Any) -> None:
        self.bad: dict[int, str] = {}
        self.spec_item, self.list, self.tree = None, items, None
        if isinstance(items, list):
            self.n = len(items)
            if not items:
                return
            flat = [jax.tree_util.tree_flatten(item) for item in items]
            specs = [(str(treedef), tuple(map(_leaf_spec, leaves))) for leaves, treedef in flat]
            common, _ = Counter(specs).most_common(1)[0]
            if any(leaf[0] == "not an array" for leaf in common[1]):
                raise TypeError(
                    f"`items` must hold arrays (or pytrees of arrays); most items are "
                    f"{_describe(common)}."
                )
            for i, spec in enumerate(specs):
                if spec != common:
                    self.bad[i] = (
                        f"item {i} is {_describe(spec)} where the other items are "
                        f"{_describe(common)}"
                    )
            self.spec_item = jax.tree_util.tree_map(spec_of, items[specs.index(common)])
            return
        leaves = jax.tree_util.tree_leaves(items)
        if not leaves or not all(isinstance(a, ARRAY_TYPES) and np.ndim(a) >= 1 for a in leaves):
            raise TypeError(
                f"`items` must be a list of items or an array (pytree of arrays) with the items "
                f"along axis 0, got {type(items).__name__}; wrap single items in a list: "
                f"[item0, item1, ...]."
            )
        lengths = sorted({int(np.shape(a)[0]) for a in leaves})
        if len(lengths) > 1:
            raise ValueError(
                f"`items` leaves disagree on the number of items (axis 0 sizes {lengths}); every "
                f"leaf needs one row per item."
            )
        self.tree, self.n = items, lengths[0]
        self.spec_item = jax.tree_util.tree_map(
            lambda a: jax.ShapeDtypeStruct(a.shape[1:], a.dtype), items
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
        if self.tree is None:
            rows = [self.list[i] for i in indices]
            return jax.tree_util.tree_map(lambda *xs: np.stack(xs), *rows)
        return jax.tree_util.tree_map(lambda a: a[np.asarray(indices)], self.tree)


class BatchRunner:
    """Compiled programs and planned bytes per batch size: a per-item ``fn`` runs as
    ``jit(vmap(fn))``; a batched ``fn`` is called as given, planned only against a budget."""

    def __init__(self, fn, items: Items, batched, budget_bytes, check_nan):
        self.fn, self.items, self.batched = fn, items, batched
        self.budget, self.check_nan = budget_bytes, check_nan
        self.jitted = fn if batched else jax.vmap(unjit(fn))
        self.programs: dict[int, tuple[Any, int | None]] = {}  # size: (program, planned bytes)

    def planned(self, size: int) -> int | None:
        """The planned bytes of a batch of ``size`` (compiled once per size, kept for the run)."""
        if size not in self.programs:
            spec = batch_spec(self.items.spec_item, size)
            if self.batched:  # planned only against a budget: the user's code runs as given
                planned = None if self.budget is None else batch_planner(self.fn)(spec)
                self.programs[size] = (self.fn, planned)
            else:
                program = compile_program(self.jitted, spec)
                self.programs[size] = (program, program.planned)
        return self.programs[size][1]

    def output_treedef(self):
        """The structure of fn's output, to rebuild outputs read from a checkpoint."""
        try:
            spec = self.items.spec_item
            return jax.tree_util.tree_structure(
                jax.eval_shape(self.fn, batch_spec(spec, 1) if self.batched else spec)
            )
        except Exception:
            return jax.tree_util.tree_structure(0)

    def run(self, idx: list[int], size: int) -> tuple[list[np.ndarray], Any]:
        """Output rows and structure for ``idx``, padded to ``size`` (a bisection's halves share
        one compile); a batched ``fn`` gets exactly ``idx``."""
        size = len(idx) if self.batched else size
        drop = logging.Filter("nothing")  # a filter naming another logger drops every record
        try:
            planned, program = self.planned(size), self.programs[size][0]
            if self.budget is not None and planned > self.budget:
                why = f"batch of {size} plans {planned} bytes > budget_bytes={self.budget}"
                raise OutOfMemory(OOM_BUDGET, why)
            _CALLBACK_LOG.addFilter(drop)
            try:
                out = program(self.items.take(idx + [idx[-1]] * (size - len(idx))))
                out = jax.block_until_ready(out)
            finally:
                _CALLBACK_LOG.removeFilter(drop)
            leaves = jax.tree_util.tree_leaves(out)
            wrong = [np.shape(a) for a in leaves if np.ndim(a) == 0 or np.shape(a)[0] != size]
            if self.batched and wrong:
                raise FnBug(
                    f"`fn` (strategy='manual') returned an output of shape {wrong[0]} for a "
                    f"batch of {size} items: every output must keep the batch as its leading axis "
                    f"(size {size}). Return one row per item, or pass a function of one item with "
                    f"strategy='vmap'."
                )
            rows = [np.asarray(leaf)[: len(idx)] for leaf in leaves]
        except BaseException as e:  # the kit's own OutOfMemory and FnBug pass as they are
            if is_interrupt(e):
                raise KeyboardInterrupt from e
            if is_out_of_memory(e):
                raise OutOfMemory(oom_kind(e), short_message(e)) from e
            raise
        return rows, jax.tree_util.tree_structure(out)

    def bisect(self, idx, error, found, failures, log, depth=1) -> None:
        """Splits a failing batch until each error is pinned on one item; logs every half run."""
        if len(idx) == 1:
            failures.append(Failure(idx[0], "error in fn", short_message(error), str(error)))
            return
        half = math.ceil(len(idx) / 2)
        for part in (idx[:half], idx[half:]):
            t0, error, status = time.perf_counter(), None, "ok"
            try:
                found.append((part, *self.run(part, half)))
            except OutOfMemory as e:
                status, error = e.kind, e
            except FnBug:
                raise
            except Exception as e:
                status, error = "error in fn" if len(part) == 1 else "error in fn, bisected", e
            log.append(BatchLog(part[0], half, len(part), status, time.perf_counter() - t0, depth))
            if isinstance(error, OutOfMemory):
                error.halves = log  # every half run so far, for the run's log
                raise error
            if error is not None:
                self.bisect(part, error, found, failures, log, depth + 1)

    def attempt(self, idx: list[int], size: int, nothing_ran_yet: bool) -> tuple[list, list, list]:
        """Runs one batch, bisecting it on an error, NaN/inf outputs out with ``check_nan``:
        ``(found, failures, halves)``; FnBug when ``fn`` fails the same way on everything."""
        found, failures, log = [], [], []
        try:
            found.append((idx, *self.run(idx, size)))
        except (OutOfMemory, FnBug):
            raise
        except Exception as e:
            self.bisect(idx, e, found, failures, log)
            message = short_message(e)
            same = all(f.message == message for f in failures)
            if nothing_ran_yet and not found and len(idx) >= 2 and same:
                raise FnBug(
                    f"`fn` fails on every item the same way, alone and as a batch of {len(idx)} "
                    f"({message}): this is a bug in `fn` (or in how it is called), not bad data. "
                    f"Fix `fn` (try it on one item: fn(items[0])); with strategy='manual' it "
                    f"takes a whole batch."
                ) from e
        return _split_nan(found, failures) if self.check_nan else found, failures, log


def _split_nan(found: list, failures: list) -> list:
    """``found`` without items whose outputs hold NaN or inf; those go to ``failures``."""
    kept = []
    for idx, leaves, tree in found:
        bad = np.zeros(len(idx), bool)
        for leaf in leaves:
            if np.issubdtype(leaf.dtype, np.inexact):
                bad |= ~np.isfinite(leaf.reshape(len(idx), -1)).all(axis=1)
        for i in np.flatnonzero(bad):
            failures.append(
                Failure(idx[i], "NaN/inf output", f"output of item {idx[i]} contains NaN or inf")
            )
        keep = np.flatnonzero(~bad)
        if keep.size:
            kept.append(([idx[i] for i in keep], [leaf[keep] for leaf in leaves], tree))
    return kept
