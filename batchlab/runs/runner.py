"""Run a whole dataset in batches without losing finished work (notebook 07): out of memory
(every form, or over ``budget_bytes``) retries smaller, bad items are bisected out, Ctrl-C
stops after the batch in flight (:class:`RunInterrupted`), a checkpoint resumes at any size."""

from __future__ import annotations

import logging
import math
import os
import time
import warnings
from collections import Counter
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from batchlab._util.backend import device_label  # one backend per journal
from batchlab._util.checks import (
    ARRAY_TYPES,
    check_bool,
    check_callable,
    check_choice,
    check_positive_int,
)
from batchlab.measuring.plan import batch_planner, batch_spec, compile_program, spec_of, unjit
from batchlab.runs.checkpoint import (
    CheckpointError,
    Journal,
    check_writable,
    code_fingerprint,
    digest,
    fn_fingerprint,
)
from batchlab.runs.errors import (
    OOM_BUDGET,
    FnBug,
    OutOfMemory,
    exit_as_interrupted,
    interrupt_flag,
    is_interrupt,
    is_out_of_memory,
    oom_kind,
    short_message,
)
from batchlab.runs.results import (
    BatchFnError,
    BatchLog,
    Failure,
    RunInterrupted,
    RunResult,
    RunState,
)
from batchlab.runs.search import backend_tiles, largest_fitting

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
            stack = lambda *xs: np.stack(xs)  # noqa: E731
            return jax.tree_util.tree_map(stack, *[self.list[i] for i in indices])
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


def _after_oom(state: RunState, size: int) -> int:
    """The next size after a memory error at ``size`` (2 or more: at one item the run stops):
    half until one ran, then bisection between ``state.ok_size`` and ``state.fail_size``.
    Every size tried is below the smallest that failed, so ``size`` is the new smallest."""
    if size <= state.ok_size:  # memory got tighter than when ok_size ran: forget it
        state.ok_size = 0
    state.fail_size = size
    return (state.ok_size + size) // 2


def _after_success(state: RunState, size: int) -> int:
    """The next size after a batch of ``size`` ran: halfway up to the smallest that failed."""
    state.ok_size = size
    return size if state.fail_size is None else (size + state.fail_size) // 2


def run_batches(
    fn: Callable,
    items: Any,
    *,
    batch_size: int,
    budget_bytes: int | None = None,
    checkpoint: str | os.PathLike | None = None,
    progress: bool = True,
    check_nan: bool = False,
    strategy: str = "vmap",
    run_name: str | None = None,
) -> RunResult:
    """Runs ``fn`` over every item in batches, surviving memory limits, bad items and Ctrl-C.

    Args:
      fn: a function of ONE item (run as ``jit(vmap(fn))``), or of a whole batch with
        ``strategy="manual"``.
      items: a ``list`` of items (pytrees of arrays), or arrays with the items along axis 0.
      batch_size: items per batch to start with (e.g. ``int(batchlab.max_batch_size(...))``).
      budget_bytes: planned bytes a batch may use; a batch over it by its plan is not run: the
        run goes on at the largest size that fits, found by ``max_batch_size``'s search.
      checkpoint: a file path a rerun resumes from (items that failed with an error run again).
      run_name: names the run in the checkpoint instead of ``fn``'s fingerprint (its jaxpr, or
        with ``strategy="manual"`` its source and closed-over values): resumes under the same
        name whatever ``fn`` is now.

    Returns:
      A :class:`RunResult`: outputs of the items that ran, in input order, their indices and
      failures (out of memory at one item stops the run: see ``stop_reason``).

    Raises:
      BatchFnError: ``fn`` is broken (the same error on every item, or a wrong output shape).
      RunInterrupted: Ctrl-C, after the batch in flight (a ``KeyboardInterrupt``). Both carry
        what finished in ``.result``.
      CheckpointError: ``checkpoint`` is corrupt or belongs to another run.
      ValueError, TypeError: an argument, checked before any work.

    Example:
      >>> import jax.numpy as jnp
      >>> r = run_batches(lambda x: x.sum(), jnp.ones((10, 3)), batch_size=4, progress=False)
      >>> r.outputs.tolist(), r.complete, [b.size for b in r.batches]
      ([3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0], True, [4, 4, 2])
    """
    check_callable(fn)
    batch_size = check_positive_int(batch_size, "batch_size")
    budget_bytes = check_positive_int(budget_bytes, "budget_bytes", allow_none=True)
    batched = check_choice(strategy, "strategy", ("vmap", "manual")) == "manual"
    check_bool(progress, "progress")
    check_bool(check_nan, "check_nan")
    if run_name is not None and not (isinstance(run_name, str) and run_name):
        raise TypeError(f"`run_name` must be a non-empty string or None, got {run_name!r}.")
    if checkpoint is not None:
        check_writable(checkpoint)  # before any work: a bad path fails now, not after batch 1
    data = Items(items)
    state = RunState(data.n)
    runner = BatchRunner(fn, data, batched, budget_bytes, check_nan)
    settings = dict(batch_size=batch_size, budget_bytes=budget_bytes)
    journal = None
    if checkpoint is not None:
        journal = _open_journal(checkpoint, fn, items, data, runner, run_name, settings)
    if journal is not None and journal.records:
        state.other_size = journal.settings != settings  # finished items stay, the rest re-sized
        state.restore(journal.records, runner.output_treedef, sizes=not state.other_size)
    if not state.size:  # a new run, or one resumed at other settings
        state.size = min(batch_size, max(data.n, 1))
    return _loop(runner, data, state, journal, progress, budget_bytes)


def _open_journal(checkpoint, fn, items, data, runner, run_name, settings) -> Journal:
    """Opens or creates the journal of this run: ``fn`` (or ``run_name``), the items and the
    settings that change outputs; the batch settings are stored, not compared."""
    try:
        if run_name:
            fn_part = {"run_name": run_name}
        elif runner.batched:
            fn_part = {"fn": code_fingerprint(fn)}
        else:
            fn_part = {"fn": fn_fingerprint(fn, data.spec_item)}
    except Exception as e:
        raise CheckpointError(
            f"`fn` cannot be traced on one item for the checkpoint's fingerprint "
            f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}). Run it without "
            f"`checkpoint` to see the error. Name the run: run_batches(..., checkpoint=..., "
            f"run_name='my-run-v1'), and change the name when fn changes."
        ) from e
    parts = {**fn_part, "items": digest(items)[:16], "n_items": data.n, "device": device_label()}
    parts.update(check_nan=runner.check_nan, batched=runner.batched)
    return Journal.open(checkpoint, parts, settings=settings)


def _loop(runner, data, state, journal, progress, budget_bytes) -> RunResult:
    from tqdm.auto import tqdm

    t0 = time.perf_counter()
    now = lambda: state.result(time.perf_counter() - t0, budget_bytes)  # noqa: E731
    # tqdm.notebook ignores TQDM_DISABLE (tqdm 4.67), so honour it here for notebooks too
    quiet = os.environ.get("TQDM_DISABLE", "").lower() not in ("", "0", "false")
    bar = tqdm(
        total=data.n,
        initial=state.position,
        unit="item",
        desc="run_batches",
        disable=not progress or quiet,
    )
    with interrupt_flag() as flag, bar:
        while state.position < data.n or state.retry:
            if flag.set:
                state.stop_reason = "interrupted (Ctrl-C): stopped after the last finished batch"
                break
            size, idx_start = state.size, state.position
            if state.retry:  # items that failed before a resume: run them again first
                idx, skipped, end = state.retry[:size], [], state.position
            else:
                idx, skipped, end = data.window(state.position, size)
            failures = [Failure(i, "bad item", data.bad[i]) for i in skipped]
            found, halves, b0 = [], [], time.perf_counter()
            full, size = size, min(size, len(idx)) or size  # a short batch runs at its own size
            if idx:
                try:
                    found, errors, halves = runner.attempt(idx, size, not state.chunks)
                    failures += errors
                except OutOfMemory as e:
                    status = "error in fn, bisected" if e.halves else e.kind
                    log = BatchLog(idx[0], size, len(idx), status, time.perf_counter() - b0)
                    state.batches += [log, *e.halves]
                    if size == 1:
                        state.stop_reason = f"{e.kind} even at batch size 1: {e}"
                        break
                    if e.kind == OOM_BUDGET:  # over by its plan: search the plans, run what fits
                        known = {s: p for s, (_, p) in runner.programs.items()}
                        fit, _ = largest_fitting(
                            runner.planned, budget_bytes, size - 1, backend_tiles(), known=known
                        )
                        state.fail_size, state.size = fit + 1, max(fit, 1)
                    else:  # out of memory when run: halve, then bisect between ran and failed
                        state.size = _after_oom(state, size)
                    state.retries += 1
                    continue
                except KeyboardInterrupt:
                    state.stop_reason = (
                        "interrupted (KeyboardInterrupt) during a batch; that batch is not kept"
                    )
                    break
                except FnBug as e:
                    raise BatchFnError(now(), str(e)) from (e.__cause__ or e)
            retried, state.retry = state.retry[: len(idx)], state.retry[len(idx) :]
            status = "ok" if not failures else f"ok, {len(failures)} bad item(s)"
            status = "error in fn, bisected" if halves else status
            state.add(found, failures, retried)
            start = idx[0] if retried else state.position
            log = BatchLog(start, size, len(idx), status, time.perf_counter() - b0)
            state.batches += [log, *halves]
            state.position = end
            if idx and size == full:  # a short batch (the last, or retried items) sizes nothing
                state.size = _after_success(state, size)
            if journal is not None and not _save(journal, state, found, failures, retried):
                break
            bar.update(end - idx_start)
    result = now()
    if (state.stop_reason or "").startswith("interrupted"):
        exit_as_interrupted()
        raise RunInterrupted(result, None if journal is None else str(journal.path))
    return result


def _save(journal: Journal, state: RunState, found, failures, retried) -> bool:
    """Appends one finished batch; a failed write is said in the result and warned."""
    try:
        journal.append(*state.record(found, failures, retried))
        return True
    except OSError as e:
        state.checkpoint_error = (
            f"the save of the batch at item {state.batches[-1].start} failed ({e.strerror or e}); "
            f"{str(journal.path)!r} keeps only the {len(journal.records)} batch(es) saved before it"
        )
        state.stop_reason = f"checkpoint write failed: {state.checkpoint_error}"
        warnings.warn(
            f"run_batches stopped: {state.checkpoint_error}. The result holds every item computed; "
            f"free space (or pass another `checkpoint` path) and rerun to resume.",
            RuntimeWarning,
            stacklevel=4,
        )
        return False
