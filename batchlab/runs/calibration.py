"""A calibrated margin: the plan-to-real ratio of one function, measured in a fresh process.

XLA's plan is a lower bound of what a call needs (on XLA:CPU the runtime allocates outside
it: YNNPACK packs matrix weights, inputs are copied into place). :func:`calibrate` runs the
batched function for real in a fresh process (:mod:`batchlab.runs.observed`) at a small and
a larger size and divides the observed peak (+ the closed-over arrays, resident before the
call) by the plan; the larger ratio, never below 1, is the margin. :func:`run_under_limit`
is the check: one batch under ``RLIMIT_AS`` = the child's baseline + the budget (Linux).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import cloudpickle
import jax
import numpy as np

from batchlab._util.child import TIMEOUT as CHILD_TIMEOUT
from batchlab._util.child import run_child
from batchlab._util.format import Rows, format_bytes
from batchlab.batching.strategies import batch
from batchlab.measuring.live import device_memory
from batchlab.runs.observed import run_here
from batchlab.runs.planning import batch_args, batch_planner, compile_program, unjit

#: calibrations already measured: ``{key: (fn, Calibration)}`` (fn kept: ids are reused)
CACHE: dict[tuple, tuple[Any, Calibration]] = {}
TIMEOUT = CHILD_TIMEOUT  # the kit's one timeout policy (batchlab._util.child)
#: the largest plan a calibration runs for real (a larger answer is calibrated at a fraction of it)
MAX_CALIBRATION_BYTES = 1 << 30


def check_margin(margin: Any) -> float | str | None:
    """``None``, a ratio >= 1 (a real number) or ``"calibrated"``; anything else is refused."""
    if margin is None or margin == "calibrated":
        return margin
    if isinstance(margin, str):
        raise ValueError(
            f"`margin` must be a ratio >= 1 or 'calibrated', got margin={margin!r}; e.g. "
            f"margin=1.5 (plan at most budget / 1.5) or margin='calibrated' (measured here)."
        )
    if isinstance(margin, bool) or not isinstance(margin, (int, float, np.integer, np.floating)):
        raise TypeError(
            f"`margin` must be a number >= 1 or 'calibrated', got {type(margin).__name__} "
            f"{margin!r}; e.g. margin=1.5."
        )
    if not np.isfinite(margin) or margin < 1:
        raise ValueError(
            f"`margin` must be a finite ratio >= 1 (the budget is divided by it; below 1 it "
            f"would relax XLA's plan, a lower bound), got margin={margin}; e.g. margin=1.5."
        )
    return float(margin)


def calibration_sizes(answer: int, planned: dict[int, int]) -> tuple[int, ...]:
    """A quarter of the raw answer and the answer (scaled down while its plan passes 1 GiB)."""
    large = answer
    p = planned.get(answer)
    if p is not None and p > MAX_CALIBRATION_BYTES:
        large = max(1, int(answer * MAX_CALIBRATION_BYTES / p))
    return tuple(sorted({max(1, large // 4), large}))


def run_jobs(jobs: list, timeout: float) -> dict[str, dict]:
    """``{label: reply}`` for ``(label, kind, run, args, budget)`` jobs run in ONE fresh process
    (:func:`batchlab._util.child.run_child`); a child that dies or runs out of time answers
    every job with ``bytes``/``ran`` ``None`` and the reason in ``source``."""
    labels = [job[0] for job in jobs]
    child = run_child(run_here, cloudpickle.dumps(jobs), timeout=timeout)
    reply = child.reply
    if reply is None and child.returncode is None:
        return {
            k: {"bytes": None, "ran": None, "source": "not observed: out of time"} for k in labels
        }
    if reply is None:
        return {
            k: {"bytes": None, "ran": False, "error": child.why, "source": child.why}
            for k in labels
        }
    if "error" in reply and isinstance(reply["error"], dict):
        e = reply["error"]
        why = f"could not rebuild the jobs here ({e.get('type')}: {e.get('message')})"
        return {k: {"bytes": None, "ran": None, "source": why} for k in labels}
    return reply


class BatchJob:
    """``job(*args)`` runs ``batch(fn, strategy, chunk_size, in_axes)``, built on the first call
    (pickled without it: the user's function travels by value, the kit by reference)."""

    def __init__(self, fn: Callable, strategy: str, chunk_size: int | None, in_axes: Any):
        self.fn, self.strategy, self.chunk_size, self.in_axes = fn, strategy, chunk_size, in_axes
        self._program: Callable | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_program": None}

    def __call__(self, *args: Any) -> Any:
        if self._program is None:
            self._program = batch(
                self.fn, strategy=self.strategy, chunk_size=self.chunk_size, in_axes=self.in_axes
            )
        return self._program(*args)


def _arg_specs(example_item: Any, size: int, in_axes: Any) -> tuple:
    """The batch's arguments as specs; a shared argument given as an array travels as itself."""
    specs = batch_args(example_item, size, in_axes)
    if not isinstance(in_axes, tuple):
        return specs
    return tuple(
        s if ax == 0 else jax.tree_util.tree_map(_host_or_spec, a)
        for s, a, ax in zip(specs, example_item, in_axes, strict=True)
    )


def _host_or_spec(leaf: Any) -> Any:
    if isinstance(leaf, jax.ShapeDtypeStruct):
        return leaf
    return np.asarray(leaf)


class Calibration(NamedTuple):
    """The plan-to-real ratio of one batched function: the largest ``observed / planned`` of its
    ``points`` (``(batch_size, planned_bytes, observed_bytes)``), never below 1.0."""

    ratio: float
    points: tuple[tuple[int, int, int | None], ...]
    source: str
    strategy: str
    chunk_size: int | None

    @property
    def ratios(self) -> tuple[float | None, ...]:
        return tuple(None if o is None else o / p for _, p, o in self.points)

    def _rows(self) -> list[tuple[str, str, str, str]]:
        return [
            (
                str(b),
                format_bytes(p),
                "-" if o is None else format_bytes(o),
                "-" if r is None else f"{r:.2f}x",
            )
            for (b, p, o), r in zip(self.points, self.ratios, strict=True)
        ]

    _header = ("batch", "planned", "observed", "observed / planned")
    __repr__, _repr_html_ = Rows.__repr__, Rows._repr_html_

    def _title(self) -> str:
        return f"margin {self.ratio:.2f}x ({self.source})"


def _key(fn: Any, example_item: Any, strategy: str, chunk_size, in_axes, sizes) -> tuple:
    leaves, tree = jax.tree_util.tree_flatten(example_item)
    shapes = tuple((tuple(np.shape(x)), str(np.dtype(x.dtype))) for x in leaves)
    return (id(fn), str(tree), shapes, strategy, chunk_size, repr(in_axes), tuple(sizes))


def calibrate(
    fn: Callable,
    example_item: Any,
    sizes: tuple[int, ...],
    *,
    strategy: str = "vmap",
    chunk_size: int | None = None,
    in_axes: Any = 0,
    timeout: float = TIMEOUT,
    known: dict[int, int] | None = None,
) -> Calibration:
    """Observed / planned peak of ``batch(fn, strategy)`` at each of ``sizes``, in a fresh process.

    The batch is made in the child from its shapes; closed-over arrays travel with ``fn``. On
    CPU one process measures every size (its resident peak reset before each), on a GPU one
    per size. Cached per ``fn``, shapes, strategy, chunk size, ``in_axes`` and sizes;
    ``known``: planned bytes per size already compiled.
    """
    key = _key(fn, example_item, strategy, chunk_size, in_axes, sizes)
    hit = CACHE.get(key)
    if hit is not None and hit[0] is fn:
        return hit[1]
    plain = unjit(fn)
    job = BatchJob(plain, strategy, chunk_size, in_axes)
    plan = batch_planner(batch(plain, strategy=strategy, chunk_size=chunk_size, in_axes=in_axes))
    known = {} if known is None else known
    planned = {
        b: int(known[b]) if b in known else int(plan(*batch_args(example_item, b, in_axes)))
        for b in sizes
    }
    jobs = [(str(b), "observe", job, _arg_specs(example_item, b, in_axes), 0) for b in sizes]
    if device_memory() is None:
        reply = run_jobs(jobs, timeout)
    else:  # a device peak cannot be reset: one process per size
        reply = {}
        for j in jobs:
            reply.update(run_jobs([j], timeout / len(jobs)))
    # closed-over arrays are resident before the call (they travel with fn): the plan counts
    # them, the growth cannot, so they are added to it
    batched = batch(plain, strategy=strategy, chunk_size=chunk_size, in_axes=in_axes)
    consts = (
        0
        if strategy == "host"
        else compile_program(batched, *batch_args(example_item, min(sizes), in_axes)).const_bytes
    )
    observed = {b: reply.get(str(b), {}).get("bytes") for b in sizes}
    points = tuple(
        (b, planned[b], None if observed[b] is None else observed[b] + consts) for b in sizes
    )
    sources = {str(reply.get(str(b), {}).get("source")) for b in sizes}
    seen = [o / p for _, p, o in points if o is not None and p > 0]
    ratio = max([1.0, *seen])
    how = (
        f"max observed / planned of batches {', '.join(str(b) for b in sizes)}; "
        f"{'; '.join(sorted(sources))}"
        + (f" + closed-over arrays ({format_bytes(consts)})" if consts else "")
        + f"; jax {jax.__version__} {jax.default_backend()}"
    )
    if not seen:
        how = f"nothing observed ({'; '.join(sorted(sources))}): the plan as is"
    result = Calibration(float(ratio), points, how, strategy, chunk_size)
    CACHE[key] = (fn, result)
    return result


class LimitRun(NamedTuple):
    """A batch run in a fresh process under ``RLIMIT_AS`` = its measured baseline + ``budget_bytes``."""

    batch_size: int
    budget_bytes: int
    ran: bool | None
    error: str | None
    baseline_bytes: int | None
    source: str

    def __repr__(self) -> str:
        what = {True: "ran", False: f"failed ({self.error})", None: "not run"}[self.ran]
        return (
            f"LimitRun(batch {self.batch_size} under baseline "
            f"{format_bytes(self.baseline_bytes)} + {format_bytes(self.budget_bytes)}: {what})"
        )


def run_under_limit(
    fn: Callable,
    example_item: Any,
    batch_size: int,
    budget_bytes: int,
    *,
    strategy: str = "vmap",
    chunk_size: int | None = None,
    in_axes: Any = 0,
    timeout: float = TIMEOUT,
) -> LimitRun:
    """Runs a batch of ``batch_size`` in a fresh process limited to its warmed-up baseline
    (``VmSize``) + ``budget_bytes`` of address space; ``ran`` is ``None`` off Linux."""
    job = BatchJob(unjit(fn), strategy, chunk_size, in_axes)
    args = _arg_specs(example_item, batch_size, in_axes)
    r = run_jobs([("run", "limit", job, args, int(budget_bytes))], timeout)["run"]
    return LimitRun(
        int(batch_size),
        int(budget_bytes),
        r.get("ran"),
        r.get("error"),
        r.get("baseline_bytes"),
        str(r.get("source")),
    )


__all__ = [
    "CACHE",
    "BatchJob",
    "Calibration",
    "LimitRun",
    "calibrate",
    "calibration_sizes",
    "check_margin",
    "run_jobs",
    "run_under_limit",
]
