"""One batch attempt of :func:`batchlab.run_batches`: compile (or plan) for a size, run, bisect.

:class:`BatchRunner` holds the compiled program per batch size and XLA's
planned bytes for it (closed-over arrays planned as arguments:
:func:`batchlab.runs.planning.compile_program`), refuses a batch whose plan
is over the budget (a budget, never reported as a real out-of-memory), runs a
batch, and on an error bisects it to the items that fail. Every call it makes
is logged (:class:`batchlab.runs.results.BatchLog`), the halves of a
bisection included.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from typing import Any

import jax
import numpy as np

from batchlab.runs.errors import (
    OOM_BUDGET,
    FnBug,
    OutOfMemory,
    is_interrupt,
    is_out_of_memory,
    oom_kind,
    short_message,
)
from batchlab.runs.items import Items
from batchlab.runs.planning import batch_planner, batch_spec, compile_program, unjit
from batchlab.runs.results import BatchLog, Failure

# JAX logs every exception raised in a pure_callback / io_callback with its traceback (to
# stderr); a bisection meets it once per half. The same text is in the JaxRuntimeError it
# raises, kept whole in the failure's `detail`.
_CALLBACK_LOG = logging.getLogger("jax._src.callback")


@contextlib.contextmanager
def _quiet_callbacks():
    drop = logging.Filter("nothing")  # a filter naming another logger drops every record
    _CALLBACK_LOG.addFilter(drop)
    try:
        yield
    finally:
        _CALLBACK_LOG.removeFilter(drop)


class BatchRunner:
    """One call of :func:`run_batches`: compiled programs per batch size, and the run's state."""

    def __init__(self, fn, items: Items, *, batched, budget_bytes, check_nan, min_batch_size):
        self.fn, self.items, self.batched = fn, items, batched
        self.budget, self.check_nan, self.min_batch_size = budget_bytes, check_nan, min_batch_size
        # what the batch-size search and the budget check plan: a batched fn as given (one
        # of batchlab.batch's strategy="host" is planned by its HostPlan, any other compiled
        # for the shapes: budget.batch_planner), a per-item fn as jit(vmap(fn)) (a jit of the
        # item's fn inside it is inlined by XLA: planned unwrapped, its closed-over arrays hoisted)
        self.jitted = fn if batched else jax.vmap(unjit(fn))
        self._plan = batch_planner(self.jitted) if batched else None
        self.programs: dict[int, Any] = {}
        self.planned: dict[int, int] = {}

    def program(self, size: int):
        if size not in self.programs:
            spec = batch_spec(self.items.spec_item, size)
            if self.batched:  # called as given; planned only when there is a budget to check
                if self.budget is not None:
                    self.planned[size] = self._plan(spec)
                self.programs[size] = self.fn
            else:
                program = compile_program(self.jitted, spec)
                self.planned[size] = program.planned
                self.programs[size] = program
        if self.budget is not None and self.planned[size] > self.budget:
            raise OutOfMemory(
                OOM_BUDGET,
                f"batch of {size} plans {self.planned[size]} bytes > budget_bytes={self.budget}",
            )
        return self.programs[size]

    def run(self, idx: list[int], size: int) -> tuple[list[np.ndarray], Any]:
        """Output leaves and structure for ``idx``, padded to ``size`` (the halves of a bisection
        share one compile); a batched ``fn`` (the user's own code) gets exactly ``idx``.

        Compiling, stacking and running are all inside the error handling: an
        out-of-memory at compile time is memory, as at run time.
        """
        size = len(idx) if self.batched else size
        padded = idx + [idx[-1]] * (size - len(idx))
        try:
            program = self.program(size)
            with _quiet_callbacks():
                out = jax.block_until_ready(program(self.items.take(padded)))
            leaves = jax.tree_util.tree_leaves(out)
            if self.batched:
                for leaf in leaves:
                    if np.ndim(leaf) == 0 or np.shape(leaf)[0] != size:
                        raise FnBug(
                            f"`fn` (batched=True) returned an output of shape {np.shape(leaf)} for a "
                            f"batch of {size} items: every output must keep the batch as its leading "
                            f"axis (size {size}). Return one row per item, or pass a function of one "
                            f"item with batched=False."
                        )
            rows = [np.asarray(leaf)[: len(idx)] for leaf in leaves]
        except (OutOfMemory, FnBug):
            raise
        except BaseException as e:
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
            t0 = time.perf_counter()
            try:
                found.append((part, *self.run(part, half)))
                log.append(
                    BatchLog(part[0], half, len(part), "ok", time.perf_counter() - t0, depth)
                )
            except OutOfMemory as e:
                log.append(
                    BatchLog(part[0], half, len(part), e.kind, time.perf_counter() - t0, depth)
                )
                raise
            except FnBug:
                raise
            except Exception as e:
                status = "error in fn" if len(part) == 1 else "error in fn, bisected"
                log.append(
                    BatchLog(part[0], half, len(part), status, time.perf_counter() - t0, depth)
                )
                self.bisect(part, e, found, failures, log, depth + 1)

    def attempt(self, idx: list[int], size: int, nothing_ran_yet: bool) -> tuple[list, list, list]:
        """Runs one batch; on an error, bisects it. Raises FnBug when fn fails on everything.

        Returns ``(found, failures, halves)``: ``halves`` is the log of the
        bisection's calls (empty when the batch ran); an :class:`OutOfMemory`
        raised during a bisection carries it as ``.halves``.
        """
        try:
            return [(idx, *self.run(idx, size))], [], []
        except OutOfMemory as e:
            e.halves = []
            raise
        except FnBug:
            raise
        except Exception as e:
            found, failures, log = [], [], []
            try:
                self.bisect(idx, e, found, failures, log)
            except OutOfMemory as oom:
                oom.halves = log
                raise
            message = short_message(e)
            if (
                nothing_ran_yet
                and not found
                and len(idx) >= 2
                and all(f.message == message for f in failures)
            ):
                raise FnBug(
                    f"`fn` fails on every item the same way, alone and as a batch of {len(idx)} "
                    f"({message}): this is a bug in `fn` (or in how it is called), not bad data. "
                    f"Fix `fn` (try it on one item: fn(items[0])); with batched=True it takes a "
                    f"whole batch."
                ) from e
            return found, failures, log
