"""Run a whole dataset in batches without losing finished work.

:func:`run_batches` runs ``fn`` on batches of the items and keeps going when
things go wrong (README, "Runs that survive faults", says the same in prose):

* **out of memory** (every form XLA raises, :mod:`batchlab.runs.errors`; a
  host ``MemoryError``; or a plan above ``budget_bytes``, logged as a budget):
  the same items are retried smaller, halving until one batch runs, then
  bisecting between the last size that ran and the smallest that failed
  (:mod:`batchlab.runs.sizing`); a short batch (the last) runs at its own size;
* **bad items** (a shape or dtype unlike the others, an error raised by
  ``fn``, NaN/inf with ``check_nan=True``): recorded by index, found by
  bisection when ``fn`` raises for a whole batch; **a broken fn** (the same
  error on every item) raises :class:`BatchFnError`;
* **Ctrl-C** (also a ``KeyboardInterrupt`` inside ``fn`` or the compiled
  program): the batch in flight finishes and is saved, then
  :class:`~batchlab.runs.results.RunInterrupted` (a ``KeyboardInterrupt``)
  carries the partial result as ``.result``; a script exits with status 130.
  A second Ctrl-C stops at once, dropping the batch in flight;
* **checkpoint**: each finished batch is appended to a fingerprinted journal
  (:class:`batchlab.runs.checkpoint.Journal`); the same call resumes it, bit
  for bit, or at another ``batch_size`` keeping every finished item. Failed
  items run again on resume (``retry_failed=False`` keeps them). A failed
  save stops the run (``checkpoint_error``, and a warning); everything
  checkable is checked before any batch runs.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from batchlab._util.checks import check_callable, check_positive_int
from batchlab.runs.attempt import BatchRunner
from batchlab.runs.budget import default_budget
from batchlab.runs.checkpoint import Journal, check_writable
from batchlab.runs.errors import (
    FnBug,
    InterruptFlag,
    OutOfMemory,
    exit_as_interrupted,
    is_out_of_memory,
)
from batchlab.runs.items import Items
from batchlab.runs.margins import check_run_margin, planned_budget
from batchlab.runs.results import (
    BatchFnError,
    BatchItemError,
    BatchLog,
    BatchMemoryError,
    Failure,
    RunInterrupted,
    RunResult,
    RunState,
)
from batchlab.runs.resume import open_journal, output_treedef, same_settings
from batchlab.runs.search import search
from batchlab.runs.sizing import Sizer, check_sizing


def run_batches(
    fn: Callable,
    items: Any,
    *,
    batch_size: int | str = "auto",
    budget_bytes: int | None = None,
    on_error: str = "skip",
    checkpoint: str | os.PathLike | None = None,
    progress: bool = True,
    check_nan: bool = False,
    batched: bool = False,
    min_batch_size: int = 1,
    retry_failed: bool = True,
    run_name: str | None = None,
    multiple_of: int = 1,
    tolerance: float = 0.0,
    margin: float | str | None = None,
) -> RunResult:
    """Runs ``fn`` over every item in batches, surviving memory limits, bad items and Ctrl-C.

    Args:
      fn: by default a function of ONE item (run with ``jax.jit(jax.vmap(fn))``);
        with ``batched=True``, a function of a whole batch (leading axis).
      items: a ``list`` of items (pytrees of arrays), or an array / pytree
        of arrays whose leading axis is the item axis.
      batch_size: items per batch, or ``"auto"``: the largest batch whose
        planned bytes fit the budget (:func:`batchlab.max_batch_size`).
      budget_bytes: planned bytes a batch may use; a batch over it is
        retried smaller like a real OOM. ``None``: no planned check (``"auto"``
        then sizes batches for :func:`batchlab.runs.budget.default_budget`).
      on_error: ``"skip"`` records a bad item and goes on; ``"raise"``
        stops with :class:`BatchItemError` (its ``.result`` keeps what finished).
      checkpoint: a file path (its folder must exist and be writable); each
        finished batch is appended there and a rerun resumes from it, at this
        call's ``batch_size`` (finished items are kept, never recomputed).
      progress: show a tqdm progress bar (``TQDM_DISABLE=1`` turns it off).
      check_nan: treat items whose output holds NaN or inf as bad.
      batched: ``fn`` takes a whole batch.
      min_batch_size: the smallest batch tried after memory errors.
      retry_failed: on resume, run the items that failed with an error again.
      run_name: names the run in the checkpoint instead of ``fn``'s
        fingerprint (needed when ``fn`` reads something that cannot be
        hashed, or mutable state such as a call counter); the same name means
        "the same function": you vouch for it. Given on a checkpoint written
        without one, it resumes that checkpoint deliberately (``fn`` is not
        compared; the items and settings still are).
      multiple_of: sizes tried after a memory error are multiples of it
        (while at least ``multiple_of``); see :mod:`batchlab.runs.sizing`.
      tolerance: stop bisecting the batch size once the last size that ran
        is within this fraction of the smallest that failed (0: exact).
      margin: ``None`` (default): batches are planned against ``budget_bytes``.
        A ratio ``>= 1``: against ``budget_bytes / margin`` (the default budget's
        when ``budget_bytes`` is None), for sizing and for the planned check alike.
        ``"calibrated"``: the ratio is measured here, in a fresh process, as
        :func:`batchlab.max_batch_size` does (XLA's plan is a lower bound on
        XLA:CPU). The result's ``budget_bytes``, ``margin`` and ``margin_source``
        say which figure was used.

    Returns:
      A :class:`RunResult`: outputs of the good items in input order,
      their indices, failures, every call in the batch log, and throughput.

    Raises:
      TypeError / ValueError: bad arguments (checked before anything runs).
      BatchItemError: a bad item with ``on_error="raise"``.
      BatchFnError: ``fn`` fails the same way on every item, or (batched) does
        not keep the batch axis.
      BatchMemoryError: out of memory at ``min_batch_size`` with ``on_error="raise"``.
      RunInterrupted: Ctrl-C (a ``KeyboardInterrupt``; ``.result`` keeps what finished).
      batchlab.runs.checkpoint.CheckpointError: a corrupt or mismatched checkpoint,
        one that cannot be created, or a ``fn`` that cannot be fingerprinted
        (pass ``run_name``).

    Example:
      >>> import jax.numpy as jnp
      >>> r = run_batches(lambda x: x.sum(), jnp.ones((10, 3)), batch_size=4, progress=False)
      >>> r.outputs.tolist(), r.complete, [b.size for b in r.batches]
      ([3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0], True, [4, 4, 2])
    """
    check_callable(fn)
    if not isinstance(on_error, str) or on_error not in ("skip", "raise"):
        raise ValueError(f"`on_error` must be 'skip' or 'raise', got {on_error!r}.")
    if batch_size != "auto":
        batch_size = check_positive_int(batch_size, "batch_size")
    if budget_bytes is not None:
        budget_bytes = check_positive_int(budget_bytes, "budget_bytes")
    min_batch_size = check_positive_int(min_batch_size, "min_batch_size")
    multiple_of, tolerance = check_sizing(multiple_of, tolerance)
    for name, flag in (
        ("progress", progress),
        ("check_nan", check_nan),
        ("batched", batched),
        ("retry_failed", retry_failed),
    ):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"`{name}` must be True or False, got {type(flag).__name__} {flag!r}.")
    margin = check_run_margin(
        margin, batch_size=batch_size, budget_bytes=budget_bytes, batched=bool(batched)
    )
    if run_name is not None and not (isinstance(run_name, str) and run_name):
        raise TypeError(f"`run_name` must be a non-empty string or None, got {run_name!r}.")
    if checkpoint is not None:
        check_writable(checkpoint)  # before any work: a bad path fails now, not after batch 1
    data = Items(items)
    planned = planned_budget(fn, data.spec_item if data.n else None, margin, budget_bytes)
    budget_bytes = planned.planned_bytes
    runner = BatchRunner(
        fn,
        data,
        batched=batched,
        budget_bytes=budget_bytes,
        check_nan=check_nan,
        min_batch_size=min_batch_size,
    )
    sizer = Sizer(min_batch_size, multiple_of, tolerance)
    settings = {
        "batch_size": batch_size,
        "budget_bytes": budget_bytes,
        "min_batch_size": min_batch_size,
        "multiple_of": multiple_of,
        "tolerance": tolerance,
    }
    state = RunState(data.n, margin=planned.margin, margin_source=planned.margin_source)
    journal = None
    if checkpoint is not None:
        journal = open_journal(checkpoint, fn, items, data, runner, run_name, settings, on_error)
    if journal is not None and journal.records:
        known = any(h.get("treedef") is not None for h, _ in journal.records)
        treedef = None if known else output_treedef(runner, data)  # no retrace when stored
        same = same_settings(journal.settings, settings)
        state.restore(journal.records, treedef, retry_failed=retry_failed, sizes=same)
        if not same:  # another batch size or budget: the finished items stay, the rest re-sized
            state.other_size = True
            state.size = _initial_size(runner, data, batch_size, budget_bytes, sizer)
    else:
        state.size = _initial_size(runner, data, batch_size, budget_bytes, sizer)
    if data.n and state.size == 0:
        state.stop_reason = f"not even one item fits budget_bytes={budget_bytes} (planned)"
        return state.result(0.0, budget_bytes)
    return _loop(
        runner,
        data,
        state,
        sizer,
        on_error=on_error,
        journal=journal,
        progress=progress,
        budget_bytes=budget_bytes,
    )


def _initial_size(runner: BatchRunner, data: Items, batch_size, budget_bytes, sizer: Sizer) -> int:
    if batch_size != "auto":
        return min(batch_size, max(data.n, 1))
    if data.n == 0:
        return 1
    budget = budget_bytes if budget_bytes is not None else default_budget().bytes
    try:
        answer, _ = search(runner.jitted, data.spec_item, budget, data.n)
    except Exception as e:
        if not is_out_of_memory(e):
            raise
        # XLA refused to compile a size while planning (TPU/GPU compile-time OOM): start from
        # every item and let the run's own OOM handling halve and bisect from there
        return data.n
    return sizer.round(answer)


def _loop(
    runner: BatchRunner,
    data: Items,
    state: RunState,
    sizer: Sizer,
    *,
    on_error,
    journal,
    progress,
    budget_bytes,
) -> RunResult:
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
    interrupted = False
    with InterruptFlag() as flag, bar:
        while state.position < data.n or state.retry:
            if flag.set:
                state.stop_reason = "interrupted (Ctrl-C): stopped after the last finished batch"
                interrupted = True
                break
            size, idx_start = state.size, state.position
            if state.retry:  # items that failed before a resume: run them again first
                idx, skipped, end = state.retry[:size], [], state.position
            else:
                idx, skipped, end = data.window(state.position, size)
            failures = [Failure(i, "bad item", data.bad[i]) for i in skipped]
            found, halves = [], []
            b0 = time.perf_counter()
            full, size = size, min(size, len(idx)) or size  # a short batch runs at its own size
            if idx:
                try:
                    found, errors, halves = runner.attempt(idx, size, not state.chunks)
                    failures += errors
                except OutOfMemory as e:
                    halves = getattr(e, "halves", [])
                    status = "error in fn, bisected" if halves else e.kind
                    state.batches.append(
                        BatchLog(idx[0], size, len(idx), status, time.perf_counter() - b0)
                    )
                    state.batches.extend(halves)
                    if size <= runner.min_batch_size:
                        state.stop_reason = f"{e.kind} even at the minimum batch size {size}: {e}"
                        if on_error == "raise":
                            raise BatchMemoryError(now()) from e
                        break
                    state.size = sizer.after_oom(state, size)
                    state.retries += 1
                    continue
                except KeyboardInterrupt:
                    state.stop_reason = (
                        "interrupted (KeyboardInterrupt) during a batch; that batch is not kept"
                    )
                    interrupted = True
                    break
                except FnBug as e:
                    raise BatchFnError(now(), str(e)) from (e.__cause__ or e)
                if runner.check_nan:
                    found, nan_failures = _split_nan(found)
                    failures += nan_failures
            retried = state.retry[: len(idx)] if state.retry else []
            state.retry = state.retry[len(idx) :]
            status = "ok" if not failures else f"ok, {len(failures)} bad item(s)"
            if halves:
                status = "error in fn, bisected"
            state.add(found, failures, retried)
            state.batches.append(
                BatchLog(
                    idx[0] if retried else state.position,
                    size,
                    len(idx),
                    status,
                    time.perf_counter() - b0,
                )
            )
            state.batches.extend(halves)
            state.position = end
            if idx and size == full:  # a short batch (the last, or retried items) sizes nothing
                state.size = sizer.after_success(state, size)
            if journal is not None and not _save(journal, state, found, failures, retried):
                break
            bar.update(end - idx_start)
            if failures and on_error == "raise":
                raise BatchItemError(now(), sorted(failures)[0])
    result = now()
    if interrupted:
        exit_as_interrupted()
        raise RunInterrupted(result, None if journal is None else str(journal.path))
    return result


def _save(journal: Journal, state: RunState, found, failures, retried) -> bool:
    """Appends one finished batch; on a failed write, says so in the result and on screen."""
    try:
        journal.append(*state.record(found, failures, retried))
        return True
    except OSError as e:
        state.checkpoint_error = (
            f"the save of the batch at item {state.batches[-1].start} failed "
            f"({e.strerror or e}); {str(journal.path)!r} keeps only the "
            f"{len(journal.records)} batch(es) saved before it"
        )
        state.stop_reason = (
            f"checkpoint write failed ({e.strerror or e}); the checkpoint keeps the batches before "
            f"this one, and this result holds everything computed"
        )
        warnings.warn(
            f"run_batches stopped: {state.checkpoint_error}. The result holds every item computed; "
            f"free space (or pass another `checkpoint` path) and rerun to resume.",
            RuntimeWarning,
            stacklevel=4,
        )
        return False


def _split_nan(found):
    """Moves items whose outputs hold NaN or inf from ``found`` to failures."""
    kept, failures = [], []
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
    return kept, failures


__all__ = ["run_batches"]
