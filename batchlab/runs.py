"""Run a whole dataset in batches without losing finished work.

:func:`run_batches` splits the items into batches and runs ``fn`` on each,
and keeps going when things go wrong:

* **out of memory** (XLA ``RESOURCE_EXHAUSTED`` on a device, or a planned
  peak above ``budget_bytes``, which reproduces the behaviour on CPU and is
  labelled as a budget, never as a real OOM): halve the batch size and
  retry the same batch, down to ``min_batch_size``;
* **bad items** (a shape or dtype unlike the others, an error raised by
  ``fn``, NaN/inf outputs when ``check_nan=True``): recorded by index with
  a message, found by bisection when ``fn`` raises for a whole batch;
* **Ctrl-C**: stop after the current batch, return what is finished,
  marked incomplete;
* **checkpoint**: finished results are saved atomically after every batch;
  rerunning with the same path resumes, giving the result an uninterrupted
  run gives.
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from ._checks import check_callable, check_positive_int
from ._compile import function_name, is_jitted
from ._run_items import Items
from .budget import batch_spec, default_budget, planned_bytes, search
from .checkpoint import digest, load_checkpoint, save_checkpoint
from .memory import estimate_from_compiled
from .run_result import BatchItemError, BatchLog, BatchMemoryError, Failure, RunResult, RunState

OOM_XLA = "out of memory (XLA RESOURCE_EXHAUSTED)"
OOM_BUDGET = "over budget (planned bytes > budget_bytes)"


class _OutOfMemory(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def is_out_of_memory(error: BaseException) -> bool:
    """True for XLA's ``RESOURCE_EXHAUSTED`` runtime error and for host ``MemoryError``.

    Example:
      >>> import jax
      >>> is_out_of_memory(jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory"))
      True
      >>> is_out_of_memory(ValueError("shape"))
      False
    """
    if isinstance(error, MemoryError):
        return True
    return isinstance(error, jax.errors.JaxRuntimeError) and "RESOURCE_EXHAUSTED" in str(error)


def short_message(error: BaseException) -> str:
    """One line naming the error: the last line of a multi-line message (e.g. a callback's)."""
    lines = [ln.strip() for ln in str(error).strip().splitlines() if ln.strip()]
    if not lines:
        return type(error).__name__
    text = lines[-1] if len(lines) > 1 else f"{type(error).__name__}: {lines[0]}"
    return text if len(text) <= 200 else text[:197] + "..."


class _Runner:
    """One call of :func:`run_batches`: compiled programs per batch size, and the run's state."""

    def __init__(self, fn, items: Items, *, batched, budget_bytes, check_nan, min_batch_size):
        self.fn, self.items, self.batched = fn, items, batched
        self.budget, self.check_nan, self.min_batch_size = budget_bytes, check_nan, min_batch_size
        self.jitted = (fn if is_jitted(fn) else jax.jit(fn)) if batched else jax.jit(jax.vmap(fn))
        self.programs: dict[int, Any] = {}
        self.planned: dict[int, int] = {}

    def program(self, size: int):
        if size not in self.programs:
            if self.batched and self.budget is None:
                self.programs[size] = self.fn  # a batched fn is called as given
            else:
                compiled = self.jitted.lower(batch_spec(self.items.spec_item, size)).compile()
                self.planned[size] = planned_bytes(estimate_from_compiled(compiled))
                self.programs[size] = self.fn if self.batched else compiled
        if self.budget is not None and self.planned[size] > self.budget:
            raise _OutOfMemory(
                OOM_BUDGET,
                f"batch of {size} plans {self.planned[size]} bytes > budget_bytes={self.budget}",
            )
        return self.programs[size]

    def run(self, idx: list[int], size: int) -> tuple[list[np.ndarray], Any]:
        """Output leaves and structure for ``idx`` (padded to ``size``: one compile per size)."""
        program = self.program(size)
        padded = idx + [idx[-1]] * (size - len(idx))
        try:
            out = jax.block_until_ready(program(self.items.take(padded)))
        except Exception as e:
            if is_out_of_memory(e):
                raise _OutOfMemory(OOM_XLA, short_message(e)) from e
            raise
        return [
            np.asarray(leaf)[: len(idx)] for leaf in jax.tree_util.tree_leaves(out)
        ], jax.tree_util.tree_structure(out)

    def bisect(self, idx: list[int], error: Exception, found: list, failures: list) -> None:
        """Splits a failing batch until each error is pinned on one item."""
        if len(idx) == 1:
            failures.append(Failure(idx[0], "error in fn", short_message(error)))
            return
        half = math.ceil(len(idx) / 2)
        for part in (idx[:half], idx[half:]):
            try:
                found.append((part, *self.run(part, half)))
            except _OutOfMemory:
                raise
            except Exception as e:
                self.bisect(part, e, found, failures)


class _InterruptFlag:
    """SIGINT sets a flag (stop after this batch); a second Ctrl-C interrupts at once."""

    def __init__(self) -> None:
        self.set, self._old = False, None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.set:
            raise KeyboardInterrupt
        self.set = True

    def __exit__(self, *exc):
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
        return False


def run_batches(
    fn: Callable,
    items: Any,
    *,
    batch_size: int | str = "auto",
    budget_bytes: int | None = None,
    on_error: str = "skip",
    checkpoint: str | None = None,
    progress: bool = True,
    check_nan: bool = False,
    batched: bool = False,
    min_batch_size: int = 1,
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
        halved like a real OOM. ``None``: no planned check (``"auto"`` then
        sizes batches for :func:`batchlab.budget.default_budget`).
      on_error: ``"skip"`` records a bad item and goes on; ``"raise"``
        stops with :class:`BatchItemError` (its ``.result`` keeps what finished).
      checkpoint: a ``.npz`` path; finished results are saved there after
        each batch and a rerun resumes from it.
      progress: show a tqdm progress bar (``TQDM_DISABLE=1`` turns it off).
      check_nan: treat items whose output holds NaN or inf as bad.
      batched: ``fn`` takes a whole batch.
      min_batch_size: the smallest batch tried after memory errors.

    Returns:
      A :class:`RunResult`: outputs of the good items in input order,
      their indices, failures, the batch log and throughput.

    Raises:
      TypeError / ValueError: bad arguments (checked before anything runs).
      BatchItemError: a bad item with ``on_error="raise"``.
      BatchMemoryError: out of memory at ``min_batch_size`` with ``on_error="raise"``.
      batchlab.checkpoint.CheckpointError: a corrupt or mismatched checkpoint.

    Example:
      >>> import jax.numpy as jnp
      >>> r = run_batches(lambda x: x.sum(), jnp.ones((10, 3)), batch_size=4, progress=False)
      >>> r.outputs.tolist(), r.complete, [b.size for b in r.batches]
      ([3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0], True, [4, 4, 4])
    """
    check_callable(fn)
    if on_error not in ("skip", "raise"):
        raise ValueError(f"`on_error` must be 'skip' or 'raise', got {on_error!r}.")
    if batch_size != "auto":
        batch_size = check_positive_int(batch_size, "batch_size")
    if budget_bytes is not None:
        budget_bytes = check_positive_int(budget_bytes, "budget_bytes")
    min_batch_size = check_positive_int(min_batch_size, "min_batch_size")
    data = Items(items)
    runner = _Runner(
        fn,
        data,
        batched=batched,
        budget_bytes=budget_bytes,
        check_nan=check_nan,
        min_batch_size=min_batch_size,
    )
    parts = {
        "fn": function_name(fn),
        "fn_code": _code_digest(fn),
        "items": digest(items)[:16],
        "n_items": data.n,
        "batch_size": batch_size,
        "budget_bytes": budget_bytes,
        "on_error": on_error,
        "check_nan": check_nan,
        "batched": batched,
        "min_batch_size": min_batch_size,
    }
    state = RunState(data.n)
    saved = load_checkpoint(checkpoint, parts) if checkpoint is not None else None
    if saved is not None:
        state.restore(saved.arrays, saved.state, _output_treedef(runner, data))
    else:
        state.size = _initial_size(runner, data, batch_size, budget_bytes)
        if data.n and state.size == 0:
            state.stop_reason = f"not even one item fits budget_bytes={budget_bytes} (planned)"
            return state.result(0.0, budget_bytes)
    return _loop(
        runner,
        data,
        state,
        on_error=on_error,
        checkpoint=checkpoint,
        parts=parts,
        progress=progress,
        budget_bytes=budget_bytes,
    )


def _code_digest(fn: Callable) -> str | None:
    code = getattr(getattr(fn, "__wrapped__", fn), "__code__", None)
    return None if code is None else digest([np.frombuffer(code.co_code, np.uint8)])[:16]


def _output_treedef(runner: _Runner, data: Items):
    """The structure of fn's output, to rebuild outputs read from a checkpoint."""
    try:
        spec = batch_spec(data.spec_item, 1) if runner.batched else data.spec_item
        return jax.tree_util.tree_structure(jax.eval_shape(runner.fn, spec))
    except Exception:
        return jax.tree_util.tree_structure(0)


def _initial_size(runner: _Runner, data: Items, batch_size, budget_bytes) -> int:
    if batch_size != "auto":
        return min(batch_size, max(data.n, 1))
    if data.n == 0:
        return 1
    budget = budget_bytes if budget_bytes is not None else default_budget().bytes
    answer, _ = search(runner.jitted, data.spec_item, budget, data.n)
    return answer


def _loop(
    runner: _Runner,
    data: Items,
    state: RunState,
    *,
    on_error,
    checkpoint,
    parts,
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
    with _InterruptFlag() as flag, bar:
        while state.position < data.n:
            if flag.set:
                state.stop_reason = "interrupted (Ctrl-C): stopped after the last finished batch"
                break
            size, idx_start = state.size, state.position
            idx, skipped, end = data.window(state.position, size)
            failures = [Failure(i, "bad item", data.bad[i]) for i in skipped]
            found = []
            b0 = time.perf_counter()
            if idx:
                try:
                    found = [(idx, *runner.run(idx, size))]
                except _OutOfMemory as e:
                    state.batches.append(
                        BatchLog(idx[0], size, len(idx), e.kind, time.perf_counter() - b0)
                    )
                    if size <= runner.min_batch_size:
                        state.stop_reason = f"{e.kind} even at the minimum batch size {size}: {e}"
                        if on_error == "raise":
                            raise BatchMemoryError(now()) from e
                        break
                    state.size, state.retries = (
                        max(size // 2, runner.min_batch_size),
                        state.retries + 1,
                    )
                    continue
                except KeyboardInterrupt:
                    state.stop_reason = (
                        "interrupted (KeyboardInterrupt) during a batch; that batch is not kept"
                    )
                    break
                except Exception as e:
                    runner.bisect(idx, e, found, failures)
                if runner.check_nan:
                    found, nan_failures = _split_nan(found)
                    failures += nan_failures
            status = "ok" if not failures else f"ok, {len(failures)} bad item(s)"
            state.add(found, failures)
            state.batches.append(
                BatchLog(state.position, size, len(idx), status, time.perf_counter() - b0)
            )
            state.position = end
            if checkpoint is not None:
                save_checkpoint(checkpoint, *state.to_checkpoint(), parts)
            bar.update(end - idx_start)
            if failures and on_error == "raise":
                raise BatchItemError(now(), sorted(failures)[0])
    return now()


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


__all__ = ["RunResult", "is_out_of_memory", "run_batches"]
