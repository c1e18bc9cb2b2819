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
is the honest figure there. It is a lower bound of what a device needs.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import numpy as np

from ._checks import check_callable, check_positive_int
from ._format import format_bytes, html_table, text_table
from .live import device_memory
from .memory import MemoryEstimate, estimate_from_compiled

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
    really needs (the allocator rounds and may leave chunks unsplit;
    libraries take workspace outside XLA's plan), so leave a margin.

    On CPU, where the device keeps no statistics: ``fraction`` of the host
    memory available now (psutil).

    Example:
      >>> b = default_budget()
      >>> b.bytes > 0
      True
    """
    from ._checks import check_positive_float

    if check_positive_float(fraction, "fraction") > 1:
        raise ValueError(f"`fraction` is a share of memory in (0, 1], got fraction={fraction}.")
    stats = device_memory(device)
    if stats is not None and stats.room_bytes:
        what = "bytes_limit" if stats.bytes_limit else "pool_bytes"
        return Budget(
            int(stats.room_bytes),
            f"free device memory: {what} - bytes_in_use (jax.Device.memory_stats())",
        )
    import psutil

    available = int(psutil.virtual_memory().available)
    return Budget(int(available * fraction), f"{fraction:.0%} of available host memory (psutil)")


def planned_bytes(estimate: MemoryEstimate) -> int:
    """The figure a budget is compared with: :attr:`MemoryEstimate.planned_bytes`.

    ``max(XLA peak_memory_in_bytes, argument + output + temp - alias)`` of
    the compiled plan, in bytes: a lower bound of what a device needs (see
    :class:`batchlab.MemoryEstimate`).
    """
    return int(estimate.planned_bytes)


def batched(fn: Callable, strategy: str = "vmap", chunk_size: int | None = None) -> Callable:
    """``fn(item)`` turned into ``f(batch)`` with ``jax.vmap``, ``jax.lax.map`` or a host loop.

    ``"vmap"`` runs all items at once; ``"map"`` runs ``jax.lax.map`` with
    ``batch_size=chunk_size`` (one item at a time when ``None``);
    ``"chunked"`` is the same but requires ``chunk_size``; ``"host"`` is
    :func:`batchlab.batch`'s host loop (one jitted ``vmap`` per chunk of
    ``chunk_size``, dispatched from Python), which requires ``chunk_size``
    and is planned with its :class:`batchlab.HostPlan`, not compiled whole.
    """
    check_callable(fn)
    if strategy not in STRATEGIES:
        raise ValueError(f"`strategy` must be one of {STRATEGIES}, got {strategy!r}.")
    if strategy == "vmap":
        if chunk_size is not None:
            raise ValueError(
                f"`chunk_size`={chunk_size} has no meaning with strategy='vmap' (it batches every "
                "item at once); use strategy='chunked' to process chunk_size items at a time."
            )
        return jax.vmap(fn)
    if strategy in ("chunked", "host") and chunk_size is None:
        raise ValueError(
            f"strategy={strategy!r} needs `chunk_size` (items per chunk), e.g. chunk_size=32."
        )
    chunk = check_positive_int(chunk_size, "chunk_size", allow_none=True)
    if strategy == "host":
        from .strategies import batch

        return batch(fn, strategy="host", batch_size=chunk)
    return lambda xs: jax.lax.map(fn, xs, batch_size=chunk)


def batch_planner(f: Callable) -> Callable[[Any], int]:
    """``plan(batch_spec) -> planned bytes`` for a function of a whole batch.

    A ``strategy="host"`` function of :func:`batchlab.batch` dispatches from
    Python and cannot be compiled as one program: its :class:`batchlab.HostPlan`
    gives the figure (the largest step's temp, the chunks' input copy and
    outputs held for the concatenation, next to the arguments and output).
    Any other function is compiled (``jax.jit``) for the shapes, not run.
    """
    if getattr(f, "strategy", None) == "host" and hasattr(f, "plan"):
        return lambda spec: int(f.plan(spec).planned_bytes)
    jitted = f if hasattr(f, "lower") else jax.jit(f)
    return lambda spec: planned_bytes(estimate_from_compiled(jitted.lower(spec).compile()))


def batch_spec(example_item: Any, batch_size: int) -> Any:
    """``ShapeDtypeStruct`` pytree of a batch of ``batch_size`` items like ``example_item``."""

    def one(leaf):
        if not hasattr(leaf, "shape") or not hasattr(leaf, "dtype"):
            leaf = np.asarray(leaf)
        return jax.ShapeDtypeStruct((batch_size, *leaf.shape), leaf.dtype)

    return jax.tree_util.tree_map(one, example_item)


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

    def __repr__(self) -> str:
        return f"BatchSizeResult ({self.source})\n" + text_table(self._rows())

    def _repr_html_(self) -> str:
        return html_table(
            self._rows(), header=("figure", "value"), caption=f"max_batch_size ({self.source})"
        )

    def plot(self, *, axes=None):
        """Planned bytes against batch size, with the budget and the answer marked."""
        return plot_budget_curves([self], axes=axes)


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

    Returns:
      A :class:`BatchSizeResult`; ``int(result)`` is the answer, 0 when
      not even one item fits.

    Raises:
      TypeError: ``fn`` or ``on_compile`` is not callable, ``budget_bytes``
        is not an int, or ``known`` is not a dict.
      ValueError: ``budget_bytes`` or ``upper`` below 1, a bad strategy or
        a bad ``method``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> item = jax.ShapeDtypeStruct((256,), jnp.float32)     # 1 KiB in, 1 KiB out
      >>> r = max_batch_size(lambda x: 2 * x, item, budget_bytes=64 * 1024)
      >>> int(r), r.compilations <= 2 * 5 + 2
      (32, True)
      >>> int(max_batch_size(lambda x: 2 * x, item, budget_bytes=64 * 1024, method="bisect"))
      32
    """
    from ._checks import check_array_tree

    check_array_tree(example_item, "example_item")
    f = batched(fn, strategy, chunk_size)
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
    stats: dict = {}
    answer, curve = search(
        f,  # search plans it through batch_planner: compiled, or a host loop by its HostPlan
        example_item,
        budget.bytes,
        upper,
        multiple,
        method=method,
        known=known,
        on_compile=on_compile,
        stats=stats,
    )
    return BatchSizeResult(
        answer,
        budget.bytes,
        budget.source,
        strategy,
        chunk_size,
        tuple(sorted(curve.items())),
        upper,
        compiled=stats["compiled"],
        method=method,
    )


METHODS = ("interpolate", "bisect")
_GROW = 64  # the furthest one extrapolated step may jump: 64 x the last fitting batch


class _Plans:
    """Planned bytes per batch size of one jitted function, compiled once each.

    ``known`` may be shared between searches of the same function, item and
    strategy (an explorer keeps one per strategy): a batch size compiled
    for one budget is never compiled again for another.
    """

    def __init__(self, jitted, example_item, known, on_compile):
        self.plan, self.example_item = batch_planner(jitted), example_item
        self.known = {} if known is None else known
        self.on_compile = on_compile
        self.visited: dict[int, int] = {}
        self.compiled = 0

    def __call__(self, b: int) -> int:
        if b not in self.known:
            if self.on_compile is not None:
                self.on_compile(b)
            self.known[b] = self.plan(batch_spec(self.example_item, b))
            self.compiled += 1
        self.visited[b] = self.known[b]
        return self.known[b]


def _line(x0: int, y0: int, x1: int, y1: int, budget: int) -> int | None:
    """Where the line through (x0, y0), (x1, y1) reaches ``budget`` (floor), or None if flat."""
    if x1 == x0 or y1 <= y0:
        return None
    return x0 + math.floor((budget - y0) * (x1 - x0) / (y1 - y0))


def search(
    jitted: Callable,
    example_item: Any,
    budget_bytes: int,
    upper: int,
    multiple: int | None = None,
    *,
    method: str = "interpolate",
    known: dict[int, int] | None = None,
    on_compile: Callable[[int], None] | None = None,
    stats: dict | None = None,
) -> tuple[int, dict[int, int]]:
    """The largest batch size whose planned bytes fit; returns ``(answer, {batch: planned bytes})``.

    ``jitted`` takes a whole batch: a ``jax.jit`` function, or a
    ``strategy="host"`` function of :func:`batchlab.batch` (planned by its
    :class:`batchlab.HostPlan`; see :func:`batch_planner`).
    The search always ends on a measured pair: ``answer`` fits and
    ``answer + 1`` does not (or ``answer == upper``).

    ``method="bisect"``: double from 1 until a batch does not fit, then
    bisect (``2 * floor(log2(answer)) + 2`` compilations).
    ``method="interpolate"`` (default): planned bytes grow almost in a
    straight line with the batch, so each step aims where the line through
    the last two measured points meets the budget (extrapolating while no
    batch has failed, interpolating between the last fit and the first miss
    after), and checks the neighbour of a guess that fits. On a straight
    line that is 4 compilations whatever the answer; a bisection step
    follows every step that did not halve the bracket, so a curve that is
    far from straight costs at most about 3 compilations per halving.

    ``known``: planned bytes already measured for this function (read and
    extended; e.g. by an explorer across budgets): the search starts from
    the bracket they give, and sizes in it are not compiled again.
    ``multiple``: the chunk of a ``lax.map``; the next multiple of it above
    the answer is probed too, and the search goes on from there if it fits.
    ``on_compile(batch)`` is called before each new compilation.
    ``stats``: a dict that receives ``compiled`` (new compilations).
    """
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {METHODS}, got {method!r}.")
    plan = _Plans(jitted, example_item, known, on_compile)
    fits = lambda b: plan(b) <= budget_bytes  # noqa: E731
    answer = _search(plan, fits, budget_bytes, upper, multiple, method)
    if stats is not None:
        stats["compiled"] = plan.compiled
    return answer, plan.visited


def _search(plan, fits, budget, upper, multiple, method) -> int:
    if not multiple:
        return _largest(plan, budget, upper, method, 1)
    # lax.map plans a remainder (batch % chunk) apart: a batch just above a
    # multiple of the chunk plans MORE than the next multiple (a saw-tooth
    # curve). Search the multiples (a straight line), then the block of
    # remainders above the last multiple that fits.
    m = multiple
    q = _largest(plan, budget, upper // m, method, m)
    if q == 0:
        return _largest(plan, budget, min(upper, m - 1), method, 1)
    lo, top = q * m, min(q * m + m - 1, upper)
    if lo == top or not fits(lo + 1):
        return lo
    if fits(top):
        return top
    return _refine(plan, fits, budget, lo + 1, top, method)[0]


class _Scaled:
    """``plan`` seen in units of ``step`` batch items (the multiples of a chunk)."""

    def __init__(self, plan, step):
        self.plan, self.step = plan, step
        self.known = {b // step: p for b, p in plan.known.items() if b % step == 0}

    def __call__(self, u: int) -> int:
        return self.plan(u * self.step)


def _largest(plan, budget, upper, method, step) -> int:
    """The largest ``u <= upper`` with ``plan(u * step) <= budget`` (0 if none), neighbours measured."""
    if upper < 1:
        return 0
    plan = _Scaled(plan, step) if step > 1 else plan
    fits = lambda u: plan(u) <= budget  # noqa: E731
    known = {u: p for u, p in plan.known.items() if 1 <= u <= upper}
    fitting = sorted(u for u, p in known.items() if p <= budget)
    prev = None  # the fitting point before lo, for extrapolation
    if method == "interpolate" and fitting:  # warm start from earlier searches
        lo = fitting[-1]
        plan(lo)
        if len(fitting) > 1:
            prev = fitting[-2]
            plan(prev)
        misses = [u for u, p in known.items() if u > lo and p > budget]
        hi = min(misses) if misses else None
        if hi is not None:
            plan(hi)
    else:
        if not fits(1):
            return 0
        lo, hi = 1, None
    lo, hi, prev = _expand(plan, fits, budget, upper, lo, hi, prev, method)
    if hi is None:  # lo == upper
        return lo
    return _refine(plan, fits, budget, lo, hi, method)[0]


def _expand(plan, fits, budget, upper, lo, hi, prev, method):
    """Grows ``lo`` (fits) until a batch ``hi`` does not fit, or ``lo == upper``."""
    while hi is None:
        if lo >= upper:
            return upper, None, prev
        guess = None
        if method == "interpolate":
            if prev is None:
                guess = 2 * lo
            else:
                guess = _line(prev, plan(prev), lo, plan(lo), budget)
                guess = _GROW * lo if guess is None else min(guess, _GROW * lo)
        nxt = min(max(guess or 2 * lo, lo + 1), upper)
        if method == "bisect":
            nxt = min(2 * lo, upper)
        if not fits(nxt):
            hi = nxt
        elif method == "interpolate" and guess is not None and nxt < upper and nxt < 2 * lo:
            # aimed close to the answer: the neighbour usually settles it
            if fits(nxt + 1):
                prev, lo = lo, nxt + 1
            else:
                return nxt, nxt + 1, lo
        else:
            prev, lo = lo, nxt
    return lo, hi, prev


def _refine(plan, fits, budget, lo, hi, method):
    """Shrinks the bracket (``lo`` fits, ``hi`` does not) to neighbours."""
    bisect_next = method == "bisect"
    while hi - lo > 1:
        width = hi - lo
        if bisect_next:
            g = (lo + hi) // 2
        else:
            g = _line(lo, plan(lo), hi, plan(hi), budget)
            g = (lo + hi) // 2 if g is None else min(max(g, lo + 1), hi - 1)
        if fits(g):
            lo = g
            if not bisect_next and lo + 1 < hi:
                if fits(lo + 1):
                    lo += 1
                else:
                    hi = lo + 1
        else:
            hi = g
        bisect_next = method == "bisect" or (not bisect_next and hi - lo > width // 2)
    return lo, hi


def compilation_target(answer: int) -> int:
    """What doubling then bisection needs: ``2 * floor(log2(answer)) + 2`` compilations."""
    return 2 * math.floor(math.log2(answer)) + 2 if answer >= 1 else 1


def plot_budget_curves(
    results: list[BatchSizeResult],
    *,
    axes=None,
    labels: list[str] | None = None,
    known: list[dict[int, int]] | None = None,
):
    """Planned bytes versus batch size for several searches, with the budget line.

    Each curve is drawn from the points its search compiled (or, with
    ``known``, every point planned so far for that strategy); the answer of
    each search is ringed. For a chunked ``lax.map``, batch sizes that are
    not a multiple of the chunk plan a remainder apart: they are drawn as
    separate marks, not joined to the line. Log-log axes (base 2).
    """
    from matplotlib.ticker import FuncFormatter

    from .plots import _new_figure, log2_axis, short_bytes

    if axes is None:
        fig, axes = _new_figure(1, width=7.0, height=4.2)
    fig = axes.figure
    colors = ("tab:blue", "tab:orange", "tab:green", "tab:purple")
    styles = (("s-", 7, 3), ("o--", 5, 2), ("^-.", 5, 2), ("v:", 5, 2))
    for i, r in enumerate(results):
        label = (
            labels[i]
            if labels
            else r.strategy + (f" (chunk {r.chunk_size})" if r.chunk_size else "")
        )
        points = sorted((known[i] if known else dict(r.curve)).items())
        chunk = r.chunk_size if r.strategy != "vmap" and r.chunk_size and r.chunk_size > 1 else 0
        line = [(b, p) for b, p in points if not chunk or b % chunk == 0 or b < chunk]
        rest = [(b, p) for b, p in points if (b, p) not in line]
        color = colors[i % len(colors)]
        fmt, ms, z = styles[i % len(styles)]
        if line:
            xs, ys = zip(*line, strict=True)
            axes.plot(
                xs,
                ys,
                fmt,
                color=color,
                ms=ms,
                zorder=z,
                label=f"{label}: largest batch {r.batch_size}",
            )
        if rest:
            xs, ys = zip(*rest, strict=True)
            axes.plot(
                xs,
                ys,
                "x",
                color=color,
                ms=8,
                mew=2,
                zorder=z,
                label=f"{label}: batch % {chunk} != 0 (remainder planned apart)",
            )
        if r.planned_bytes is not None:
            axes.plot([r.batch_size], [r.planned_bytes], "o", ms=14, mfc="none", mec=color, mew=2)
    axes.plot([], [], "o", ms=12, mfc="none", mec="black", mew=2, label="answer (ringed)")
    budgets = sorted({r.budget_bytes for r in results})
    for b in budgets:
        axes.axhline(b, color="red", ls="--", lw=1.5)
    axes.text(
        0.01,
        budgets[-1],
        f" budget {format_bytes(budgets[-1])}",
        color="red",
        ha="left",
        va="bottom",
        transform=axes.get_yaxis_transform(),
    )
    log2_axis(axes, "x")
    axes.set_yscale("log", base=2)
    axes.yaxis.set_major_formatter(FuncFormatter(short_bytes))
    axes.set_xlabel("batch size (items, log2 axis)")
    axes.set_ylabel("planned bytes (log2 axis)")
    axes.set_title("planned bytes per batch (XLA compiled memory analysis)")
    axes.grid(True, alpha=0.3)
    axes.legend(loc="lower right", fontsize=9)
    return fig


SCHEDULING_HOLDS = (
    "holds only at compile time, and only where XLA's scheduler minimizes memory: XLA can pick the "
    "instruction order with the lowest peak (its memory-minimizing scheduler; XLA:CPU's default, "
    "tuned for concurrency, keeps the written order \u2014 notebook 08 measures both); at run time "
    "nothing in JAX waits for memory \u2014 a failing allocation raises RESOURCE_EXHAUSTED \u2014 so "
    "scheduling batches by memory is the caller's job (max_batch_size, run_batches)."
)


def scheduling_verdict(error: BaseException | None, seconds: float) -> tuple[str, str]:
    """Seed 000 #3 ("batches are scheduled when resources are available"), from one measurement.

    ``error`` is what a call asking for more memory than the device has
    raised (``None`` if it ran), ``seconds`` how long the call took to
    fail. The verdict is the same text in notebooks 06, 07 and 08 when the
    measurement shows JAX raising ``RESOURCE_EXHAUSTED`` at once (under a
    second: nothing waited for memory); otherwise it says what was seen.

    Returns:
      ``(verdict, deciding number)``.

    Example:
      >>> import jax
      >>> v, n = scheduling_verdict(jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory"), 0.002)
      >>> v.startswith("holds only at compile time"), n
      (True, 'RESOURCE_EXHAUSTED raised after 2.00 ms (no wait for memory)')
    """
    from ._format import format_seconds

    raised = error is not None and "RESOURCE_EXHAUSTED" in str(error)
    if raised and seconds < 1.0:
        return SCHEDULING_HOLDS, (
            f"RESOURCE_EXHAUSTED raised after {format_seconds(seconds)} (no wait for memory)"
        )
    if error is None:
        return (
            "not measured in this run: the oversized call did not fail",
            f"ran in {format_seconds(seconds)}",
        )
    return (
        "not decided in this run: the call failed, but not at once with RESOURCE_EXHAUSTED",
        f"{type(error).__name__} after {format_seconds(seconds)}",
    )


__all__ = [
    "SCHEDULING_HOLDS",
    "BatchSizeResult",
    "Budget",
    "batched",
    "default_budget",
    "max_batch_size",
    "planned_bytes",
    "scheduling_verdict",
]
