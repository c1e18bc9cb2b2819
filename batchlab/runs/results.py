"""What a batch run returns (:class:`RunResult`) and the progress a checkpoint saves
(:class:`RunState`)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import jax
import numpy as np

from batchlab._util.format import Rows, format_count, format_seconds


class Failure(NamedTuple):
    """One item without output: index, kind of fault, ``Name: text`` line, whole text."""

    index: int
    kind: str
    message: str
    detail: str = ""


class BatchLog(NamedTuple):
    """One call of the batch program; ``depth`` 0 is a batch, 1, 2, ... its bisection halves."""

    start: int
    size: int
    items: int
    status: str
    seconds: float
    depth: int = 0

    @property
    def out_of_memory(self) -> bool:
        """Whether the batch ran out of memory or over the budget."""
        return self.status.startswith(("out of memory", "over budget"))


@dataclass(frozen=True)
class RunResult(Rows):
    """The outcome of :func:`batchlab.run_batches`: ``outputs`` of the good items in input order
    (or ``None``) at ``indices``; ``batches``: every call, retries and bisection halves included."""

    n_items: int
    outputs: Any
    indices: np.ndarray
    failures: tuple[Failure, ...]
    complete: bool
    stop_reason: str | None
    batches: tuple[BatchLog, ...]
    retries: int
    seconds: float
    resumed_items: int = 0
    budget_bytes: int | None = None
    source: str = "wall clock (time.perf_counter) per batch, outputs as returned by fn"
    checkpoint_error: str | None = None
    resumed_at_other_size: bool = False

    @property
    def failed_indices(self) -> list[int]:
        """The index of every item without output (one per failure)."""
        return [f.index for f in self.failures]

    @property
    def batch_sizes(self) -> list[int]:
        """The distinct batch sizes of the batches that finished."""
        return sorted({b.size for b in self.batches if b.depth == 0 and not b.out_of_memory})

    def _title(self) -> str:
        return self.source

    def _rows(self) -> list[tuple[str, str]]:
        state = "complete" if self.complete else f"INCOMPLETE: {self.stop_reason}"
        done = f"{len(self.indices)} of {self.n_items} with output, {len(self.failures)} failed"
        calls = f"{len(self.batches)} attempts; sizes used {self.batch_sizes}; {self.retries}"
        rows = [
            ("items", f"{done}; {state}"),
            ("batches", f"{calls} retried at a smaller size after a memory limit"),
        ]
        if self.resumed_items:
            other = " (written at other batch settings)" if self.resumed_at_other_size else ""
            rows.append(("resumed", f"{self.resumed_items} items came from the checkpoint{other}"))
        if self.checkpoint_error:
            rows.append(("CHECKPOINT NOT SAVED", self.checkpoint_error))
        rows += [(f"failed item {f.index}", f"{f.kind}: {f.message}") for f in self.failures[:10]]
        if len(self.failures) > 10:
            rows.append(("...", f"{len(self.failures) - 10} more failures"))
        if self.seconds <= 0:
            return [*rows, ("throughput", "n/a")]
        done = len(self.indices) + len(self.failures) - self.resumed_items  # in this call
        speed = f"{format_count(done / self.seconds)} items/s in {format_seconds(self.seconds)}"
        return [*rows, ("throughput", speed)]


def encode_treedef(treedef: Any) -> str | None:
    """fn's output structure as text (JAX's own protobuf form, base64), or None where that form
    cannot hold it (a namedtuple, a registered class, a dict with other than string keys)."""
    try:
        return base64.b64encode(treedef.serialize_using_proto()).decode()
    except ValueError:
        return None


def decode_treedef(text: str) -> Any:
    data = base64.b64decode(text)
    return jax.tree_util.PyTreeDef.deserialize_using_proto(jax.tree_util.default_registry, data)


_SIZES = ("size", "ok_size", "fail_size")  # where the sizing search stood


@dataclass
class RunState:
    """The mutable progress of a run, saved one journal record per batch; a memory error sizes
    between ``ok_size`` (ran) and ``fail_size`` (failed)."""

    n_items: int
    position: int = 0
    size: int = 0
    chunks: list = field(default_factory=list)  # [(indices, leaves)]
    treedef: Any = None
    failures: list = field(default_factory=list)
    batches: list = field(default_factory=list)
    retries: int = 0
    stop_reason: str | None = None
    resumed_items: int = 0
    ok_size: int = 0
    fail_size: int | None = None
    saved_batches: int = 0
    retry: list = field(default_factory=list)  # failed items to run again on resume
    checkpoint_error: str | None = None
    other_size: bool = False

    def add(self, found: list, failures: list, retried: list) -> None:
        gone = set(retried)
        self.failures = [f for f in self.failures if f.index not in gone] + list(failures)
        for idx, leaves, treedef in found:
            self.chunks.append((list(idx), leaves))
            self.treedef = treedef

    def result(self, seconds: float, budget_bytes: int | None) -> RunResult:
        chunks = sorted((c for c in self.chunks if c[0]), key=lambda c: c[0][0])
        indices = np.asarray([i for idx, _ in chunks for i in idx], dtype=np.int64)
        outputs = None
        if chunks and self.treedef is not None:
            order = np.argsort(indices, kind="stable")  # retried items land in input order
            leaves = [
                np.concatenate(parts)[order] for parts in zip(*(c[1] for c in chunks), strict=True)
            ]
            indices, outputs = indices[order], jax.tree_util.tree_unflatten(self.treedef, leaves)
        complete = self.stop_reason is None and self.position >= self.n_items and not self.retry
        same = ("n_items", "stop_reason", "retries", "resumed_items", "checkpoint_error")
        return RunResult(
            **{k: getattr(self, k) for k in same},
            outputs=outputs,
            indices=indices,
            failures=tuple(sorted(self.failures)),
            complete=complete,
            batches=tuple(self.batches),
            seconds=seconds,
            budget_bytes=budget_bytes,
            resumed_at_other_size=self.other_size,
        )

    def record(self, found: list, failures: list, retried: list) -> tuple[dict, dict]:
        """The journal record of one finished batch: its outputs and the run's small state."""
        arrays = {"indices": np.asarray([i for part, _, _ in found for i in part], np.int64)}
        for k, parts in enumerate(zip(*(leaves for _, leaves, _ in found), strict=True)):
            arrays[f"out_{k}"] = np.concatenate(parts)
        header = {
            "state": {k: getattr(self, k) for k in ("position", "retries", *_SIZES)},
            "failures": [list(f) for f in failures],
            "retried": list(retried),
            "batches": [list(b) for b in self.batches[self.saved_batches :]],
            "treedef": encode_treedef(found[0][2]) if found else None,
        }
        self.saved_batches = len(self.batches)
        return header, arrays

    def restore(self, records: list, traced: Callable, *, sizes: bool) -> None:
        """Folds journal records back in (items that failed with an error run again); ``traced()``:
        the output structure when none is stored; ``sizes=False``: keep the new sizing."""
        stored = [h["treedef"] for h, _ in records if h.get("treedef") is not None]
        treedef = decode_treedef(stored[0]) if stored else traced()  # as fn returned it
        for header, arrays in records:
            leaves = [arrays[f"out_{k}"] for k in range(sum(k.startswith("out_") for k in arrays))]
            idx = arrays["indices"].tolist()
            found = [(idx, leaves, treedef)] if idx else []
            self.add(found, [Failure(*f) for f in header["failures"]], header["retried"])
            self.batches.extend(BatchLog(*b) for b in header["batches"])
            for k in ("position", "retries", *(_SIZES if sizes else ())):
                setattr(self, k, header["state"][k])
        self.saved_batches = len(self.batches)
        self.resumed_items = sum(len(c[0]) for c in self.chunks) + len(self.failures)
        self.retry = sorted(f.index for f in self.failures if f.kind == "error in fn")


class BatchFnError(ValueError):
    """``fn`` is broken (the same error on every item, or the wrong shape); ``.result`` keeps
    what finished."""

    def __init__(self, result: RunResult, message: str) -> None:
        super().__init__(f"{message} The {len(result.indices)} finished outputs are in `.result`.")
        self.result = result


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped :func:`batchlab.run_batches` (a ``KeyboardInterrupt``); ``.result`` keeps
    what finished (in IPython ``sys.last_value.result``)."""

    def __init__(self, result: RunResult, checkpoint: str | None = None) -> None:
        done = len(result.indices) + len(result.failures)
        after = f"they are saved in {checkpoint!r}: rerun the same call to resume"
        if checkpoint is None:
            after = "pass checkpoint=path to keep finished work for a rerun"
        elif result.checkpoint_error is not None:
            after = f"the checkpoint {checkpoint!r} is missing some ({result.checkpoint_error})"
        super().__init__(
            f"run_batches stopped by Ctrl-C ({result.stop_reason}); {done} of {result.n_items} "
            f"items finished, in this exception's `.result`; {after}."
        )
        self.result = result
