"""The largest batch that fits a memory budget, from XLA's compiled plans (nothing runs), and
its plot: planned bytes against batch size, with the budget line (06)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import psutil
from matplotlib.ticker import FuncFormatter

from batchlab._util.backend import device_label
from batchlab._util.checks import (
    check_array_tree,
    check_callable,
    check_choice,
    check_positive_int,
)
from batchlab._util.format import Rows, format_bytes
from batchlab._util.plotting import log2_axis, new_figure, short_bytes
from batchlab.batching.strategies import PLANNED, batch
from batchlab.measuring.live import device_memory
from batchlab.measuring.plan import batch_args, batch_planner, unjit
from batchlab.runs.calibration import Calibration, calibrate, calibration_sizes, warm_up
from batchlab.runs.search import METHODS, NO_ROOM, backend_tiles, largest_fitting


class Budget(NamedTuple):
    """A memory budget in bytes and where the figure came from."""

    bytes: int
    source: str

    def __repr__(self) -> str:
        return f"Budget({format_bytes(self.bytes)}; source: {self.source})"


def default_budget() -> Budget:
    """The memory a batch may plan to use here: a device's free memory (``memory_stats()``),
    on CPU half the host memory available now (psutil).

    Returns:
      A :class:`Budget` ``(bytes, source)``: the figure and where it came from.
    """
    stats = device_memory()
    if stats is not None and stats.room_bytes is not None:
        what = "bytes_limit" if stats.bytes_limit else "pool_bytes"
        source = f"free device memory: {what} - bytes_in_use (jax.Device.memory_stats())"
        return Budget(int(stats.room_bytes), source)
    available = int(psutil.virtual_memory().available)
    return Budget(available // 2, "50% of available host memory (psutil)")


@dataclass(frozen=True)
class BatchSizeResult(Rows):
    """What :func:`max_batch_size` found; ``int(result)`` is the batch size, ``curve`` the
    ``(batch_size, planned_bytes)`` the search looked at, ``compilations`` the new ones,
    ``no_room`` the sizes whose compile ran out of device memory (XLA:TPU raises there)."""

    batch_size: int
    budget_bytes: int
    budget_source: str
    strategy: str
    chunk_size: int | None
    curve: tuple[tuple[int, int], ...]
    upper: int
    compilations: int
    method: str
    margin: float | None
    margin_source: str | None
    calibration: Calibration | None
    no_room: tuple[int, ...] = ()

    @property
    def planned_budget_bytes(self) -> int:
        """The figure the plan was compared with: the budget, divided by ``margin`` if any."""
        return max(1, int(self.budget_bytes / self.margin)) if self.margin else self.budget_bytes

    @property
    def planned_bytes(self) -> int | None:
        """The planned bytes at ``batch_size`` (None where no size fits)."""
        return dict(self.curve).get(self.batch_size)

    @property
    def monotone(self) -> bool:
        """Whether the planned bytes never drop as the batch grows."""
        return all(a <= b for (_, a), (_, b) in itertools.pairwise(self.curve))

    @property
    def capped(self) -> bool:
        """Whether the search stopped at ``upper`` rather than at the budget."""
        return self.batch_size == self.upper

    def __int__(self) -> int:
        return self.batch_size

    __index__ = __int__

    def _rows(self) -> list[tuple[str, str]]:
        chunk = f" (chunk_size={self.chunk_size})" if self.chunk_size else ""
        earlier = len(self.curve) - self.compilations
        more = f"; {earlier} more sizes planned earlier)" if earlier > 0 else ")"
        rows = [
            ("largest batch", f"{self.batch_size}{' (capped by `upper`)' if self.capped else ''}"),
            ("planned bytes there", format_bytes(self.planned_bytes)),
            ("budget", f"{format_bytes(self.budget_bytes)} ({self.budget_source})"),
        ]
        if self.margin is not None:
            compared = f"budget / margin = {format_bytes(self.planned_budget_bytes)}"
            rows += [("margin", f"{self.margin:.2f}x ({self.margin_source})")]
            rows += [("plan compared with", compared)]
        rows += [
            ("strategy", self.strategy + chunk),
            ("compilations", f"{self.compilations} ({self.method} search{more}"),
        ]
        if self.no_room:
            sizes = ", ".join(map(str, self.no_room))
            rows.append(("out of memory compiling", f"batch {sizes} (counted as not fitting)"))
        if not self.monotone:
            rows.append(("warning", "planned bytes are not monotone in the batch size"))
        return rows

    def _title(self) -> str:
        ran = ", nothing executed"
        if self.calibration is not None:
            ran = f"; the margin's batches run {self.calibration.where}"
        return f"max_batch_size (compiled memory analysis (XLA){ran})"


def check_in_axes(in_axes: Any, example_item: Any) -> None:
    """``in_axes`` is 0, or a tuple of 0/None (one 0 at least) matching a tuple ``example_item``."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,)
    tuple_ = isinstance(example_item, tuple)
    same = axes is not in_axes or (tuple_ and len(example_item) == len(axes))
    if not (same and all(a is None or (type(a) is int and a == 0) for a in axes) and 0 in axes):
        got = f"a tuple of {len(example_item)}" if tuple_ else type(example_item).__name__
        raise ValueError(
            f"`in_axes` must be 0 or a tuple of 0 (batched, one at least) and None (shared), one "
            f"per argument in the tuple `example_item`; got in_axes={in_axes!r} and `example_item` "
            f"{got}. E.g. in_axes=(0, None), example_item=(x_item, weights) for fn(x, weights)."
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
    margin: str | None = None,
) -> BatchSizeResult:
    """The largest batch of ``batch(fn, strategy=...)`` whose planned memory fits ``budget_bytes``
    (default :func:`default_budget`): the answer fits, the answer + 1 does not.

    Args:
      fn: a function of ONE item; example_item: one item (arrays or ``ShapeDtypeStruct``).
      upper: the largest batch size worth trying (e.g. the dataset size).
      method: ``"interpolate"`` (aims along the curve) or ``"bisect"`` (doubling, then bisection).
      known: ``{batch: planned bytes}`` of earlier searches of the SAME fn, item and strategy;
        read and extended, so no size is compiled twice.
      on_compile: called with the batch size before each compilation.
      in_axes: as in ``jax.vmap``, 0 or a tuple of 0 and None (shared) per argument.
      margin: ``"calibrated"`` compares with ``budget / ratio``, the plan-to-real ratio measured
        (:func:`calibrate`); one that observed nothing says "uncalibrated" (ratio 1.0). A batch
        whose compile runs out of device memory (XLA:TPU) does not fit (``no_room``).

    Example:
      >>> import jax, jax.numpy as jnp
      >>> item = jax.ShapeDtypeStruct((256,), jnp.float32)     # 1 KiB in, 1 KiB out
      >>> r = max_batch_size(lambda x: 2 * x, item, budget_bytes=64 * 1024)
      >>> int(r), r.compilations <= 2 * 5 + 2
      (32, True)

      Closed-over weights and shared arguments plan alike (both are arguments):

      >>> W = jax.ShapeDtypeStruct((256, 256), jnp.float32)  # 256 KiB, shared by every item
      >>> int(max_batch_size(lambda x, w: x @ w, (item, W), in_axes=(0, None),
      ...                    budget_bytes=512 * 1024))
      128

    Returns:
      A :class:`BatchSizeResult`: an ``int`` (the answer, 0 when not one item fits) with the
      plans it compiled, their count, the budget and the margin used.

    Raises:
      ValueError: ``example_item`` holds no array, an unknown ``strategy`` or ``method``, or an
        ``in_axes`` that does not fit it.
      TypeError: ``fn`` is not callable, or ``margin`` / ``chunk_size`` of the wrong type.
    """
    check_array_tree(example_item, "example_item")
    if not jax.tree_util.tree_leaves(example_item):
        raise ValueError(f"`example_item` holds no array ({example_item=}): pass one item, e.g. "
                         "jax.ShapeDtypeStruct((256,), jnp.float32).")  # fmt: skip
    check_choice(strategy, "strategy", PLANNED)
    check_in_axes(in_axes, example_item)
    if not (margin is None or (isinstance(margin, str) and margin == "calibrated")):
        raise (ValueError if isinstance(margin, str) else TypeError)(
            f"`margin` must be None or 'calibrated' (the plan-to-real ratio measured in a fresh "
            f"process), got margin={margin!r}; to plan against a budget divided by a ratio of "
            f"your own, pass budget_bytes=int(budget / ratio)."
        )
    if margin == "calibrated":
        warm_up()
    f = batch(unjit(fn), strategy=strategy, chunk_size=chunk_size, in_axes=in_axes)
    budget_bytes = check_positive_int(budget_bytes, "budget_bytes", allow_none=True)
    budget = default_budget() if budget_bytes is None else Budget(budget_bytes, "given")
    upper = 2**31 - 1 if upper is None else check_positive_int(upper, "upper")
    check_choice(method, "method", METHODS)
    if known is not None and not isinstance(known, dict):
        raise TypeError(
            f"`known` must be a dict {{batch size: planned bytes}} (or None), got "
            f"{type(known).__name__}."
        )
    if on_compile is not None:
        check_callable(on_compile, "on_compile")
    known = {} if known is None else known  # a calibrated search plans twice: share the points
    before = len(known)
    # lax.map plans a remainder apart, and XLA:TPU pads to tiles: the plans are a staircase,
    # searched along the multiples of the chunk (or the tiles) first
    tiles = backend_tiles() if method == "interpolate" else ()
    if strategy in ("map", "chunked") and (chunk_size or 0) > 1:
        tiles = (chunk_size,)
    planner = batch_planner(f)

    def largest(limit: int) -> tuple[int, dict]:
        plan_of = lambda b: planner(*batch_args(example_item, b, in_axes))  # noqa: E731
        return largest_fitting(plan_of, limit, upper, tiles, method, known, on_compile)

    answer, curve = largest(budget.bytes)
    calibration, source = None, None
    if margin == "calibrated":
        margin, source = 1.0, "uncalibrated: not even one item fits the plan"
        if answer:
            sizes = calibration_sizes(answer, known)
            kw = dict(strategy=strategy, chunk_size=chunk_size, in_axes=in_axes, known=known)
            calibration = calibrate(unjit(fn), example_item, sizes, **kw)
            done = "calibrated" if calibration.observed else "uncalibrated"
            margin, source = calibration.ratio, f"{done}: {calibration.source}"
        if margin > 1:
            answer, again = largest(max(1, int(budget.bytes / margin)))
            curve = {**curve, **again}
    no_room = tuple(sorted(b for b, p in curve.items() if p == NO_ROOM))
    curve = tuple(sorted((b, p) for b, p in curve.items() if p != NO_ROOM))
    found = (answer, budget.bytes, budget.source, strategy, chunk_size, curve, upper)
    return BatchSizeResult(
        *found, len(known) - before, method, margin, source, calibration, no_room
    )


_COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:purple")
_STYLES = (("s-", 7, 3), ("o--", 5, 2), ("^-.", 5, 2), ("v:", 5, 2))


def plot_budget_curves(results: list):
    """Planned bytes versus batch size of :func:`batchlab.max_batch_size` results: each mark one
    compiled batch size, each answer ringed, a chunk's remainder sizes as crosses, the budget as a
    red line (in the legend too); log2 axes, labels sized for a projector."""
    axes = new_figure(1, width=7.0, height=4.6)[1]
    for i, r in enumerate(results):
        label = r.strategy + (f" (chunk {r.chunk_size})" if r.chunk_size else "")
        points = sorted(r.curve)
        chunk = r.chunk_size if r.strategy != "vmap" and r.chunk_size and r.chunk_size > 1 else 0
        line = [(b, p) for b, p in points if not chunk or b % chunk == 0 or b < chunk]
        rest = [(b, p) for b, p in points if (b, p) not in line]
        color, (fmt, ms, z) = _COLORS[i % len(_COLORS)], _STYLES[i % len(_STYLES)]
        if line:
            kw = dict(color=color, ms=ms, zorder=z, label=f"{label}: largest batch {r.batch_size}")
            axes.plot(*zip(*line, strict=True), fmt, **kw)
        if rest:
            kw = dict(color=color, ms=8, mew=2, zorder=z)
            kw["label"] = f"{label}: a remainder (batch % {chunk} != 0)"
            axes.plot(*zip(*rest, strict=True), "x", **kw)
        if r.planned_bytes is not None:
            axes.plot([r.batch_size], [r.planned_bytes], "o", ms=14, mfc="none", mec=color, mew=2)
    axes.plot([], [], "o", ms=12, mfc="none", mec="black", mew=2, label="largest batch (ringed)")
    budgets = sorted({r.budget_bytes for r in results})
    for b in budgets:
        axes.axhline(b, color="red", ls="--", lw=1.5)
    shown = ", ".join(format_bytes(b) for b in budgets)
    axes.plot([], [], color="red", ls="--", lw=1.5, label=f"budget {shown}")
    log2_axis(axes, "x")
    axes.set_yscale("log", base=2)
    axes.yaxis.set_major_formatter(FuncFormatter(short_bytes))
    axes.set_xlabel("batch size (items, log2 scale)")
    axes.set_ylabel("planned bytes (log2 scale)")
    axes.set_title(
        f"each mark: one batch size the search compiled\n"
        f"(XLA's compiled memory analysis, {device_label()})"
    )
    axes.grid(True, alpha=0.3)
    axes.legend(loc="best", fontsize=11)  # where it covers the fewest marks (a TPU's curves differ)
    return axes.figure
