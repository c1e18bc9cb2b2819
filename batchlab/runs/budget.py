"""The largest batch that fits a memory budget, planned before anything runs.

A batch of ``b`` items needs memory for its inputs, its outputs and the
temporaries of the computation. XLA plans all of them when it compiles, so
:func:`max_batch_size` asks the compiled memory analysis, never the device:
inputs are ``jax.ShapeDtypeStruct`` (nothing is allocated). Each batch size
tried is one compilation, so the search aims: planned bytes grow almost in
a straight line with the batch, and the batch where the line through two
measured points meets the budget is usually the answer (4 compilations from
scratch; doubling then bisection needs ``2 * floor(log2(answer)) + 2``).

The figure compared with the budget is :func:`planned_bytes`
(:attr:`MemoryEstimate.planned_bytes`): the larger of XLA's
``peak_memory_in_bytes`` and ``argument + output + temp - alias``. On the
CPU backend of jax 0.10 the XLA peak leaves the temporaries out, so the sum
is the honest figure there. It is a lower bound of what a device needs:
``margin=`` divides the budget by a ratio, given or measured here
(``"calibrated"``, :mod:`batchlab.runs.calibration`), and the result says
which figure the plan was compared with.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from batchlab._util.checks import (
    check_array_tree,
    check_callable,
    check_positive_float,
    check_positive_int,
)
from batchlab._util.format import Rows, format_bytes
from batchlab.batching.strategies import batch
from batchlab.measuring.live import device_memory
from batchlab.runs.budget_plot import plot_budget_curves
from batchlab.runs.calibration import Calibration, calibrate, calibration_sizes, check_margin
from batchlab.runs.planning import unjit
from batchlab.runs.search import METHODS, search

STRATEGIES = ("vmap", "map", "chunked", "host")
CPU_FRACTION = 0.5
_DEFAULT_UPPER = 2**31 - 1


class Budget(NamedTuple):
    """A memory budget in bytes and where the figure came from."""

    bytes: int
    source: str

    def __repr__(self) -> str:
        return f"Budget({format_bytes(self.bytes)}; source: {self.source})"


def default_budget(device: Any = None, *, fraction: float = CPU_FRACTION) -> Budget:
    """The memory a batch may plan to use on this machine.

    On a GPU/TPU: the room the device's allocator has left,
    ``bytes_limit - bytes_in_use`` from ``memory_stats()``. Not
    ``pool_bytes - bytes_in_use``: when memory is not preallocated
    (``XLA_PYTHON_CLIENT_PREALLOCATE=false``) the pool grows on demand up to
    ``bytes_limit``. Planned bytes are a lower bound of what the device
    really needs (the allocator rounds and may leave chunks unsplit; on
    XLA:CPU the runtime keeps buffers outside the plan), so leave a margin.
    A device with no room left gives a budget of 0 bytes, never the host's.

    On CPU, where the device keeps no statistics: ``fraction`` of the host
    memory available now (psutil).

    Example:
      >>> b = default_budget()
      >>> b.bytes > 0
      True
    """
    if check_positive_float(fraction, "fraction") > 1:
        raise ValueError(f"`fraction` is a share of memory in (0, 1], got fraction={fraction}.")
    stats = device_memory(device)
    if stats is not None and stats.room_bytes is not None:  # 0 is an answer: no room left
        what = "bytes_limit" if stats.bytes_limit else "pool_bytes"
        return Budget(
            int(stats.room_bytes),
            f"free device memory: {what} - bytes_in_use (jax.Device.memory_stats())",
        )
    import psutil

    available = int(psutil.virtual_memory().available)
    return Budget(int(available * fraction), f"{fraction:.0%} of available host memory (psutil)")


@dataclass(frozen=True)
class BatchSizeResult:
    """What :func:`max_batch_size` found, and every point it measured.

    ``int(result)`` is the batch size. ``curve`` holds ``(batch_size,
    planned_bytes)`` for every batch size the search looked at, sorted;
    ``compiled`` says how many of them were compiled by this call (the
    others came from ``known``, planned by an earlier search).
    """

    batch_size: int
    budget_bytes: int
    budget_source: str
    strategy: str
    chunk_size: int | None
    curve: tuple[tuple[int, int], ...]
    upper: int
    source: str = "compiled memory analysis (XLA), nothing executed"
    compiled: int | None = None
    method: str = "interpolate"
    margin: float | None = None
    margin_source: str | None = None
    calibration: Calibration | None = None

    @property
    def planned_budget_bytes(self) -> int:
        """The figure the plan was compared with: the budget, divided by ``margin`` if one was asked."""
        return (
            self.budget_bytes
            if self.margin is None
            else max(1, int(self.budget_bytes / self.margin))
        )

    @property
    def compilations(self) -> int:
        """How many batch sizes this call compiled (one compilation each)."""
        return len(self.curve) if self.compiled is None else self.compiled

    @property
    def planned_bytes(self) -> int | None:
        """Planned bytes at the answer (``None`` when nothing fits)."""
        return dict(self.curve).get(self.batch_size)

    @property
    def monotone(self) -> bool:
        """Whether the measured planned bytes never drop as the batch grows."""
        values = [p for _, p in self.curve]
        return all(a <= b for a, b in itertools.pairwise(values))

    @property
    def capped(self) -> bool:
        """True when the search stopped at ``upper``, not at the budget."""
        return self.batch_size == self.upper

    def __int__(self) -> int:
        return self.batch_size

    __index__ = __int__

    def _rows(self) -> list[tuple[str, str]]:
        strategy = self.strategy + (f" (chunk_size={self.chunk_size})" if self.chunk_size else "")
        rows = [
            (
                "largest batch",
                str(self.batch_size) + (" (capped by `upper`)" if self.capped else ""),
            ),
            ("planned bytes there", format_bytes(self.planned_bytes)),
            ("budget", f"{format_bytes(self.budget_bytes)} ({self.budget_source})"),
            *(
                []
                if self.margin is None
                else [
                    ("margin", f"{self.margin:.2f}x ({self.margin_source})"),
                    (
                        "plan compared with",
                        f"budget / margin = {format_bytes(self.planned_budget_bytes)}",
                    ),
                ]
            ),
            ("strategy", strategy),
            (
                "compilations",
                f"{self.compilations} ({self.method} search"
                + (
                    f"; {len(self.curve) - self.compilations} more sizes planned earlier)"
                    if len(self.curve) > self.compilations
                    else ")"
                ),
            ),
        ]
        if not self.monotone:
            rows.append(("warning", "planned bytes are not monotone in the batch size"))
        return rows

    __repr__, _repr_html_ = Rows.__repr__, Rows._repr_html_

    def _title(self) -> str:
        return f"max_batch_size ({self.source})"

    def plot(self, *, axes=None):
        """Planned bytes against batch size, with the budget and the answer marked."""
        return plot_budget_curves([self], axes=axes)


def check_in_axes(in_axes: Any, example_item: Any) -> None:
    """``in_axes`` is 0, or a tuple of 0/None matching the tuple ``example_item``, one 0 at least."""
    if isinstance(in_axes, int) and not isinstance(in_axes, bool) and in_axes == 0:
        return
    if not isinstance(in_axes, tuple) or not all(
        a is None or (isinstance(a, int) and not isinstance(a, bool) and a == 0) for a in in_axes
    ):
        raise ValueError(
            f"`in_axes` must be 0 or a tuple of 0 (batched) and None (shared), one per argument, "
            f"got in_axes={in_axes!r}; e.g. in_axes=(0, None) for fn(x, weights)."
        )
    if not isinstance(example_item, tuple) or len(example_item) != len(in_axes):
        got = (
            f"a tuple of {len(example_item)}"
            if isinstance(example_item, tuple)
            else type(example_item).__name__
        )
        raise ValueError(
            f"with in_axes={in_axes!r}, `example_item` must be the tuple of fn's {len(in_axes)} "
            f"arguments for one item, got {got}; e.g. example_item=(x_item, weights)."
        )
    if 0 not in in_axes:
        raise ValueError(
            f"`in_axes` must batch at least one argument (a 0), got in_axes={in_axes!r}: with every "
            f"argument shared there is no batch to size."
        )


def max_batch_size(
    fn: Callable,
    example_item: Any,
    *,
    budget_bytes: int | None = None,
    strategy: str = "vmap",
    chunk_size: int | None = None,
    upper: int | None = None,
    method: str = "interpolate",
    known: dict[int, int] | None = None,
    on_compile: Callable[[int], None] | None = None,
    in_axes: int | tuple = 0,
    margin: float | str | None = None,
) -> BatchSizeResult:
    """The largest batch whose planned memory fits ``budget_bytes``.

    Compiles ``batched(fn)`` for ``ShapeDtypeStruct`` batches of
    ``example_item`` (nothing is allocated or run) and compares
    :func:`planned_bytes` with the budget. Planned bytes grow almost in a
    straight line with the batch, so the search aims where the line
    through its last two measured points meets the budget (4 compilations
    on a straight line); ``method="bisect"`` doubles ``b`` from 1, then
    bisects (``2 * floor(log2(answer)) + 2``). Either way it ends on a
    measured pair ``fits(answer)``, ``not fits(answer + 1)``, so the
    neighbour of the answer is always checked; ``result.monotone``
    says whether the measured curve ever dropped. The curve of ``lax.map``
    is not monotone (a batch that is not a multiple of the chunk plans its
    remainder apart), so for ``"map"``/``"chunked"`` the next multiple of
    ``chunk_size`` above the answer is probed as well (one more compile).

    Args:
      fn: a function of ONE item, ``fn(item) -> output``.
      example_item: one item (a pytree of arrays or ``ShapeDtypeStruct``).
      budget_bytes: the budget; ``None`` uses :func:`default_budget`.
      strategy: ``"vmap"``, ``"map"``, ``"chunked"`` or ``"host"`` (see :func:`batched`).
      chunk_size: items per chunk for ``"map"``/``"chunked"``/``"host"``.
      upper: the largest batch size worth trying (e.g. the dataset size).
      method: ``"interpolate"`` (default) or ``"bisect"`` (see :func:`search`).
      known: ``{batch: planned bytes}`` from earlier searches of the SAME
        ``fn``, item and strategy; read and extended, so no batch size is
        compiled twice (the budget explorer keeps one per strategy).
      on_compile: ``on_compile(batch)`` is called before each compilation
        (an explorer shows "compiling batch 512...").
      in_axes: ``0`` (``fn`` takes one item), or as in ``jax.vmap`` a tuple
        of ``0`` (batched) and ``None`` (shared by every item, e.g. the
        weights) per argument; ``example_item`` is then the tuple of ``fn``'s
        arguments for one item, and a shared argument is planned once, whole.
      margin: ``None`` (default): the plan is compared with the whole budget
        (a lower bound of the real need). A number >= 1: with ``budget /
        margin``. ``"calibrated"``: the plan-to-real ratio measured here
        (:func:`batchlab.runs.calibration.calibrate`: the batch run for real
        in a fresh process at a quarter of the raw answer and at the raw
        answer, its observed peak divided by its plan, the larger ratio,
        never below 1; cached per function and shapes). The result says the
        ratio (``margin``), its source (``margin_source``) and the figure the
        plan was compared with (``planned_budget_bytes``).

    Returns:
      A :class:`BatchSizeResult`; ``int(result)`` is the answer, 0 when
      not even one item fits.

    Raises:
      TypeError: ``fn`` or ``on_compile`` is not callable, ``budget_bytes``
        is not an int, or ``known`` is not a dict.
      ValueError: ``budget_bytes`` or ``upper`` below 1, a bad strategy,
        a bad ``method``, ``in_axes`` not matching ``example_item``, or a
        ``margin`` below 1 or other than a number or ``"calibrated"``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> item = jax.ShapeDtypeStruct((256,), jnp.float32)     # 1 KiB in, 1 KiB out
      >>> r = max_batch_size(lambda x: 2 * x, item, budget_bytes=64 * 1024)
      >>> int(r), r.compilations <= 2 * 5 + 2
      (32, True)
      >>> int(max_batch_size(lambda x: 2 * x, item, budget_bytes=64 * 1024, method="bisect"))
      32

      Closed-over weights and shared arguments plan alike (both are arguments):

      >>> W = jax.ShapeDtypeStruct((256, 256), jnp.float32)  # 256 KiB, shared by every item
      >>> int(max_batch_size(lambda x, w: x @ w, (item, W), in_axes=(0, None),
      ...                    budget_bytes=512 * 1024))
      128
    """
    check_array_tree(example_item, "example_item")
    if strategy not in STRATEGIES:
        raise ValueError(f"`strategy` must be one of {STRATEGIES}, got {strategy!r}.")
    check_in_axes(in_axes, example_item)
    margin = check_margin(margin)
    f = batch(unjit(fn), strategy=strategy, chunk_size=chunk_size, in_axes=in_axes)
    if budget_bytes is None:
        budget = default_budget()
    else:
        budget = Budget(check_positive_int(budget_bytes, "budget_bytes"), "given")
    upper = _DEFAULT_UPPER if upper is None else check_positive_int(upper, "upper")
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {METHODS}, got {method!r}.")
    if known is not None and not isinstance(known, dict):
        raise TypeError(
            f"`known` must be a dict {{batch size: planned bytes}} (or None), got "
            f"{type(known).__name__}."
        )
    if on_compile is not None:
        check_callable(on_compile, "on_compile")
    # lax.map's curve is a saw-tooth (its remainder is planned apart); the host loop's total grows
    # with the batch (arguments, copies and outputs do; its step temp is a full chunk's once a
    # batch holds one), so it needs no extra probe
    multiple = (
        chunk_size if strategy in ("map", "chunked") and chunk_size and chunk_size > 1 else None
    )
    known = {} if known is None else known  # a calibrated search plans twice: share the points
    compiled = 0

    def largest(limit: int) -> tuple[int, dict]:
        nonlocal compiled
        stats: dict = {}
        found = search(
            f,  # planned through batch_planner: compiled, or a host loop by its HostPlan
            example_item,
            limit,
            upper,
            multiple,
            method=method,
            known=known,
            on_compile=on_compile,
            stats=stats,
            in_axes=in_axes,
        )
        compiled += stats["compiled"]
        return found

    calibration, source = None, None
    if margin == "calibrated":
        answer, curve = largest(budget.bytes)
        ratio = 1.0
        if answer == 0:
            source = "not calibrated: not even one item fits the plan"
        else:
            sizes = calibration_sizes(answer, known)
            calibration = calibrate(
                unjit(fn),
                example_item,
                sizes,
                strategy=strategy,
                chunk_size=chunk_size,
                in_axes=in_axes,
                known=known,
            )
            ratio, source = calibration.ratio, f"calibrated: {calibration.source}"
        if ratio > 1:
            first = curve
            answer, curve = largest(max(1, int(budget.bytes / ratio)))
            curve = {**first, **curve}
        margin = ratio
    elif margin is not None:
        source = "given"
        answer, curve = largest(max(1, int(budget.bytes / margin)))
    else:
        answer, curve = largest(budget.bytes)
    return BatchSizeResult(
        answer,
        budget.bytes,
        budget.source,
        strategy,
        chunk_size,
        tuple(sorted(curve.items())),
        upper,
        **(
            {
                "source": "compiled memory analysis (XLA); the margin's batches run in a fresh process"
            }
            if calibration is not None
            else {}
        ),
        compiled=compiled,
        method=method,
        margin=margin,
        margin_source=source,
        calibration=calibration,
    )


__all__ = ["STRATEGIES", "BatchSizeResult", "Budget", "default_budget", "max_batch_size"]
