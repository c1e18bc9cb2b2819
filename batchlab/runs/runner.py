"""Run a whole dataset in batches without losing finished work (notebook 07): out of memory
(every form, or over ``budget_bytes``) retries smaller, bad items are bisected out, Ctrl-C
stops after the batch in flight (:class:`RunInterrupted`), a checkpoint resumes at any size."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable
from typing import Any

from batchlab._util.backend import device_label  # one backend per journal
from batchlab._util.checks import check_bool, check_callable, check_choice, check_positive_int
from batchlab.runs.attempt import BatchRunner, Items
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
